import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BatchStore } from '@ge-mesh/store';
import { REDIS_URL, uniqueNamespace } from '../support/mesh-harness.js';

describe('batch store (real Redis)', () => {
  let store: BatchStore;
  before(() => {
    store = BatchStore.connect(REDIS_URL, uniqueNamespace('store'));
  });
  after(async () => {
    await store.purgeNamespace();
    await store.close();
  });

  const member = (id: string) => ({ id, rows: 1, replyTo: 'q', correlationId: id, deadline: Date.now() + 1000 });

  it('creates a manifest, claims its members and sets TTLs', async () => {
    const res = await store.createBatch({
      batchId: 'b1',
      model: 'm',
      version: '1',
      tier: 4,
      rows: 3,
      members: [member('r1'), member('r2')],
    });
    assert.deepEqual(res, { ok: true });
    const m = await store.manifest('b1');
    assert.equal(m?.state, 'formed');
    assert.equal(m?.tier, 4);
    assert.equal(m?.rows, 3);
    assert.deepEqual(
      m?.members.map((x) => x.id),
      ['r1', 'r2'],
    );
    assert.equal(await store.redis.get(store.claimKey('r1')), 'b1');
    const ttl = await store.redis.pttl(store.batchKey('b1'));
    assert.ok(ttl > 0 && ttl <= store.ttlMs, `ttl ${ttl}`);
  });

  it('refuses a second manifest with the same id', async () => {
    const res = await store.createBatch({
      batchId: 'b1',
      model: 'm',
      version: '1',
      tier: 1,
      rows: 1,
      members: [member('r9')],
    });
    assert.deepEqual(res, { ok: false, reason: 'exists' });
    assert.equal(await store.redis.exists(store.claimKey('r9')), 0, 'nothing written on refusal');
  });

  it('reports members already claimed by another batch and writes nothing', async () => {
    const res = await store.createBatch({
      batchId: 'b2',
      model: 'm',
      version: '1',
      tier: 4,
      rows: 3,
      members: [member('r3'), member('r2'), member('r1')],
    });
    assert.deepEqual(res, { ok: false, reason: 'claimed', claimedIds: ['r2', 'r1'] });
    assert.equal(await store.redis.exists(store.batchKey('b2')), 0);
    assert.equal(await store.redis.exists(store.claimKey('r3')), 0);
  });

  it('moves state only from the expected state', async () => {
    assert.equal(await store.setState('b1', 'formed', 'published'), true);
    assert.equal(await store.setState('b1', 'formed', 'published'), false);
    assert.equal((await store.manifest('b1'))?.state, 'published');
    assert.equal(await store.setState('nope', 'formed', 'published'), false);
  });
});
