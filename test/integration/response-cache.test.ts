import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BatchStore, ResponseCache } from '@ge-mesh/store';
import { REDIS_URL, uniqueNamespace } from '../support/mesh-harness.js';

/** The response cache's scripts on the real Redis: binary values, expiry, LRU eviction under the size limit. */
describe('response cache (real Redis)', () => {
  let store: BatchStore;
  before(() => {
    store = BatchStore.connect(REDIS_URL, uniqueNamespace('cache'));
  });
  after(async () => {
    await store.purgeNamespace();
    await store.close();
  });
  const bytes = (n: number, fill: number) => Buffer.alloc(n, fill);

  it('returns exactly the bytes stored (binary-safe), and null for an unknown key', async () => {
    const cache = new ResponseCache(store.redis, store.namespace, { maxBytes: 1024, ttlMs: 60_000 });
    const value = Buffer.from([0, 255, 0x80, 0xc3, 0x28, 10, 13, 0]);
    assert.deepEqual(await cache.put('k1', value), { stored: true, evicted: 0 });
    assert.deepEqual(await cache.get('k1'), value);
    assert.equal(await cache.get('nope'), null);
    // Stored again: replaced, counted once.
    assert.deepEqual(await cache.put('k1', bytes(16, 7)), { stored: true, evicted: 0 });
    assert.deepEqual(await cache.get('k1'), bytes(16, 7));
    assert.equal(await cache.bytes(), 16);
  });

  it('an entry past its time to live is a miss and leaves the cache', async () => {
    const ns = uniqueNamespace('cache-ttl');
    const cache = new ResponseCache(store.redis, ns, { maxBytes: 1024, ttlMs: 1_000 });
    const t0 = 1_000_000;
    await cache.put('k', bytes(10, 1), t0);
    assert.deepEqual(await cache.get('k', t0 + 999), bytes(10, 1));
    assert.equal(await cache.get('k', t0 + 1_000), null);
    assert.equal(await cache.bytes(), 0);
    await new BatchStore(store.redis, ns).purgeNamespace();
  });

  it('holds at most its size limit, evicting the least recently used; refuses one larger than the limit', async () => {
    const ns = uniqueNamespace('cache-lru');
    const cache = new ResponseCache(store.redis, ns, { maxBytes: 300, ttlMs: 60_000 });
    await cache.put('a', bytes(100, 1), 1);
    await cache.put('b', bytes(100, 2), 2);
    await cache.put('c', bytes(100, 3), 3);
    // 'a' used last: 'b' is now the least recently used.
    assert.deepEqual(await cache.get('a', 4), bytes(100, 1));
    assert.deepEqual(await cache.put('d', bytes(150, 4), 5), { stored: true, evicted: 2 });
    assert.deepEqual(
      await Promise.all(['a', 'b', 'c', 'd'].map((k) => cache.get(k, 6).then((v) => v?.length ?? 0))),
      [100, 0, 0, 150],
    );
    assert.equal(await cache.bytes(), 250);
    assert.deepEqual(await cache.put('huge', bytes(301, 5), 7), { stored: false, evicted: 0 });
    assert.equal(await cache.get('huge', 8), null);
    assert.equal(await cache.bytes(), 250);
    await new BatchStore(store.redis, ns).purgeNamespace();
  });
});
