import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Broker, topology } from '@ge-mesh/broker';
import { BatchStore } from '@ge-mesh/store';
import { createLogger } from '@ge-mesh/telemetry';
import { LaneSlots } from '../../services/batcher/src/lane-slots.js';
import { RABBITMQ_URL, REDIS_URL, uniqueNamespace } from '../support/mesh-harness.js';

const batch = (batchId: string, ids: string[]) => ({
  batchId,
  model: 'm',
  version: '1',
  tier: 1,
  rows: ids.length,
  members: ids.map((id) => ({ id, rows: 1, replyTo: 'r', correlationId: id, deadline: Date.now() + 60_000 })),
});

/**
 * The batcher's count of a model's batches in flight, on the real Redis and
 * broker: a finish notification carries the count, so the batcher does not
 * read it back, unless one of its own batches is being recorded meanwhile.
 */
describe('lane slots', () => {
  const ns = uniqueNamespace('slots');
  const log = createLogger('test', 'silent');
  let store: BatchStore;
  let broker: Broker;
  let slots: LaneSlots;
  let reads = 0;
  let changes = 0;

  const changed = async (from: number) => {
    for (let i = 0; i < 200 && changes === from; i++) await new Promise((r) => setTimeout(r, 10));
    assert.ok(changes > from, 'the finish notification arrived');
  };

  before(async () => {
    store = BatchStore.connect(REDIS_URL, ns);
    // Count the batcher's reads of the count (the store method it calls); Redis itself is real.
    const read = store.inFlight.bind(store);
    store.inFlight = (model: string, now?: number) => {
      reads++;
      return read(model, now);
    };
    const topo = topology(ns);
    broker = await Broker.connect(RABBITMQ_URL, topo, log, 'lane-slots-test');
    slots = new LaneSlots(broker, store, 'm', topo.batches('m'), 1, log, () => changes++);
    await slots.start();
  });

  after(async () => {
    await slots.stop();
    await broker.close();
    const keys = await store.redis.keys(`{${ns}:m}*`);
    if (keys.length > 0) await store.redis.del(...keys);
    store.redis.disconnect();
  });

  it('takes the count from a finish notification instead of reading it back', async () => {
    for (const id of ['a', 'b', 'c']) {
      const s = slots.forming();
      assert.deepEqual(await store.createBatch(batch(id, [`${id}1`])), { ok: true });
      s.recorded(true);
    }
    const first = reads;
    assert.equal(await slots.inFlight(), 3, 'read once from Redis');
    assert.equal(reads, first + 1);
    assert.equal(await slots.inFlight(), 3, 'then counted here');
    assert.equal(reads, first + 1);

    let seen = changes;
    assert.equal(await store.finishBatch('a', 'm'), true);
    await changed(seen);
    assert.equal(await slots.inFlight(), 2, "the notice's count");
    assert.equal(reads, first + 1, 'no read after the notice');

    // A batch of ours being recorded when a notice arrives may or may not be in its count: read again.
    const s = slots.forming();
    seen = changes;
    assert.equal(await store.finishBatch('b', 'm'), true);
    await changed(seen);
    assert.deepEqual(await store.createBatch(batch('d', ['d1'])), { ok: true });
    s.recorded(true);
    assert.equal(await slots.inFlight(), 2, 'c and d');
    assert.equal(reads, first + 2, 'read again');

    // No answer from Redis: the count is read again when next needed.
    slots.forming().failed();
    assert.equal(await slots.inFlight(), 2);
    assert.equal(reads, first + 3);
  });
});
