import { Redis } from 'ioredis';

/**
 * What Redis holds after a soak, by key pattern: how many keys, how many
 * without a TTL. The mesh's batch state expires on its own (claims and
 * manifests live 10 minutes), so Redis memory climbs for that long under
 * load and levels off; a pattern of keys without TTL that grows with the
 * requests served would be a leak instead.
 */

export interface KeyPattern {
  pattern: string;
  keys: number;
  /** Keys of the pattern without an expiry. */
  noTtl: number;
  /** Longest remaining time to live among the keys that have one, s. */
  maxTtlS: number;
}

export interface RedisCensus {
  keys: number;
  noTtl: number;
  usedMemoryMiB: number;
  patterns: KeyPattern[];
}

/**
 * A key of the namespace with its ids replaced by `*`, so keys of one kind group together:
 * `{<ns>:<model>}:claim:*` (a model's keys), `{<ns>}:lease:<node>:cpu:*` (the worker registry's).
 */
export function keyPattern(namespace: string, key: string): string {
  const tagEnd = key.indexOf('}') + 1;
  const tag = `{<ns>${key.slice(namespace.length + 1, tagEnd)}`;
  return (
    [tag, ...key.slice(tagEnd + 1).split(':')]
      // An id: all digits, or long with a digit in it (uuids, hex, generated ids); names have neither.
      .map((part, i) => (i > 0 && (/^\d+$/.test(part) || (part.length >= 8 && /\d/.test(part))) ? '*' : part))
      .join(':')
  );
}

export async function usedMemoryMiB(redis: Redis): Promise<number> {
  const m = /used_memory:(\d+)/.exec(await redis.info('memory'));
  return m ? Number(m[1]) / 2 ** 20 : Number.NaN;
}

/** Every key of the namespace, by pattern (SCAN, then PTTL in pipelines). */
export async function redisCensus(url: string, namespace: string): Promise<RedisCensus> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  try {
    const patterns = new Map<string, KeyPattern>();
    // The namespace's keys are under the hash tags {<ns>:<model>} and {<ns>} (packages/store).
    for (const match of [`{${namespace}:*`, `{${namespace}}:*`]) {
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', match, 'COUNT', 2000);
        cursor = next;
        const pipe = redis.pipeline();
        for (const k of keys) pipe.pttl(k);
        const ttls = (await pipe.exec()) ?? [];
        keys.forEach((k, i) => {
          const ttl = Number(ttls[i]?.[1]);
          if (ttl === -2) return; // expired between SCAN and PTTL
          const pattern = keyPattern(namespace, k);
          const p = patterns.get(pattern) ?? { pattern, keys: 0, noTtl: 0, maxTtlS: 0 };
          p.keys++;
          if (ttl === -1) p.noTtl++;
          else p.maxTtlS = Math.max(p.maxTtlS, Math.round(ttl / 1000));
          patterns.set(pattern, p);
        });
      } while (cursor !== '0');
    }
    const list = [...patterns.values()].sort((a, b) => b.keys - a.keys);
    return {
      keys: list.reduce((n, p) => n + p.keys, 0),
      noTtl: list.reduce((n, p) => n + p.noTtl, 0),
      usedMemoryMiB: await usedMemoryMiB(redis),
      patterns: list,
    };
  } finally {
    redis.disconnect();
  }
}
