import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BatchStore, levelPolicy, parseLanesNotice, queueTimeoutUs } from '@ge-mesh/store';
import { REDIS_URL, uniqueNamespace } from '../support/mesh-harness.js';

/**
 * Every batch-state script on the real Redis: claims, take-over of batches a
 * dead batcher never confirmed, lane slots, worker start/finish, answered
 * markers and exact admission across connections.
 */
describe('batch store (real Redis)', () => {
  let store: BatchStore;
  const others: BatchStore[] = [];
  before(() => {
    store = BatchStore.connect(REDIS_URL, uniqueNamespace('store'));
  });
  after(async () => {
    await store.purgeNamespace();
    await store.close();
    for (const o of others) await o.close();
  });

  const member = (id: string, deadline = Date.now() + 5_000) => ({
    id,
    rows: 1,
    replyTo: 'q',
    correlationId: id,
    deadline,
  });
  const batch = (batchId: string, ids: string[], model = 'm') => ({
    batchId,
    model,
    version: '1',
    tier: 4,
    rows: ids.length,
    members: ids.map((id) => member(id)),
  });
  /** A request's deadline a minute out. */
  const soon = (queueKey?: string) => ({ deadline: Date.now() + 60_000, ...(queueKey ? { queueKey } : {}) });

  it('creates a manifest, claims its members, takes a lane slot, and sets TTLs', async () => {
    assert.deepEqual(await store.createBatch(batch('b1', ['r1', 'r2'])), { ok: true });
    const m = await store.manifest('b1', 'm');
    assert.equal(m?.state, 'formed');
    assert.equal(m?.tier, 4);
    assert.equal(m?.rows, 2);
    assert.deepEqual(
      m?.members.map((x) => x.id),
      ['r1', 'r2'],
    );
    assert.equal(await store.redis.get(store.claimKey('m', 'r1')), 'b1');
    assert.equal(await store.inFlight('m'), 1);
    // The in-flight entry lapses with the last member's deadline.
    const deadline = Math.max(...(m?.members ?? []).map((x) => x.deadline));
    assert.deepEqual(await store.inFlightBatches('m'), [
      { batchId: 'b1', lapsesAt: Math.ceil(deadline), state: 'formed' },
    ]);
    const ttl = await store.redis.pttl(store.batchKey('m', 'b1'));
    assert.ok(ttl > 0 && ttl <= store.ttlMs, `ttl ${ttl}`);
    assert.ok((await store.redis.pttl(store.inFlightKey('m'))) > 0);
  });

  it('refuses a second manifest with the same id', async () => {
    assert.deepEqual(await store.createBatch(batch('b1', ['r9'])), { ok: false, reason: 'exists', notHeldIds: ['r9'] });
    assert.equal(await store.redis.exists(store.claimKey('m', 'r9')), 0, 'nothing written on refusal');
  });

  it('a batch a worker started before its create-batch ran: create-batch completes it and names the members it does not hold', async () => {
    const q = store.queueKey('E', 0);
    for (const id of ['e1', 'e2', 'e3'])
      assert.equal((await store.queues.admit(q, id, Date.now() + 60_000, 8)).admitted, true);
    // An abandoned batch (its batcher died before publishing it) holds e1's claim.
    assert.deepEqual(await store.createBatch(batch('ea', ['e1'], 'E')), { ok: true });
    assert.equal(await store.inFlight('E'), 1);
    // The early batch reaches a worker first: start-batch writes it and takes the free claim only.
    assert.deepEqual(await store.startBatch('eb', 'E', ['e1', 'e2']), { kind: 'run', members: [1] });
    assert.deepEqual(await store.createBatch(batch('eb', ['e1', 'e2'], 'E'), { queueKeys: [q] }), {
      ok: false,
      reason: 'exists',
      notHeldIds: ['e1'],
    });
    assert.equal(await store.redis.get(store.claimKey('E', 'e1')), 'ea');
    assert.equal(await store.redis.get(store.claimKey('E', 'e2')), 'eb');
    // Completed: its details, a lane slot while it runs, and e2 (only) out of its admission queue.
    const m = await store.manifest('eb', 'E');
    assert.equal(m?.state, 'running');
    assert.equal(m?.tier, 4);
    assert.deepEqual(
      m?.members.map((x) => x.id),
      ['e1', 'e2'],
    );
    assert.deepEqual((await store.inFlightBatches('E')).map((b) => b.batchId).sort(), ['ea', 'eb']);
    assert.equal(await store.queues.size(q), 2);
    assert.equal(await store.queues.leave(q, ['e2']), 0, 'e2 left its queue in create-batch');
    // Finished, it frees its slot.
    assert.equal(await store.finishBatch('eb', 'E', { tier: 4, ms: 1 }), true);
    assert.deepEqual(
      (await store.inFlightBatches('E')).map((b) => b.batchId),
      ['ea'],
    );
  });

  it('a batch that finished before its create-batch ran takes no lane slot', async () => {
    assert.deepEqual(await store.startBatch('fb', 'F', ['f1']), { kind: 'run', members: [0] });
    assert.equal(await store.finishBatch('fb', 'F', { tier: 4, ms: 1 }), true);
    assert.deepEqual(await store.createBatch(batch('fb', ['f1'], 'F')), {
      ok: false,
      reason: 'exists',
      notHeldIds: [],
    });
    assert.equal(await store.inFlight('F'), 0);
    assert.equal((await store.manifest('fb', 'F'))?.state, 'done');
  });

  it('a request claimed by a published batch is not batched again, and nothing is written', async () => {
    assert.equal(await store.setState('b1', 'm', 'formed', 'published'), true);
    const res = await store.createBatch(batch('b2', ['r3', 'r2', 'r1']));
    assert.deepEqual(res, { ok: false, reason: 'claimed', claimedIds: ['r2', 'r1'] });
    assert.equal(await store.redis.exists(store.batchKey('m', 'b2')), 0);
    assert.equal(await store.redis.exists(store.claimKey('m', 'r3')), 0);
    assert.equal(await store.inFlight('m'), 1);
  });

  it('moves state only from the expected state', async () => {
    assert.equal(await store.setState('b1', 'm', 'formed', 'published'), false);
    assert.equal((await store.manifest('b1', 'm'))?.state, 'published');
    assert.equal(await store.setState('nope', 'm', 'formed', 'published'), false);
  });

  it('takes over requests of a batch left in state formed; its worker then runs only what it kept', async () => {
    // A batcher formed b3 and died before its publish was confirmed.
    assert.deepEqual(await store.createBatch(batch('b3', ['s1', 's2', 's3'], 'k')), { ok: true });
    assert.equal(await store.inFlight('k'), 1);
    // Another batcher batches the redelivered s2 and s3.
    assert.deepEqual(await store.createBatch(batch('b4', ['s2', 's3'], 'k')), { ok: true });
    assert.equal(await store.redis.get(store.claimKey('k', 's2')), 'b4');
    assert.equal(await store.inFlight('k'), 1, 'the abandoned batch no longer holds a lane slot');
    // b3 did reach a worker after all: it answers s1 only.
    assert.deepEqual(await store.startBatch('b3', 'k', ['s1', 's2', 's3']), { kind: 'run', members: [0] });
    // Once started, b3 keeps s1: a redelivered s1 is not batched again.
    const again = await store.createBatch(batch('b5', ['s1'], 'k'));
    assert.deepEqual(again, { ok: false, reason: 'claimed', claimedIds: ['s1'] });
    assert.deepEqual(await store.startBatch('b4', 'k', ['s2', 's3']), { kind: 'run', members: [0, 1] });
  });

  it('refuses a batch when every lane slot is taken, and frees a slot when a worker finishes', async () => {
    const sub = store.redis.duplicate();
    const heard: string[] = [];
    await sub.subscribe(store.lanesChannel('L'));
    sub.on('message', (_ch, id: string) => heard.push(id));
    assert.deepEqual(await store.createBatch(batch('L1', ['l1'], 'L'), { maxInFlight: 2 }), { ok: true });
    assert.deepEqual(await store.createBatch(batch('L2', ['l2'], 'L'), { maxInFlight: 2 }), { ok: true });
    assert.deepEqual(await store.createBatch(batch('L3', ['l3'], 'L'), { maxInFlight: 2 }), {
      ok: false,
      reason: 'no-lane',
      inFlight: 2,
    });
    assert.equal(await store.redis.exists(store.claimKey('L', 'l3')), 0);
    assert.equal(await store.finishBatch('L1', 'L', { tier: 4, ms: 10 }), true);
    assert.equal((await store.manifest('L1', 'L'))?.state, 'done');
    assert.equal(await store.inFlight('L'), 1);
    assert.deepEqual(await store.createBatch(batch('L3', ['l3'], 'L'), { maxInFlight: 2 }), { ok: true });
    assert.equal(await store.inFlight('L'), 2);
    // A finished batch redelivered to a worker is not run again.
    assert.deepEqual(await store.startBatch('L1', 'L', ['l1']), { kind: 'done' });
    // The lane time joins the model's tier costs as a moving average (1/5 weight for each new run).
    assert.deepEqual(await store.tierCosts('L'), new Map([[4, 10]]));
    assert.equal(await store.finishBatch('L2', 'L', { tier: 4, ms: 20 }), true);
    assert.deepEqual(await store.tierCosts('L'), new Map([[4, 12]]));
    for (let i = 0; i < 50 && heard.length < 2; i++) await new Promise((r) => setTimeout(r, 10));
    // Each notice carries the model's batches still in flight: L2 after L1 finished, L3 after L2.
    assert.deepEqual(heard, ['L1 1', 'L2 1']);
    assert.deepEqual(heard.map(parseLanesNotice), [
      { batchId: 'L1', inFlight: 1 },
      { batchId: 'L2', inFlight: 1 },
    ]);
    // A notice of an older service (the batch id alone) has no count: the batcher reads it again.
    assert.deepEqual(parseLanesNotice('L1'), { batchId: 'L1' });
    await sub.quit();
  });

  it('keeps large requests beside their messages until the batch that answered them finishes', async () => {
    const bodies = [0, 1, 2].map((i) => Buffer.from(Array.from({ length: 70_000 }, (_, j) => (i * 7 + j) % 251)));
    for (const [i, id] of ['s1', 's2', 's3'].entries()) {
      await store.storeRequestBody('S', id, bodies[i] as Buffer, 60_000);
    }
    // Read back byte for byte, in the order asked; one never stored reads null.
    const read = await store.requestBodies('S', ['s3', 'missing', 's1']);
    assert.equal(read.length, 3);
    assert.ok(read[0]?.equals(bodies[2] as Buffer));
    assert.equal(read[1], null);
    assert.ok(read[2]?.equals(bodies[0] as Buffer));
    const ttl = await store.redis.pttl(store.requestBodyKey('S', 's1'));
    assert.ok(ttl > 55_000 && ttl <= 60_000, `ttl ${ttl}`);
    // finish-batch deletes only the stored requests it is told the batch answered.
    assert.deepEqual(await store.createBatch(batch('S1', ['s1', 's2'], 'S')), { ok: true });
    assert.equal(await store.finishBatch('S1', 'S', undefined, ['s1', 's2']), true);
    assert.deepEqual(
      (await store.requestBodies('S', ['s1', 's2', 's3'])).map((b) => b?.byteLength ?? null),
      [null, null, 70_000],
    );
  });

  it('an in-flight entry lapses with its members deadline', async () => {
    const b = { ...batch('E1', ['e1'], 'E'), members: [member('e1', Date.now() + 50)] };
    assert.deepEqual(await store.createBatch(b), { ok: true });
    assert.equal(await store.inFlight('E'), 1);
    assert.equal(await store.inFlight('E', Date.now() + 2_000), 0);
  });

  it('an unload and an orphan batch (published early, refused by create-batch) answer a member once', async () => {
    // o1 went out early for u1 and u2; create-batch refused it (the one lane slot was taken).
    assert.deepEqual(await store.createBatch(batch('busy', ['u0'], 'U'), { maxInFlight: 1 }), { ok: true });
    assert.deepEqual(await store.createBatch(batch('o1', ['u1', 'u2'], 'U'), { maxInFlight: 1 }), {
      ok: false,
      reason: 'no-lane',
      inFlight: 1,
    });
    // The orphan reaches a worker and takes u2 before the unload answers the put-back requests.
    assert.deepEqual(await store.startBatch('o1', 'U', ['u2']), { kind: 'run', members: [0] });
    assert.equal(await store.expireRequest('u2', 'U', 'unloaded', soon()), false, 'the orphan answers u2');
    assert.equal(await store.expireRequest('u1', 'U', 'unloaded', soon()), true, 'the unload answers u1');
    assert.equal(await store.redis.get(store.claimKey('U', 'u1')), '!unloaded');
    // Another orphan that carries them runs nothing: u1 was answered, u2 is o1's.
    assert.deepEqual(await store.startBatch('o2', 'U', ['u1', 'u2']), { kind: 'run', members: [] });
  });

  it('a request answered with an error is marked, so a redelivered copy is dropped', async () => {
    assert.equal(await store.expireRequest('x1', 'X', 'timeout', soon()), true);
    assert.equal(await store.redis.get(store.claimKey('X', 'x1')), '!timeout');
    assert.equal(await store.expireRequest('x1', 'X', 'timeout', soon()), false, 'answered once');
    assert.deepEqual(await store.createBatch(batch('X1', ['x1', 'x2'], 'X')), {
      ok: false,
      reason: 'claimed',
      claimedIds: ['x1'],
    });
    // A request a started batch carries is never expired by a batcher.
    assert.deepEqual(await store.createBatch(batch('X2', ['x2'], 'X')), { ok: true });
    await store.startBatch('X2', 'X', ['x2']);
    assert.equal(await store.expireRequest('x2', 'X', 'timeout', soon()), false);
  });

  it('batch state lives until the last deadline it covers, plus a margin, not a fixed 10 minutes', async () => {
    const inSecs = (s: number) => Date.now() + s * 1000;
    const b = { ...batch('T1', ['t1', 't2'], 'T'), members: [member('t1', inSecs(5)), member('t2', inSecs(20))] };
    assert.deepEqual(await store.createBatch(b), { ok: true });
    const near = (ms: number, want: number) => ms > want - 2_000 && ms <= want;
    for (const key of [store.batchKey('T', 'T1'), store.claimKey('T', 't1'), store.claimKey('T', 't2')]) {
      const ttl = await store.redis.pttl(key);
      assert.ok(near(ttl, 50_000), `${key}: ttl ${ttl} ms, want 20 s to the last deadline + 30 s`);
    }
    // A claim that vanished is written again by start-batch with the manifest's own TTL.
    await store.redis.del(store.claimKey('T', 't1'));
    assert.deepEqual(await store.startBatch('T1', 'T', ['t1', 't2']), { kind: 'run', members: [0, 1] });
    assert.ok(near(await store.redis.pttl(store.claimKey('T', 't1')), 50_000));
    // A deadline with a fraction of a millisecond (a `timeout` in µs) still gives whole-ms TTLs.
    const odd = { ...batch('T2', ['t4'], 'T'), members: [member('t4', inSecs(5) + 0.5)] };
    assert.deepEqual(await store.createBatch(odd), { ok: true });
    assert.equal(await store.expireRequest('t5', 'T', 'timeout', { deadline: inSecs(1) + 0.25 }), true);
    // An error marker lives until its request's deadline + 30 s.
    assert.equal(await store.expireRequest('t3', 'T', 'timeout', { deadline: inSecs(1) }), true);
    assert.ok(near(await store.redis.pttl(store.claimKey('T', 't3')), 31_000));
  });

  it('a redelivered request: batched (free), batched again after freeing an unconfirmed batch slot, or dropped', async () => {
    assert.equal(await store.reclaimRequest('f1', 'R'), 'free');
    // A batcher recorded R1 and died before its publish was confirmed.
    assert.deepEqual(await store.createBatch(batch('R1', ['f1', 'f2'], 'R')), { ok: true });
    assert.equal(await store.inFlight('R'), 1);
    assert.equal(await store.reclaimRequest('f1', 'R'), 'retry');
    assert.equal(await store.inFlight('R'), 0, 'the dead batcher holds no lane slot any more');
    // Once a worker started R1, or the request was answered, a copy is dropped.
    await store.startBatch('R1', 'R', ['f1', 'f2']);
    assert.equal(await store.reclaimRequest('f2', 'R'), 'drop');
    await store.expireRequest('f3', 'R', 'timeout', soon());
    assert.equal(await store.reclaimRequest('f3', 'R'), 'drop');
  });

  it('one batcher at a time leads a preserve_ordering model; the lead lapses or is given up', async () => {
    assert.equal(await store.leads.take('ord', 'A', 200), true);
    assert.equal(await store.leads.take('ord', 'B', 200), false);
    assert.equal(await store.leads.take('ord', 'A', 200), true, 'renewed');
    assert.equal(await store.leads.take('ord', 'A', 0), true, 'given up');
    assert.equal(await store.leads.take('ord', 'B', 50), true);
    await new Promise((r) => setTimeout(r, 80));
    assert.equal(await store.leads.take('ord', 'A', 200), true, 'B stopped renewing');
  });

  it('admission is exact across connections: max_queue_size 8, 10 at once → 8 admitted', async () => {
    for (let i = 0; i < 3; i++) others.push(BatchStore.connect(REDIS_URL, store.namespace));
    const q = store.queueKey('tiny', 0);
    const deadline = Date.now() + 5_000;
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => (others[i % 3] as BatchStore).queues.admit(q, `a${i}`, deadline, 8)),
    );
    assert.equal(results.filter((r) => r.admitted).length, 8);
    assert.equal(results.filter((r) => !r.admitted).length, 2);
    assert.equal(await store.queues.size(q), 8);
    // Batching takes members out of the queue; a failed publish takes one out too.
    const admitted = results.flatMap((r, i) => (r.admitted ? [`a${i}`] : []));
    const inBatch = admitted.slice(0, 3);
    assert.deepEqual(await store.createBatch(batch('Q1', inBatch, 'tiny'), { queueKeys: [q] }), { ok: true });
    assert.equal(await store.queues.size(q), 5);
    assert.equal(await store.queues.leave(q, [admitted[3] as string, 'unknown']), 1);
    assert.equal(await store.queues.size(q), 4);
    assert.equal(await store.expireRequest(admitted[4] as string, 'tiny', 'timeout', soon(q)), true);
    assert.equal(await store.queues.size(q), 3);
  });

  it('an admission entry stops counting at its deadline (a crashed gateway leaks no slot)', async () => {
    const q = store.queueKey('lapse', 1);
    const now = Date.now();
    assert.deepEqual(await store.queues.admit(q, 'p1', now + 30, 1, now), { admitted: true, size: 1 });
    assert.deepEqual(await store.queues.admit(q, 'p2', now + 5_000, 1, now), { admitted: false, size: 1 });
    assert.deepEqual(await store.queues.admit(q, 'p2', now + 5_000, 1, now + 31), { admitted: true, size: 1 });
    assert.deepEqual(
      await store.queues.admit(q, 'p2', now + 5_000, 1, now + 32),
      { admitted: true, size: 1 },
      'idempotent',
    );
  });

  it('queue policy: the request timeout only shortens the default, and is ignored when the default is 0', () => {
    const p = {
      timeoutAction: 'REJECT',
      defaultTimeoutMicroseconds: 1000,
      allowTimeoutOverride: true,
      maxQueueSize: 0,
    } as const;
    assert.equal(queueTimeoutUs(p, 0), 1000);
    assert.equal(queueTimeoutUs(p, 400), 400);
    assert.equal(queueTimeoutUs(p, 4000), 1000);
    assert.equal(queueTimeoutUs({ ...p, allowTimeoutOverride: false }, 400), 1000);
    assert.equal(queueTimeoutUs({ ...p, defaultTimeoutMicroseconds: 0 }, 400), 0);
    const levels = new Map([[2, { ...p, maxQueueSize: 3 }]]);
    assert.equal(levelPolicy({ defaultQueuePolicy: p, priorityQueuePolicy: levels }, 2).maxQueueSize, 3);
    assert.equal(levelPolicy({ defaultQueuePolicy: p, priorityQueuePolicy: levels }, 1).maxQueueSize, 0);
  });
});
