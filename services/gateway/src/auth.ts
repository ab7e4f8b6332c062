import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { MeshError } from '@ge-mesh/protocol';
import type { ModelStates } from './model-states.js';

/**
 * API keys, checked the same way on REST and AMQP.
 *
 * Where keys come from: `--api-keys` (GEMESH_API_KEYS, entries separated by
 * ';' or newlines) and/or `--api-keys-file` (one entry per line, '#'
 * comments). An entry is
 *
 *     <key> [models=<model>,<model>...|*] [admin]
 *
 * `models` limits the key to those models (default: every model); `admin`
 * marks a key allowed to change the repository (load/unload). A key is 16 or
 * more characters of [A-Za-z0-9._~+/=-]. With no key configured, auth is off.
 *
 * Per model, config.pbtxt may set `parameters { key: "gemesh_auth" value: {
 * string_value: "none" } }` to serve that model without a key while auth is on
 * ("required", the default, keeps it protected).
 *
 * Everything is checked at startup: a malformed entry, a duplicate key, a
 * model that is not in the repository or a bad gemesh_auth value stops the
 * gateway with a message naming the source and line.
 *
 * Health endpoints never need a key. Keys are held as SHA-256 digests and
 * looked up by the digest of what the client sent, so comparing takes the
 * same time whatever the key.
 */
export interface Principal {
  /** The models this key may use: every model, or a set. */
  readonly models: '*' | ReadonlySet<string>;
  readonly admin: boolean;
  /** Where the key was defined (e.g. "keys.txt:3"), for logs; never the key. */
  readonly source: string;
}

export interface ApiKeyEntry extends Principal {
  readonly key: string;
}

export const AUTH_PARAMETER = 'gemesh_auth';
const KEY = /^[A-Za-z0-9._~+/=-]{16,}$/;

export class AuthConfigError extends Error {
  override name = 'AuthConfigError';
}

/** Parses key entries; `separator` splits entries (newlines for a file, also ';' inline). */
export function parseApiKeys(text: string, sourceName: string, separator: RegExp): ApiKeyEntry[] {
  const entries: ApiKeyEntry[] = [];
  text.split(separator).forEach((raw, i) => {
    const line = raw.replace(/#.*$/, '').trim();
    if (line === '') return;
    const source = `${sourceName}:${i + 1}`;
    const [key, ...options] = line.split(/\s+/) as [string, ...string[]];
    if (!KEY.test(key)) {
      throw new AuthConfigError(
        `${source}: an API key must be at least 16 characters of letters, digits and . _ ~ + / = -`,
      );
    }
    let models: '*' | Set<string> = '*';
    let admin = false;
    for (const opt of options) {
      if (opt === 'admin') admin = true;
      else if (opt.startsWith('models=')) {
        const list = opt.slice('models='.length);
        models = list === '*' ? '*' : new Set(list.split(',').filter((m) => m !== ''));
        if (models !== '*' && models.size === 0) throw new AuthConfigError(`${source}: models= lists no model`);
      } else {
        throw new AuthConfigError(`${source}: unknown option '${opt}'; use models=<model>,<model> or admin`);
      }
    }
    entries.push({ key, models, admin, source });
  });
  return entries;
}

export class Authorizer {
  private readonly byDigest = new Map<string, Principal>();

  private constructor(
    entries: readonly ApiKeyEntry[],
    private readonly states: ModelStates,
  ) {
    for (const e of entries) this.byDigest.set(digest(e.key), { models: e.models, admin: e.admin, source: e.source });
  }

  /** Reads and checks the keys and every model's gemesh_auth; throws AuthConfigError. */
  static async load(
    options: { apiKeys: string; apiKeysFile: string },
    states: ModelStates,
    readText: (path: string) => Promise<string> = (p) => readFile(p, 'utf8'),
  ): Promise<Authorizer> {
    const entries = parseApiKeys(options.apiKeys, '--api-keys', /[;\n]/);
    if (options.apiKeysFile !== '') {
      let text: string;
      try {
        text = await readText(options.apiKeysFile);
      } catch (err) {
        throw new AuthConfigError(`--api-keys-file: cannot read ${options.apiKeysFile}: ${(err as Error).message}`);
      }
      entries.push(...parseApiKeys(text, options.apiKeysFile, /\n/));
    }
    const seen = new Map<string, string>();
    for (const e of entries) {
      const d = digest(e.key);
      const first = seen.get(d);
      if (first) throw new AuthConfigError(`${e.source}: the same API key is already defined at ${first}`);
      seen.set(d, e.source);
      if (e.models === '*') continue;
      for (const m of e.models) {
        if (!states.model(m)) {
          throw new AuthConfigError(
            `${e.source}: model '${m}' is not in the model repository (known: ${states.names().join(', ') || 'none'})`,
          );
        }
      }
    }
    for (const name of states.names()) {
      const v = authParameter(states, name);
      if (v !== undefined && v !== 'none' && v !== 'required') {
        throw new AuthConfigError(
          `model '${name}': parameter ${AUTH_PARAMETER} is '${v}'; use "required" (the default) or "none"`,
        );
      }
      if (v === 'required' && entries.length === 0) {
        throw new AuthConfigError(
          `model '${name}' sets ${AUTH_PARAMETER}: "required" but the gateway has no API key; give --api-keys or --api-keys-file`,
        );
      }
    }
    return new Authorizer(entries, states);
  }

  /** Whether any key is configured (auth on). */
  get enabled(): boolean {
    return this.byDigest.size > 0;
  }

  get keyCount(): number {
    return this.byDigest.size;
  }

  /** The principal of an `Authorization: Bearer <key>` value; null when absent or unknown. */
  authenticate(authorization: string | undefined): Principal | null {
    if (authorization === undefined) return null;
    const m = /^\s*bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!m?.[1]) return null;
    return this.byDigest.get(digest(m[1])) ?? null;
  }

  /**
   * Allows or refuses a request: with auth on, a valid key is needed (401),
   * and for a model, one that may use it (403) unless the model is public.
   * A key limited to other models gets 403 whether or not the model exists,
   * so model names do not leak. Returns the principal (undefined when auth
   * is off or the model is public and no key was sent).
   */
  check(authorization: string | undefined, model?: string): Principal | undefined {
    if (!this.enabled) return undefined;
    const principal = this.authenticate(authorization);
    if (model !== undefined && authParameter(this.states, model) === 'none') return principal ?? undefined;
    if (!principal) {
      throw new MeshError('UNAUTHENTICATED', "a valid API key is required; send it as 'Authorization: Bearer <key>'");
    }
    if (model !== undefined && !grants(principal, model)) {
      throw new MeshError('FORBIDDEN', `this API key may not use model '${model}'`);
    }
    return principal;
  }

  /** Whether a listing (stats, index) may show a model to this caller. */
  canSee(principal: Principal | undefined, model: string): boolean {
    if (!this.enabled || authParameter(this.states, model) === 'none') return true;
    return principal !== undefined && grants(principal, model);
  }

  /** For repository control: a valid key with the admin flag (401 / 403). */
  requireAdmin(authorization: string | undefined): Principal | undefined {
    const principal = this.check(authorization);
    if (principal && !principal.admin) throw new MeshError('FORBIDDEN', 'this API key may not change the repository');
    return principal;
  }
}

function grants(p: Principal, model: string): boolean {
  return p.models === '*' || p.models.has(model);
}

function authParameter(states: ModelStates, model: string): string | undefined {
  return states.model(model)?.config.parameters.get(AUTH_PARAMETER);
}

function digest(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}
