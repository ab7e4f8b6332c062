import type { RedisConnection } from './connect.js';
import { defineScripts, type ScriptName, type ScriptRunner } from './scripts.js';

/** A model's override as stored: its id, config text and files (`<version>/<name>` → bytes). */
export interface StoredOverride {
  readonly id: string;
  readonly config: string;
  readonly files: ReadonlyMap<string, Uint8Array>;
}

/**
 * Models pushed through the load API (Triton's `config` and `file:`
 * parameters), kept in Redis so that every service on every host loads the
 * same model: the repository volume may be read-only, and workers on other
 * machines have their own copy of it. One hash per model (script
 * set-model-override); its key shares the registry's hash tag.
 */
export class ModelOverrides {
  private readonly scripts: Record<ScriptName, ScriptRunner>;

  constructor(
    private readonly redis: RedisConnection,
    private readonly namespace: string,
  ) {
    this.scripts = defineScripts(redis);
  }

  private key(model: string): string {
    return `{${this.namespace}}:override:${model}`;
  }

  /** Store a model's override, replacing any earlier one. */
  async put(model: string, o: StoredOverride): Promise<void> {
    const files = [...o.files].flatMap(([path, bytes]) => [`file:${path}`, Buffer.from(bytes)]);
    await this.scripts['set-model-override']([this.key(model)], [o.id, o.config, ...files]);
  }

  /** Remove a model's override: it is read from the repository again. */
  async clear(model: string): Promise<void> {
    await this.scripts['set-model-override']([this.key(model)], ['']);
  }

  /** The model's override, or undefined when it has none. */
  async get(model: string): Promise<StoredOverride | undefined> {
    const h = await this.redis.hgetallBuffer(this.key(model));
    const id = h.id?.toString('utf8');
    if (!id) return undefined;
    const files = new Map<string, Uint8Array>();
    for (const [field, value] of Object.entries(h)) {
      if (field.startsWith('file:')) files.set(field.slice('file:'.length), value);
    }
    return { id, config: h.config?.toString('utf8') ?? '', files };
  }
}
