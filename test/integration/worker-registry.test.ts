import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BatchStore, lanesOf, type WorkerInfo, type WorkerModelInfo, WorkerRegistry } from '@ge-mesh/store';
import { Redis } from 'ioredis';
import { REDIS_URL, uniqueNamespace } from '../support/mesh-harness.js';

/**
 * The worker registry and device leases on the real Redis: exclusive leases
 * under concurrent claims, renewal, loss, release and lapse; live workers
 * and lanes; the model control generations; a dead-lettered batch failed once.
 */
describe('worker registry (real Redis)', () => {
  const namespace = uniqueNamespace('registry');
  const connections: Redis[] = [];
  let registry: WorkerRegistry;
  const connect = () => {
    const r = new Redis(REDIS_URL);
    connections.push(r);
    return new WorkerRegistry(r, namespace);
  };
  before(() => {
    registry = connect();
  });
  after(async () => {
    const store = new BatchStore(registry.redis, namespace);
    await store.purgeNamespace();
    for (const c of connections) await c.quit();
  });

  const info = (id: string, devices: number[], over: Partial<WorkerInfo> = {}): WorkerInfo => ({
    id,
    node: 'n1',
    host: 'h',
    pid: 1,
    runtime: 'ort',
    kind: 'cpu',
    devices,
    state: 'ready',
    eligible: '*',
    models: [],
    startedAt: 0,
    beatAt: 0,
    ...over,
  });
  const DEVICES = [0, 1, 2, 3];

  it('gives 4 concurrent claimers on separate connections 4 distinct devices, and a fifth none', async () => {
    const claimers = Array.from({ length: 5 }, () => connect());
    const got = await Promise.all(claimers.map((r, i) => r.claimDevices(`w${i}`, 'n1', 'cpu', DEVICES, 1, 5_000)));
    const claimed = got.filter((g): g is number[] => g !== null).map((g) => g[0]);
    assert.equal(claimed.length, 4);
    assert.deepEqual([...claimed].sort(), DEVICES);
    assert.equal(got.filter((g) => g === null).length, 1);
    for (const d of DEVICES) {
      const holder = await registry.leaseHolder('n1', 'cpu', d);
      assert.equal(got[Number(holder?.slice(1))]?.[0], d, `device ${d} held by ${holder}`);
    }
    // Another node's devices are separate leases.
    assert.deepEqual(await registry.claimDevices('w4', 'n2', 'cpu', DEVICES, 1, 5_000), [0]);
    // A claim of several devices is all or nothing.
    assert.equal(await registry.claimDevices('w9', 'n2', 'cpu', DEVICES, 4, 5_000), null);
    assert.equal(await registry.leaseHolder('n2', 'cpu', 1), null);
    assert.deepEqual(await registry.claimDevices('w9', 'n2', 'cpu', DEVICES, 3, 5_000), [1, 2, 3]);
  });

  it('renews leases on heartbeat, lists live workers and their ready lanes, and lets a lapsed worker drop out', async () => {
    const m0: WorkerModelInfo = {
      model: 'm',
      versions: ['1'],
      state: 'ready' as const,
      generation: 0,
      devices: [5],
      lanesPerDevice: 2,
      lanes: 2,
      tiers: [1, 4],
      threadsPerLane: 1,
      inflight: 0,
      batches: 0,
    };
    const models = [m0];
    assert.deepEqual(await registry.claimDevices('a', 'n3', 'npu', [5], 1, 300), [5]);
    assert.deepEqual(await registry.claimDevices('b', 'n3', 'npu', [6], 1, 5_000), [6]);
    const a = info('a', [5], { node: 'n3', kind: 'npu', models });
    const b = info('b', [6], { node: 'n3', kind: 'npu', models: [{ ...m0, devices: [6], lanes: 3 }] });
    assert.deepEqual(await registry.heartbeat(a, { ttlMs: 300, leaseTtlMs: 300, changed: true }), { ok: true });
    assert.deepEqual(await registry.heartbeat(b, { ttlMs: 5_000, leaseTtlMs: 5_000, changed: true }), { ok: true });
    assert.deepEqual(
      (await registry.liveWorkers()).map((w) => w.id),
      ['a', 'b'],
    );
    assert.equal(await registry.liveLanes('m'), 5);
    assert.equal(lanesOf([{ ...b, state: 'draining' }], 'm'), 0);
    assert.equal(lanesOf([{ ...b, models: [{ ...m0, state: 'loading' }] }], 'm'), 0);
    const pttl = await registry.redis.pttl(registry.leaseKey('n3', 'npu', 5));
    assert.ok(pttl > 0 && pttl <= 300, `lease TTL ${pttl}`);

    // 'a' stops beating: it drops out of the live list and its lease lapses.
    await new Promise((r) => setTimeout(r, 400));
    assert.deepEqual(
      (await registry.liveWorkers()).map((w) => w.id),
      ['b'],
    );
    assert.equal(await registry.liveLanes('m'), 3);
    assert.equal(await registry.leaseHolder('n3', 'npu', 5), null);

    // Its device goes to another worker; 'a' waking up finds the lease lost and writes nothing.
    assert.deepEqual(await registry.claimDevices('c', 'n3', 'npu', [5, 6], 1, 5_000), [5]);
    assert.deepEqual(await registry.heartbeat(a, { ttlMs: 300, leaseTtlMs: 300, changed: true }), {
      ok: false,
      lostDevices: [5],
    });
    assert.equal(await registry.leaseHolder('n3', 'npu', 5), 'c');
    assert.deepEqual(
      (await registry.liveWorkers()).map((w) => w.id),
      ['b'],
    );

    // Release frees the leases at once; a lease held by another worker is left alone.
    assert.equal(await registry.release({ id: 'b', node: 'n3', kind: 'npu', devices: [6, 5] }), 1);
    assert.equal(await registry.leaseHolder('n3', 'npu', 6), null);
    assert.equal(await registry.leaseHolder('n3', 'npu', 5), 'c');
    assert.deepEqual(await registry.liveWorkers(), []);
  });

  it('publishes a change notification only when asked, and marks served models wanted once', async () => {
    const sub = new Redis(REDIS_URL);
    connections.push(sub);
    const messages: string[] = [];
    sub.on('message', (_ch: string, m: string) => messages.push(m));
    await sub.subscribe(registry.channel);
    await registry.claimDevices('d', 'n4', 'cpu', [0], 1, 5_000);
    const d = info('d', [0], { node: 'n4' });
    await registry.heartbeat(d, { ttlMs: 5_000, leaseTtlMs: 5_000, changed: true, wanted: ['x', 'y'] });
    await registry.heartbeat(d, { ttlMs: 5_000, leaseTtlMs: 5_000, changed: false });
    assert.deepEqual(Object.fromEntries(await registry.controls()), {
      x: { action: 'load', generation: 0 },
      y: { action: 'load', generation: 0 },
    });
    assert.equal(await registry.setControl('x', 'unload'), 1);
    // A later worker's first beat does not undo an unload.
    await registry.heartbeat(d, { ttlMs: 5_000, leaseTtlMs: 5_000, changed: false, wanted: ['x'] });
    assert.deepEqual((await registry.controls()).get('x'), { action: 'unload', generation: 1 });
    assert.equal(await registry.setControl('x', 'load'), 2);
    assert.equal(await registry.setControl('new', 'load'), 1);
    await assert.rejects(registry.setControl('x', 'reload' as 'load'), /unknown model control action 'reload'/);
    const ttl = await registry.redis.pttl(registry.controlKey);
    assert.ok(ttl > 23 * 3600_000, `control TTL ${ttl}`);
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(messages, ['worker:d', 'control:x', 'control:x', 'control:new']);
  });

  it('fails a batch once, answering the members it still holds, and frees its lane slot', async () => {
    const store = new BatchStore(registry.redis, namespace);
    const member = (id: string) => ({ id, rows: 1, replyTo: 'q', correlationId: id, deadline: Date.now() + 5_000 });
    const batch = (batchId: string, ids: string[]) => ({
      batchId,
      model: 'm',
      version: '1',
      tier: 2,
      rows: ids.length,
      members: ids.map(member),
    });
    assert.deepEqual(await store.createBatch(batch('b1', ['r1', 'r2'])), { ok: true });
    assert.equal(await store.inFlight('m'), 1);
    // r2 is taken over by b2 while b1 is still 'formed' (its batcher died before the publish was
    // confirmed); b1's lane slot goes with it.
    assert.deepEqual(await store.createBatch(batch('b2', ['r2'])), { ok: true });
    assert.equal(await store.inFlight('m'), 1);
    assert.deepEqual(await store.startBatch('b1', 'm', ['r1', 'r2']), { kind: 'run', members: [0] });
    // Both travelled beside their messages: only the one b1 answers is deleted with it.
    await store.storeRequestBody('m', 'r1', Buffer.from('one'), 5_000);
    await store.storeRequestBody('m', 'r2', Buffer.from('two'), 5_000);
    assert.deepEqual(await store.failBatch('b1', 'm', ['r1', 'r2']), [0]);
    assert.deepEqual(await store.requestBodies('m', ['r1', 'r2']), [null, Buffer.from('two')]);
    assert.equal((await store.manifest('b1', 'm'))?.state, 'failed');
    assert.equal(await store.inFlight('m'), 1);
    // Once only; a worker that gets a copy later runs nothing.
    assert.equal(await store.failBatch('b1', 'm', ['r1', 'r2']), null);
    assert.deepEqual(await store.startBatch('b1', 'm', ['r1', 'r2']), { kind: 'done' });
    // Failed while still 'formed' (its model was unloaded before a worker took it): the same.
    assert.deepEqual(await store.failBatch('b2', 'm', ['r2']), [0]);
    assert.deepEqual(await store.requestBodies('m', ['r2']), [null]);
    assert.equal(await store.inFlight('m'), 0);
    assert.deepEqual(await store.startBatch('b2', 'm', ['r2']), { kind: 'done' });
    // A manifest that is gone is written again: its free members are answered, once.
    assert.deepEqual(await store.failBatch('gone', 'm', ['r3', 'r1']), [0]);
    assert.equal((await store.manifest('gone', 'm'))?.state, 'failed');
    assert.equal(await store.failBatch('gone', 'm', ['r3']), null);
  });
});
