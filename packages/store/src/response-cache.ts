import type { RedisConnection } from './connect.js';
import { defineScripts, type ScriptName, type ScriptRunner } from './scripts.js';

export interface ResponseCacheOptions {
  /** Most bytes of responses the namespace's cache holds; least recently used entries go first. */
  readonly maxBytes: number;
  /** How long an entry may be used after it was stored, ms. */
  readonly ttlMs: number;
}

/**
 * Triton's response cache, shared by every gateway of a namespace through
 * Redis (scripts cache-get and cache-put): entries keyed by a hash of the
 * model, version, inputs and requested outputs, each living `ttlMs`, the
 * whole cache held under `maxBytes` by evicting the least recently used.
 * All its keys share the `{<ns>:cache}` hash tag (one Cluster slot).
 */
export class ResponseCache {
  private readonly scripts: Record<ScriptName, ScriptRunner>;
  private readonly keys: string[];

  constructor(
    private readonly redis: RedisConnection,
    namespace: string,
    readonly options: ResponseCacheOptions,
  ) {
    this.scripts = defineScripts(redis, 'buffers');
    const tag = `{${namespace}:cache}`;
    this.keys = [`${tag}:entries`, `${tag}:meta`, `${tag}:lru`, `${tag}:bytes`];
  }

  /** The response stored under `key`, or null. */
  async get(key: string, now = Date.now()): Promise<Buffer | null> {
    const v = await this.scripts['cache-get'](this.keys, [key, now]);
    return Buffer.isBuffer(v) ? v : null;
  }

  /** Store a response; false when it is larger than the whole cache. `evicted`: entries removed for room. */
  async put(key: string, value: Buffer, now = Date.now()): Promise<{ stored: boolean; evicted: number }> {
    const [stored, evicted] = (await this.scripts['cache-put'](this.keys, [
      key,
      value,
      now,
      this.options.ttlMs,
      this.options.maxBytes,
    ])) as [number, number];
    return { stored: stored === 1, evicted };
  }

  /** Bytes the cache holds now. */
  async bytes(): Promise<number> {
    const [, , , bytesKey] = this.keys;
    return Number((await this.redis.get(bytesKey as string)) ?? 0);
  }
}
