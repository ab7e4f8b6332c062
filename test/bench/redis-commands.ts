import type { Redis } from 'ioredis';

/** Calls so far of each Redis command, by name (INFO commandstats: `get`, `evalsha`, ...). */
export async function redisCommandCalls(redis: Redis): Promise<Map<string, number>> {
  const stats = await redis.info('commandstats');
  return new Map([...stats.matchAll(/cmdstat_(\w+):calls=(\d+)/g)].map((m) => [m[1] ?? '', Number(m[2])]));
}

/**
 * Calls per request of each command between two readings, most called first.
 * The readings' own INFO and commands seldom called (a heartbeat) are left out.
 */
export function commandsPerRequest(
  before: ReadonlyMap<string, number>,
  after: ReadonlyMap<string, number>,
  answered: number,
): [command: string, perRequest: number][] {
  return [...after]
    .map(([cmd, n]): [string, number] => [cmd, (n - (before.get(cmd) ?? 0)) / Math.max(1, answered)])
    .filter(([cmd, n]) => n > 0.005 && cmd !== 'info')
    .sort((a, b) => b[1] - a[1]);
}

/** `get 2.02, set 1.01, ...` */
export const commandsLine = (commands: readonly (readonly [string, number])[]): string =>
  commands.map(([cmd, n]) => `${cmd} ${n.toFixed(2)}`).join(', ');
