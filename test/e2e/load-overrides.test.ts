import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { demoModel, sampleInputs } from '@ge-mesh/demo-models';
import { Redis } from 'ioredis';
import { tiersConfig, tinyVariants } from '../support/batcher-fixtures.js';
import { httpCall } from '../support/http-call.js';
import { DEMO_REPOSITORY, REDIS_URL, startTestMesh, type TestMesh } from '../support/mesh-harness.js';
import { jsonInferBody, Reference, toleranceRatio } from '../support/reference.js';

/**
 * Triton's load parameters through the whole mesh: a `config` JSON override
 * that every service applies (gateway checks, batcher tiers), and model files
 * pushed with the request (`file:<version>/<name>`, base64), stored in Redis
 * so a worker on any host loads them; a plain load returns to the repository.
 */
describe('load with a config override and pushed files', { timeout: 240_000 }, () => {
  let mesh: TestMesh;
  let repo: Awaited<ReturnType<typeof tinyVariants>>;
  const ref = new Reference();

  before(async () => {
    repo = await tinyVariants({ tiny: tiersConfig([1, 2, 4, 8]) });
    mesh = await startTestMesh({ modelRepository: repo.dir, models: ['tiny', 'pushed'], workers: 1 });
  });
  after(async () => {
    await ref.close();
    await mesh?.teardown();
    await repo?.remove();
  });

  const load = (model: string, parameters?: Record<string, unknown>) =>
    httpCall(mesh.url, 'POST', `/v2/repository/models/${model}/load`, parameters ? { parameters } : undefined);
  /** Infers `rows` rows of tiny's sample inputs and checks the answer against onnxruntime. */
  const inferChecked = async (model: string, rows: number, seed: number) => {
    const inputs = sampleInputs(demoModel('tiny'), rows, seed);
    const { status, text } = await httpCall(mesh.url, 'POST', `/v2/models/${model}/infer`, jsonInferBody(inputs));
    assert.equal(status, 200, text);
    const y = (JSON.parse(text) as { outputs: Array<{ data: number[] }> }).outputs[0]?.data ?? [];
    const want = (await ref.run('tiny', inputs)).y?.data as Float32Array;
    assert.ok(toleranceRatio(y, want, 1e-5, 1e-4) <= 1, `${model}: answer differs from onnxruntime`);
  };
  const config = async (model: string) =>
    JSON.parse((await httpCall(mesh.url, 'GET', `/v2/models/${model}/config`)).text) as {
      max_batch_size: number;
      dynamic_batching: { preferred_batch_size: number[]; max_queue_delay_microseconds: number };
    };

  it('a config override: every service serves the model under it; a plain load returns to the repository', async () => {
    const override = {
      backend: 'onnxruntime',
      max_batch_size: 4,
      dynamic_batching: { preferred_batch_size: [2, 4], max_queue_delay_microseconds: '2500' },
    };
    const res = await load('tiny', { config: JSON.stringify(override) });
    assert.deepEqual(res, { status: 200, text: '' });
    const c = await config('tiny');
    assert.deepEqual(
      [c.max_batch_size, c.dynamic_batching.preferred_batch_size, c.dynamic_batching.max_queue_delay_microseconds],
      [4, [2, 4], 2500],
    );
    // The batcher takes the new tiers once the worker reports them ready (its own notification).
    const batching = () =>
      mesh.lines.some(
        (l) =>
          l.startsWith('[batcher]') &&
          l.includes('"msg":"model config changed: batching with the new one"') &&
          l.includes('"tiers":[2,4]'),
      );
    for (let i = 0; i < 100 && !batching(); i++) await new Promise((r) => setTimeout(r, 100));
    assert.ok(batching(), mesh.lines.filter((l) => l.startsWith('[batcher]')).join('\n'));
    await inferChecked('tiny', 3, 5);
    const tooMany = await httpCall(
      mesh.url,
      'POST',
      '/v2/models/tiny/infer',
      jsonInferBody(sampleInputs(demoModel('tiny'), 8, 6)),
    );
    assert.deepEqual(
      [tooMany.status, JSON.parse(tooMany.text).error],
      [400, "inference request batch-size must be <= 4 for 'tiny'"],
    );

    assert.deepEqual(await load('tiny'), { status: 200, text: '' });
    assert.equal((await config('tiny')).max_batch_size, 8);
    await inferChecked('tiny', 8, 7);
  });

  it("pushed files: a model that is in no repository, served from the request's bytes, kept in Redis", async () => {
    const bytes = await readFile(join(DEMO_REPOSITORY, 'tiny', '1', 'model.onnx'));
    const res = await load('pushed', {
      config: JSON.stringify({ backend: 'onnxruntime', max_batch_size: 8, dynamic_batching: {} }),
      'file:1/model.onnx': bytes.toString('base64'),
    });
    assert.deepEqual(res, { status: 200, text: '' });
    await inferChecked('pushed', 2, 11);
    const meta = JSON.parse((await httpCall(mesh.url, 'GET', '/v2/models/pushed')).text) as Record<string, unknown>;
    assert.deepEqual(meta.inputs, [{ name: 'x', datatype: 'FP32', shape: [-1, 16] }]);
    // Every service reads the files from Redis, not from the gateway's disk.
    const redis = new Redis(REDIS_URL);
    try {
      const stored = await redis.hgetBuffer(`{${mesh.namespace}}:override:pushed`, 'file:1/model.onnx');
      assert.ok(stored?.equals(bytes), 'the pushed file is stored in Redis byte for byte');
    } finally {
      redis.disconnect();
    }
  });

  it('refuses what Triton refuses, saying what to send', async () => {
    const bytes = Buffer.from('onnx').toString('base64');
    const error = async (model: string, parameters: Record<string, unknown>) => {
      const r = await load(model, parameters);
      return [r.status, (JSON.parse(r.text) as { error: string }).error];
    };
    assert.deepEqual(await error('pushed2', { 'file:1/model.onnx': bytes }), [
      400,
      "failed to load 'pushed2', model files sent with the request need a 'config' parameter too (the files and the config replace the model's folder)",
    ]);
    assert.deepEqual(await error('pushed2', { config: '{"backend": "onnxruntime"', 'file:1/model.onnx': bytes }), [
      400,
      "failed to load 'pushed2', the config is not JSON: Expected ',' or '}' after property value in JSON at position 25",
    ]);
    assert.deepEqual(await error('pushed2', { config: '{"backend": "onnxruntime", "inputs": []}' }), [
      400,
      "failed to load 'pushed2', ModelConfig has no field 'inputs' (JSON configs use the .proto's field names or their lowerCamelCase JSON names, e.g. max_batch_size or maxBatchSize)",
    ]);
    assert.deepEqual(await error('pushed2', { config: '{"backend": "onnxruntime"}', 'file:../model.onnx': bytes }), [
      400,
      "failed to load 'pushed2', a pushed file is named file:<version>/<name> (e.g. file:1/model.onnx), with a numeric version and no '..'; found file:../model.onnx",
    ]);
    assert.deepEqual(await error('pushed2', { config: '{"backend": "onnxruntime"}', 'file:1/model.onnx': 42 }), [
      400,
      "failed to load 'pushed2', parameter 'file:1/model.onnx' must be the file's contents in base64",
    ]);
  });
});
