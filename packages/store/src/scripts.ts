import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';

/**
 * Every Redis state change is one named Lua script in ../lua (header: KEYS,
 * ARGV, return codes). They are registered with ioredis' defineCommand, which
 * sends EVALSHA and falls back to EVAL after a NOSCRIPT.
 */
export const SCRIPT_NAMES = [
  'admit-request-1',
  'leave-queue-1',
  'create-batch-2',
  'set-batch-state-1',
  'start-batch-1',
  'finish-batch-2',
  'expire-request-1',
  'lead-model-1',
  'reclaim-request-1',
  'fail-batch-1',
  'claim-devices-1',
  'heartbeat-worker-1',
  'release-worker-1',
  'set-model-control-1',
] as const;
export type ScriptName = (typeof SCRIPT_NAMES)[number];

const luaDir = fileURLToPath(new URL('../lua/', import.meta.url));

export function scriptSource(name: ScriptName): string {
  return readFileSync(`${luaDir}${name}.lua`, 'utf8');
}

export type ScriptRunner = (keys: string[], args: (string | number | Buffer)[]) => Promise<unknown>;

export function defineScripts(redis: Redis): Record<ScriptName, ScriptRunner> {
  const runners = {} as Record<ScriptName, ScriptRunner>;
  for (const name of SCRIPT_NAMES) {
    const command = name.replace(/-(\w)/g, (_, c: string) => c.toUpperCase());
    redis.defineCommand(command, { lua: scriptSource(name) });
    const fn = (redis as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[command];
    if (!fn) throw new Error(`script ${name} was not registered`);
    runners[name] = (keys, args) => fn.call(redis, keys.length, ...keys, ...args);
  }
  return runners;
}
