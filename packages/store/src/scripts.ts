import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { hashTag, type RedisConnection } from './connect.js';

/**
 * Every Redis state change is one named Lua script in ../lua (header: KEYS,
 * ARGV, return codes). They are registered with ioredis' defineCommand, which
 * sends EVALSHA and falls back to EVAL after a NOSCRIPT (on a Cluster, per node).
 */
export const SCRIPT_NAMES = [
  'admit-request',
  'leave-queue',
  'create-batch',
  'set-batch-state',
  'start-batch',
  'finish-batch',
  'store-request-body',
  'expire-request',
  'lead-model',
  'reclaim-request',
  'fail-batch',
  'claim-devices',
  'heartbeat-worker',
  'release-worker',
  'set-model-control',
  'set-model-override',
  'cache-get',
  'cache-put',
] as const;
export type ScriptName = (typeof SCRIPT_NAMES)[number];

const luaDir = fileURLToPath(new URL('../lua/', import.meta.url));

/**
 * `--- @include "<path>"` on a line of its own (BullMQ's form) is replaced by
 * ../lua/<path>.lua, so a rule several scripts share is written once; Redis
 * runs each script as one self-contained source.
 */
const INCLUDE = /^--- @include "([^"]+)"[ \t]*$/gm;

function expand(path: string, included: Set<string>, stack: readonly string[]): string {
  if (stack.includes(path)) throw new Error(`lua include cycle: ${[...stack, path].join(' -> ')}`);
  const text = readFileSync(`${luaDir}${path}.lua`, 'utf8');
  return text.replace(INCLUDE, (_, inc: string) => {
    // Once per script: a second copy would redefine its locals.
    if (included.has(inc)) return '';
    included.add(inc);
    return expand(inc, included, [...stack, path]);
  });
}

const sources = new Map<ScriptName, string>();

/** A script's source as Redis runs it, includes expanded. */
export function scriptSource(name: ScriptName): string {
  let src = sources.get(name);
  if (src === undefined) {
    src = expand(name, new Set(), []);
    sources.set(name, src);
  }
  return src;
}

/**
 * Refuse a call whose keys do not share one hash tag. A Cluster runs a script
 * on the node of its keys' slot and refuses keys of two slots (CROSSSLOT);
 * checking here makes a single-node Redis refuse the same calls, so a key
 * layout mistake shows up in every test rather than only on a Cluster.
 */
function assertOneSlot(name: ScriptName, keys: readonly string[]): void {
  const first = keys[0];
  if (first === undefined) return;
  const tag = hashTag(first);
  for (const k of keys) {
    if (hashTag(k) !== tag) throw new Error(`script ${name}: keys of different hash slots (${first}, ${k})`);
  }
}

export type ScriptRunner = (keys: string[], args: (string | number | Buffer)[]) => Promise<unknown>;

/** `replies: 'buffers'`: bulk replies come back as Buffers (binary values), not UTF-8 strings. */
export function defineScripts(
  redis: RedisConnection,
  replies: 'strings' | 'buffers' = 'strings',
): Record<ScriptName, ScriptRunner> {
  const runners = {} as Record<ScriptName, ScriptRunner>;
  for (const name of SCRIPT_NAMES) {
    const command = name.replace(/-(\w)/g, (_, c: string) => c.toUpperCase());
    redis.defineCommand(command, { lua: scriptSource(name) });
    // defineCommand adds `<command>Buffer`, the same script with Buffer replies.
    const fn = (redis as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[
      replies === 'buffers' ? `${command}Buffer` : command
    ];
    if (!fn) throw new Error(`script ${name} was not registered`);
    runners[name] = async (keys, args) => {
      assertOneSlot(name, keys);
      return fn.call(redis, keys.length, ...keys, ...args);
    };
  }
  return runners;
}
