import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { topology } from '@ge-mesh/broker';
import { type ServiceProcess, startService } from '@ge-mesh/launcher';
import { type BatchMessage, decode } from '@ge-mesh/protocol';
import { BatchStore } from '@ge-mesh/store';
import amqp, { type ChannelModel } from 'amqplib';
import { RawProducer, tinyVariants } from '../support/batcher-fixtures.js';
import { DURABILITY, purgeNamespace, RABBITMQ_URL, REDIS_URL, uniqueNamespace } from '../support/mesh-harness.js';

/**
 * The batches the real batcher process forms on the real broker and Redis,
 * read by a stand-in worker that records each batch (rows@tier), then
 * finishes it as a worker does. Requests are published while no worker
 * consumes, so the batcher holds all of them when the first lane appears:
 * the first decision sees the whole set, as in Triton's worked cases
 * (triton-compat.md §8).
 */
const PREFERRED_4_8 = 'max_batch_size: 16\ndynamic_batching { preferred_batch_size: [ 4, 8 ] }';
const PREFERRED_4_8_DELAY =
  'max_batch_size: 16\ndynamic_batching { preferred_batch_size: [ 4, 8 ] max_queue_delay_microseconds: 1000 }';
const GEARS = `max_batch_size: 6
dynamic_batching { preferred_batch_size: [ 3 ] }
parameters { key: "graph.ge.inputShape" value: { string_value: "x:-1,16" } }
parameters { key: "graph.ge.dynamicDims" value: { string_value: "2;4;6" } }`;

const MODELS = {
  t_pref: PREFERRED_4_8,
  t_six: PREFERRED_4_8,
  // No preferred sizes: the tiers are the powers of two up to 16, and they are the preferred sizes.
  t_split: 'max_batch_size: 16\ndynamic_batching { }',
  t_late: PREFERRED_4_8_DELAY,
  t_late_triton: PREFERRED_4_8_DELAY,
  gears: GEARS,
  t_stall: 'max_batch_size: 4\ndynamic_batching { }',
};

describe('batch formation: the batcher process on the real broker and Redis', { timeout: 120_000 }, () => {
  const namespace = uniqueNamespace('form');
  let repo: Awaited<ReturnType<typeof tinyVariants>>;
  const batchers: ServiceProcess[] = [];
  const lines: string[] = [];
  let producer: RawProducer;
  let conn: ChannelModel;
  let store: BatchStore;

  before(async () => {
    repo = await tinyVariants(MODELS);
    const opts = {
      namespace,
      modelRepository: repo.dir,
      httpPort: 0,
      env: { GEMESH_RABBITMQ_URL: RABBITMQ_URL, GEMESH_REDIS_URL: REDIS_URL, GEMESH_METRICS_PORT: '0' },
      onLine: (svc: string, line: string) => lines.push(`[${svc}] ${line}`),
    };
    const common = ['--namespace', namespace, '--model-repository', repo.dir];
    const ours = Object.keys(MODELS).filter((m) => m !== 't_late_triton');
    batchers.push(startService('batcher', 'batcher', [...common, '--models', ours.join(',')], opts));
    batchers.push(
      startService('batcher', 'batcher-triton', [...common, '--models', 't_late_triton', '--policy', 'triton'], opts),
    );
    const until = Date.now() + 60_000;
    while (lines.filter((l) => l.includes('"msg":"batcher ready"')).length < 2) {
      if (Date.now() > until) throw new Error(`batchers not ready:\n${lines.join('\n')}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    producer = await RawProducer.open(namespace);
    conn = await amqp.connect(RABBITMQ_URL);
    store = BatchStore.connect(REDIS_URL, namespace);
  });

  after(async () => {
    for (const b of batchers) b.child.kill('SIGTERM');
    await Promise.all(batchers.map((b) => b.exited));
    await producer?.close();
    await conn?.close().catch(() => undefined);
    await store?.close();
    await purgeNamespace(namespace, Object.keys(MODELS));
    await repo?.remove();
  });

  /** Publish requests of these sizes, let the batcher take them all, then serve batches as one lane. */
  async function batchesFormed(model: string, sizes: number[]): Promise<string[]> {
    const topo = topology(namespace, DURABILITY);
    for (const rows of sizes) await producer.send(model, { rows });
    const check = await conn.createChannel();
    // Every request is held (unacked) by the batcher before the lane appears.
    for (let i = 0; (await check.checkQueue(topo.requests(model))).messageCount > 0; i++) {
      if (i > 400) throw new Error(`the batcher did not take the requests of ${model}`);
      await new Promise((r) => setTimeout(r, 25));
    }
    await check.close();
    const total = sizes.reduce((a, b) => a + b, 0);
    const formed: string[] = [];
    let rows = 0;
    const lane = await conn.createChannel();
    await lane.prefetch(1);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${model}: only ${formed.join(', ')} formed`)), 30_000);
      void lane.consume(topo.batches(model), (msg) => {
        if (!msg) return;
        const b = decode<BatchMessage>(msg.content);
        formed.push(`${b.rows}@${b.tier}`);
        rows += b.rows;
        void (async () => {
          await store.startBatch(
            b.batchId,
            b.model,
            b.members.map((m) => m.id),
          );
          await store.finishBatch(b.batchId, b.model);
          lane.ack(msg);
          if (rows === total) {
            clearTimeout(timer);
            resolve();
          }
        })();
      });
    });
    await lane.close();
    return formed;
  }

  it('preferred [4,8], sizes 1,1,1,1,3,3, delay 0: 4 goes at once (a preferred size), then 6 padded to tier 8', async () => {
    assert.deepEqual(await batchesFormed('t_pref', [1, 1, 1, 1, 3, 3]), ['4@4', '6@8']);
  });

  it('preferred [4,8], six batch-1 requests, delay 0: sends 4, keeps 2 (then 2 padded to tier 4)', async () => {
    assert.deepEqual(await batchesFormed('t_six', [1, 1, 1, 1, 1, 1]), ['4@4', '2@4']);
  });

  it('a pending set larger than the largest tier is split, never a request (tiers 1,2,4,8,16)', async () => {
    assert.deepEqual(await batchesFormed('t_split', [8, 8, 8]), ['16@16', '8@8']);
  });

  it('sizes 1,1,1,1,3,3 after the queue delay passed: Triton sends 10 rows at tier 16; the tier-aware policy 4 + 6', async () => {
    const [triton, ours] = await Promise.all([
      batchesFormed('t_late_triton', [1, 1, 1, 1, 3, 3]),
      batchesFormed('t_late', [1, 1, 1, 1, 3, 3]),
    ]);
    assert.deepEqual(triton, ['10@16'], 'Triton: 16 rows computed, 6 of them padding');
    assert.deepEqual(ours, ['4@4', '6@8'], 'tier-aware: 12 rows computed, 2 of them padding');
  });

  it('GE gears win over preferred_batch_size for the tiers: 3 rows are padded to gear 4', async () => {
    assert.ok(lines.some((l) => l.includes('gears tiers=[2,4,6]')));
    assert.deepEqual(await batchesFormed('gears', [1, 2]), ['3@4']);
  });

  it('slots held by batches no worker finishes: the batcher warns with both counts, and batches once they lapse', async () => {
    const model = 't_stall';
    const topo = topology(namespace, DURABILITY);
    const lane = await conn.createChannel();
    await lane.prefetch(1);
    const formed: BatchMessage[] = [];
    await lane.consume(topo.batches(model), (msg) => {
      if (!msg) return;
      formed.push(decode<BatchMessage>(msg.content));
      lane.ack(msg);
    });
    // One consumer, one lane: two slots (one running, one staged).
    await until(
      () => lines.some((l) => l.includes('"msg":"live lanes"') && l.includes(`"model":"${model}"`)),
      'the batcher saw the lane',
    );
    // Two batches whose batcher died before publishing them: they hold both slots until their
    // members' deadlines, and no redelivered request frees them.
    const lapse = Date.now() + 12_000;
    for (const id of ['dead-a', 'dead-b']) {
      const members = [{ id: `${id}-1`, rows: 1, replyTo: 'r', correlationId: id, deadline: lapse }];
      assert.deepEqual(await store.createBatch({ batchId: id, model, version: '1', tier: 1, rows: 1, members }), {
        ok: true,
      });
    }
    const sent = await producer.send(model, { rows: 1 });
    const warned = await until(
      () => lines.find((l) => l.includes('"msg":"no batch formed: every lane slot is taken"')),
      'the stall warning',
    );
    const w = JSON.parse(warned.slice(warned.indexOf('{'))) as Record<string, unknown>;
    assert.equal(w.model, model);
    assert.equal(w.pending, 1);
    assert.equal(w.lanes, 1);
    assert.equal(w.limit, 2);
    assert.equal(w.inFlight, 2);
    const inRedis = w.inRedis as Array<{ batchId: string; lapsesAt: number; state: string }>;
    assert.deepEqual(inRedis.map((b) => [b.batchId, b.state]).sort(), [
      ['dead-a', 'formed'],
      ['dead-b', 'formed'],
    ]);
    assert.equal(formed.length, 0, 'no batch while both slots are held');
    // The slots lapse with no notice from a worker: the batcher sees it on its own.
    const batch = await until(() => formed[0], 'a batch after the slots lapsed', 30_000);
    assert.ok(Date.now() >= lapse);
    assert.deepEqual(
      batch.members.map((m) => m.id),
      [sent.id],
    );
    await lane.close();
  });

  /** Polls `get` until it returns a value. */
  async function until<T>(get: () => T | undefined | false, what: string, ms = 15_000): Promise<T> {
    const end = Date.now() + ms;
    for (;;) {
      const v = get();
      if (v) return v;
      if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
});
