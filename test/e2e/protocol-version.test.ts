import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_DELIVERY_LIMIT, topology } from '@ge-mesh/broker';
import { demoModel, sampleInputs } from '@ge-mesh/demo-models';
import {
  type BatchMessage,
  bundleCorrelationId,
  bundledIds,
  decode,
  encode,
  type InferRequestMessage,
  PROTOCOL_VERSION,
  type RequestBundleMessage,
} from '@ge-mesh/protocol';
import { outputY, RawProducer } from '../support/batcher-fixtures.js';
import { DURABILITY, startTestMesh, type TestMesh } from '../support/mesh-harness.js';
import { Reference, toleranceRatio } from '../support/reference.js';

/**
 * A mesh half-way through an upgrade: messages stamped with another protocol
 * version reach the services of this one. They are refused clearly, with
 * PROTOCOL_MISMATCH naming both versions, exactly once, and the requests of
 * this version around them are answered as usual.
 */
describe('mixed protocol versions are refused clearly', { timeout: 120_000 }, () => {
  let mesh: TestMesh;
  let producer: RawProducer;
  const ref = new Reference();

  before(async () => {
    mesh = await startTestMesh({
      models: ['tiny'],
      flags: { batcher: ['--models', 'tiny'], worker: ['--models', 'tiny'] },
    });
    producer = await RawProducer.open(mesh.namespace);
  });
  after(async () => {
    await ref.close();
    await producer?.close();
    await mesh?.teardown();
  });

  const mismatch = (v: number, what: string) =>
    `a ${what} of protocol version ${v} reached a service of version ${PROTOCOL_VERSION}: run one version of GE Mesh per namespace (finish the upgrade, or give the new version its own --namespace)`;

  const DEAD_REQUEST_DROPPED = '"msg":"undecodable dead request dropped: nobody to answer"';
  /** How many service log lines carry each text so far. */
  const logged = (texts: readonly string[]) => texts.map((t) => mesh.lines.filter((l) => l.includes(t)).length);
  /**
   * Lines of each text logged since `before` (counted before publishing, since the services may log
   * them before the test reads its answers), once every text has one or 10 s have passed, plus a
   * 300 ms quiet window in which a second one would show.
   */
  const loggedSince = async (texts: readonly string[], before: readonly number[]): Promise<number[]> => {
    const grown = () => logged(texts).map((n, i) => n - (before[i] ?? 0));
    for (let i = 0; i < 100 && grown().some((n) => n === 0); i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    await new Promise((r) => setTimeout(r, 300));
    return grown();
  };

  it('a request of another version is answered PROTOCOL_MISMATCH once; its neighbours are answered', async () => {
    const old = await producer.send('tiny', { version: PROTOCOL_VERSION - 1 });
    const ok = await producer.send('tiny', { seed: 11 });
    await producer.waitAll([old.id, ok.id], 30_000);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(producer.count(old.id), 1);
    assert.equal(producer.count(ok.id), 1);
    const refused = producer.replies.find((r) => r.id === old.id);
    assert.deepEqual(refused?.error, { code: 'PROTOCOL_MISMATCH', message: mismatch(PROTOCOL_VERSION - 1, 'request') });
    const answered = producer.replies.find((r) => r.id === ok.id);
    assert.equal(answered?.error, undefined);
    const y = (await ref.run('tiny', sampleInputs(demoModel('tiny'), 1, 11))).y;
    assert.ok(y && answered);
    assert.ok(toleranceRatio(outputY(answered), y.data, 1e-4, 1e-3) <= 1, 'outputs differ from the reference');
  });

  /** A bundle of `n` tiny requests answered on the producer's queue (seeds 20, 21, …). */
  const bundleOf = (n: number, v: number = PROTOCOL_VERSION) => {
    const members = Array.from({ length: n }, (_, i) => producer.request('tiny', { seed: 20 + i }));
    const correlationId = bundleCorrelationId(members.map((m) => m.id));
    const bundle: RequestBundleMessage = {
      v: v as typeof PROTOCOL_VERSION,
      id: correlationId,
      correlationId,
      model: 'tiny',
      version: '',
      replyTo: producer.replyQueue,
      requests: members.map((m) => m.body),
    };
    return { members, correlationId, body: encode(bundle) };
  };

  it('a bundle of this version: each member is batched and answered once, right', async () => {
    const { members, body } = bundleOf(3);
    await producer.publish(topology(mesh.namespace, DURABILITY).requests('tiny'), body);
    await producer.waitAll(
      members.map((m) => m.id),
      30_000,
    );
    await new Promise((r) => setTimeout(r, 300));
    for (const [i, m] of members.entries()) {
      assert.equal(producer.count(m.id), 1);
      const answered = producer.replies.find((r) => r.id === m.id);
      assert.equal(answered?.error, undefined);
      const y = (await ref.run('tiny', sampleInputs(demoModel('tiny'), 1, 20 + i))).y;
      assert.ok(y && answered);
      assert.ok(toleranceRatio(outputY(answered), y.data, 1e-4, 1e-3) <= 1, `member ${i} differs from the reference`);
    }
  });

  it('a bundle of another version is refused once, to the whole bundle; the gateway reads each member in its id', async () => {
    const { members, correlationId, body } = bundleOf(2, PROTOCOL_VERSION + 1);
    await producer.publish(topology(mesh.namespace, DURABILITY).requests('tiny'), body);
    await producer.waitAll([correlationId], 30_000);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(producer.count(correlationId), 1);
    for (const m of members) assert.equal(producer.count(m.id), 0);
    const refused = producer.replies.find((r) => r.id === correlationId);
    assert.equal(refused?.correlationId, correlationId);
    assert.deepEqual(refused?.error, {
      code: 'PROTOCOL_MISMATCH',
      message: mismatch(PROTOCOL_VERSION + 1, 'bundle of requests'),
    });
    assert.deepEqual(
      bundledIds(correlationId),
      members.map((m) => m.id),
    );
  });

  it('a bundle with an undecodable member: the others are answered once, then the bundle is dead-lettered', async () => {
    const good = producer.request('tiny', { seed: 30 });
    const correlationId = bundleCorrelationId([good.id, 'garbage']);
    const bundle: RequestBundleMessage = {
      v: PROTOCOL_VERSION,
      id: correlationId,
      correlationId,
      model: 'tiny',
      version: '',
      replyTo: producer.replyQueue,
      requests: [Buffer.from('not msgpack \xc1'), good.body],
    };
    const before = logged([DEAD_REQUEST_DROPPED]);
    await producer.publish(topology(mesh.namespace, DURABILITY).requests('tiny'), encode(bundle));
    await producer.waitAll([good.id], 30_000);
    const dropped = await loggedSince([DEAD_REQUEST_DROPPED], before);
    // The dead letter answers none of it again: the batched member's claim says it was taken.
    assert.equal(producer.count(good.id), 1);
    assert.equal(producer.count(correlationId), 0);
    const answered = producer.replies.find((r) => r.id === good.id);
    const y = (await ref.run('tiny', sampleInputs(demoModel('tiny'), 1, 30))).y;
    assert.ok(y && answered && !answered.error);
    assert.ok(toleranceRatio(outputY(answered), y.data, 1e-4, 1e-3) <= 1, 'outputs differ from the reference');
    assert.deepEqual(dropped, [1]);
  });

  it('a dead-lettered request, and each member of a dead-lettered bundle, is answered POISON_INPUT once', async () => {
    const topo = topology(mesh.namespace, DURABILITY);
    // As the broker dead-letters a message from a request queue (what the worker reads of it).
    const deadFrom = { 'x-first-death-queue': topo.requests('tiny'), 'x-first-death-reason': 'delivery_limit' };
    const single = producer.request('tiny');
    const { members, correlationId, body } = bundleOf(2);
    await producer.publish(topo.deadLetterQueue, single.body, deadFrom);
    await producer.publish(topo.deadLetterQueue, body, deadFrom);
    const ids = [single.id, ...members.map((m) => m.id)];
    await producer.waitAll(ids, 30_000);
    await new Promise((r) => setTimeout(r, 300));
    for (const id of ids) {
      assert.equal(producer.count(id), 1);
      assert.deepEqual(producer.replies.find((r) => r.id === id)?.error, {
        code: 'POISON_INPUT',
        message: `the request carrying this request was dead-lettered after the delivery limit of ${DEFAULT_DELIVERY_LIMIT} redeliveries: every worker that ran it crashed or gave it back`,
      });
    }
    assert.equal(producer.count(correlationId), 0);
  });

  it('a batch of another version is dead-lettered and its members answered PROTOCOL_MISMATCH once', async () => {
    const member = producer.request('tiny');
    const batch = {
      v: PROTOCOL_VERSION + 1,
      batchId: randomUUID(),
      model: 'tiny',
      version: '1',
      tier: 1,
      rows: 1,
      members: [{ id: member.id, rows: 1, body: member.body }],
      formedAt: Date.now(),
    } as unknown as BatchMessage;
    assert.equal(decode<InferRequestMessage>(member.body).v, PROTOCOL_VERSION);
    await producer.publish(topology(mesh.namespace, DURABILITY).batches('tiny'), encode(batch));
    await producer.waitAll([member.id], 30_000);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(producer.count(member.id), 1);
    assert.deepEqual(producer.replies.find((r) => r.id === member.id)?.error, {
      code: 'PROTOCOL_MISMATCH',
      message: mismatch(PROTOCOL_VERSION + 1, 'batch'),
    });
    assert.ok(mesh.lines.some((l) => l.includes('batch of another protocol version dead-lettered')));
  });

  it('malformed messages on the request and batch queues are dead-lettered; the services keep serving', async () => {
    const topo = topology(mesh.namespace, DURABILITY);
    const lines = [
      '"msg":"undecodable request dead-lettered"',
      '"msg":"undecodable batch dead-lettered"',
      DEAD_REQUEST_DROPPED,
      '"msg":"undecodable dead batch dropped: nobody to answer"',
    ];
    // An earlier case logs some of these lines too: only this case's count.
    const before = logged(lines);
    await producer.publish(topo.requests('tiny'), Buffer.from('not msgpack \xc1'));
    await producer.publish(topo.batches('tiny'), encode({ v: PROTOCOL_VERSION, hello: 'world' }));
    assert.deepEqual(await loggedSince(lines, before), [1, 1, 1, 1]);
    const ok = await producer.send('tiny', { seed: 5 });
    await producer.waitAll([ok.id], 30_000);
    assert.equal(producer.replies.find((r) => r.id === ok.id)?.error, undefined);
    for (const s of mesh.services) assert.equal(s.child.exitCode, null, `${s.name} exited`);
  });
});
