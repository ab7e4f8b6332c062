import { Cluster, type ClusterNode, Redis } from 'ioredis';

/**
 * A connection to one Redis node or to a Redis Cluster. Both answer the
 * same commands; only their `duplicate()` signatures differ, so this states
 * the common no-argument form (TypeScript cannot call it through the union).
 */
export type RedisConnection = (Redis | Cluster) & { duplicate(): RedisConnection };

/** What a cluster URL names: its seed nodes (the rest of the cluster is discovered) and credentials. */
export interface ClusterUrl {
  nodes: { host: string; port: number }[];
  username?: string;
  password?: string;
  tls: boolean;
}

const CLUSTER_URL = /^(rediss?)\+cluster:\/\/(?:([^@/]*)@)?([^/?#]+)\/?$/;

/**
 * Parse `redis+cluster://[user:password@]host1:port1,host2:port2,...` (or
 * `rediss+cluster://` for TLS); null for any other URL. One reachable seed
 * node is enough; listing several lets a service start while one is down.
 */
export function parseClusterUrl(url: string): ClusterUrl | null {
  const m = CLUSTER_URL.exec(url);
  if (!m) return null;
  const [, scheme, auth, hosts] = m;
  const nodes = (hosts ?? '').split(',').map((hp) => {
    // host:port, [v6]:port or a bare host (port 6379).
    const n = /^(?:\[([^\]]+)\]|([^:[\]]+))(?::(\d+))?$/.exec(hp.trim());
    const host = n?.[1] ?? n?.[2];
    if (!n || !host) throw new Error(`invalid node '${hp}' in Redis cluster URL`);
    return { host, port: n[3] ? Number(n[3]) : 6379 };
  });
  const out: ClusterUrl = { nodes, tls: scheme === 'rediss' };
  if (auth) {
    const colon = auth.indexOf(':');
    const user = decodeURIComponent(colon < 0 ? auth : auth.slice(0, colon));
    if (user) out.username = user;
    if (colon >= 0) out.password = decodeURIComponent(auth.slice(colon + 1));
  }
  return out;
}

/**
 * Open a Redis connection: an ioredis `Redis` for `redis://` and `rediss://`
 * URLs, an ioredis `Cluster` for `redis+cluster://` and `rediss+cluster://`.
 * Services wait out a Redis restart rather than fail requests early (3
 * retries of a command across reconnects).
 *
 * No auto-pipelining: ioredis builds a Pipeline for every tick's flush and
 * copies each defined script onto it (two properties per script, ~40 here),
 * which costs more than the writes it would save, since the services seldom
 * send two commands in one tick. Side by side on tiny (compare-revisions.ts),
 * without it: 10 % less CPU per request over the whole mesh and 10–12 % more
 * infer/s at c=1, 16 and 64.
 */
export function connectRedis(url: string): RedisConnection {
  const cluster = parseClusterUrl(url);
  if (!cluster) return new Redis(url, { maxRetriesPerRequest: 3 });
  const nodes: ClusterNode[] = cluster.nodes;
  return new Cluster(nodes, {
    redisOptions: {
      maxRetriesPerRequest: 3,
      ...(cluster.username ? { username: cluster.username } : {}),
      ...(cluster.password !== undefined ? { password: cluster.password } : {}),
      ...(cluster.tls ? { tls: {} } : {}),
    },
  });
}

export function isCluster(redis: RedisConnection): redis is Cluster & RedisConnection {
  return redis.isCluster;
}

/** The part of a key that Redis Cluster hashes: its first non-empty `{tag}`, else the whole key. */
export function hashTag(key: string): string {
  const open = key.indexOf('{');
  if (open >= 0) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) return key.slice(open + 1, close);
  }
  return key;
}

/**
 * Every key matching `pattern`, a page at a time: SCAN on a single node, and
 * on each master of a Cluster (a Cluster's SCAN would see one node only).
 */
export async function* scanKeys(redis: RedisConnection, pattern: string): AsyncGenerator<string[]> {
  let nodes: Redis[];
  if (isCluster(redis)) {
    // The node list is filled once the cluster is connected; a command waits for that.
    await redis.ping();
    nodes = redis.nodes('master');
  } else {
    nodes = [redis];
  }
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
      cursor = next;
      if (keys.length > 0) yield keys;
    } while (cursor !== '0');
  }
}

/** Remove keys, one UNLINK per hash tag (a Cluster refuses a command whose keys span slots). */
export async function unlinkKeys(redis: RedisConnection, keys: readonly string[]): Promise<number> {
  const byTag = new Map<string, string[]>();
  for (const k of keys) {
    const tag = hashTag(k);
    const group = byTag.get(tag);
    if (group) group.push(k);
    else byTag.set(tag, [k]);
  }
  const removed = await Promise.all([...byTag.values()].map((group) => redis.unlink(...group)));
  return removed.reduce((a, b) => a + b, 0);
}
