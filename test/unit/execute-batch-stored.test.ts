import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { demoModel, sampleInputs } from '@ge-mesh/demo-models';
import { loadModel } from '@ge-mesh/model-repository';
import {
  type BatchMessage,
  decodeResponses,
  encode,
  type InferRequestMessage,
  PROTOCOL_VERSION,
  storedEnvelope,
} from '@ge-mesh/protocol';
import { BufferPool, type Engine, type EngineModelSpec } from '@ge-mesh/runtime';
import { createEngine } from '../../services/worker/src/engines.js';
import { executeBatch, STORED_REQUEST_LOST, type StoredRequests } from '../../services/worker/src/execute-batch.js';
import { tinyRequest } from '../support/batcher-fixtures.js';
import { engineSpecOf } from '../support/engine-spec.js';
import { DEMO_REPOSITORY } from '../support/mesh-harness.js';
import { Reference, toleranceRatio } from '../support/reference.js';

/**
 * A lane runs a batch whose members travelled whole, beside it (their
 * envelope in the batch, the request from Redis) or were lost from Redis:
 * each is answered once, the first two with onnxruntime's outputs computed
 * independently, the lost one with a typed, retryable error.
 */
describe('a lane runs stored requests', () => {
  let spec: EngineModelSpec;
  let engine: Engine;
  const ref = new Reference();

  before(async () => {
    spec = engineSpecOf(await loadModel(DEMO_REPOSITORY, 'tiny'), { threads: 1 });
    engine = await createEngine({ ...spec, runtime: 'ort' });
  });
  after(async () => {
    await engine?.close();
    await ref.close();
  });

  it('answers inline and stored members with the model outputs, and a lost one with UNAVAILABLE', async () => {
    const [inline, stored, lost] = [1, 2, 3].map((seed) => tinyRequest({ seed, replyTo: 'replies' })) as [
      InferRequestMessage,
      InferRequestMessage,
      InferRequestMessage,
    ];
    const batch: BatchMessage = {
      v: PROTOCOL_VERSION,
      batchId: 'b1',
      model: 'tiny',
      version: '1',
      tier: 4,
      rows: 3,
      members: [
        { id: inline.id, rows: 1, body: encode(inline) },
        { id: stored.id, rows: 1, body: encode(storedEnvelope(stored)), stored: true },
        { id: lost.id, rows: 1, body: encode(storedEnvelope(lost)), stored: true },
      ],
      formedAt: Date.now(),
    };
    const bodies: StoredRequests = new Map([
      [stored.id, encode(stored)],
      [lost.id, null],
    ]);
    const groups = await executeBatch(spec, engine, new BufferPool(), encode(batch), Date.now(), undefined, bodies);
    assert.equal(groups.length, 1);
    const answers = new Map(decodeResponses(groups[0]?.body ?? new Uint8Array()).map((r) => [r.id, r]));
    assert.deepEqual([...answers.keys()].sort(), [inline.id, lost.id, stored.id].sort());
    assert.deepEqual(answers.get(lost.id)?.error, { code: 'UNAVAILABLE', message: STORED_REQUEST_LOST });
    for (const [id, seed] of [
      [inline.id, 1],
      [stored.id, 2],
    ] as const) {
      const y = answers.get(id)?.outputs?.find((o) => o.name === 'y');
      assert.ok(y, `${id}: no output y`);
      const got = new Float32Array(Uint8Array.from(y.data).buffer);
      const expected = (await ref.run('tiny', sampleInputs(demoModel('tiny'), 1, seed))).y?.data ?? new Float32Array();
      assert.equal(got.length, expected.length);
      assert.ok(toleranceRatio(got, expected, 1e-5, 1e-4) <= 1, `${id}: differs from onnxruntime`);
    }
  });
});
