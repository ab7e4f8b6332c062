import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { topology } from '@ge-mesh/broker';
import { demoModel, sampleInputs } from '@ge-mesh/demo-models';
import { type BatchMessage, decode, encode, type InferRequestMessage, PROTOCOL_VERSION } from '@ge-mesh/protocol';
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
    await producer.publish(topo.requests('tiny'), Buffer.from('not msgpack \xc1'));
    await producer.publish(topo.batches('tiny'), encode({ v: PROTOCOL_VERSION, hello: 'world' }));
    const seen = (text: string) => mesh.lines.some((l) => l.includes(text));
    for (let i = 0; i < 100 && !(seen('dead request dropped') && seen('dead batch dropped')); i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(seen('"msg":"undecodable request dead-lettered"'));
    assert.ok(seen('"msg":"undecodable batch dead-lettered"'));
    assert.ok(seen('"msg":"undecodable dead request dropped: nobody to answer"'));
    assert.ok(seen('"msg":"undecodable dead batch dropped: nobody to answer"'));
    const ok = await producer.send('tiny', { seed: 5 });
    await producer.waitAll([ok.id], 30_000);
    assert.equal(producer.replies.find((r) => r.id === ok.id)?.error, undefined);
    for (const s of mesh.services) assert.equal(s.child.exitCode, null, `${s.name} exited`);
  });
});
