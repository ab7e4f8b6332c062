import assert from 'node:assert/strict';
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { demoModel, sampleInputs } from '@ge-mesh/demo-models';
import { encodeModel, GraphBuilder, makeModel } from '@ge-mesh/onnx';
import * as ort from 'onnxruntime-node';
import { tiersConfig, writeTinyVariant } from '../support/batcher-fixtures.js';
import { httpCall } from '../support/http-call.js';
import { DEMO_REPOSITORY, startTestMesh, type TestMesh } from '../support/mesh-harness.js';
import { jsonInferBody, Reference, toleranceRatio } from '../support/reference.js';

/**
 * Ensembles through the whole mesh: the demo `preprocess → resnet18`
 * pipeline equals calling the two models in turn; a diamond DAG (two
 * independent steps, then a step joining them) equals its reference; a
 * failing step's error names it; an ensemble that does not check out is
 * UNAVAILABLE in the index with the reason. Every step is a request of its
 * model through its batcher (the step models' statistics count them).
 */
const BATCHING = tiersConfig([1, 2, 4, 8]);

/** sum = a + b, both [N,4]: the join of the diamond. */
function addModel(): Uint8Array {
  const g = new GraphBuilder('add');
  const a = g.input('a', 'FP32', ['batch', 4]);
  const b = g.input('b', 'FP32', ['batch', 4]);
  g.op('Add', [a, b], {}, 'sum');
  g.output('sum', 'FP32', ['batch', 4]);
  return encodeModel(makeModel(g.build(), { producerName: 'ge-mesh-tests' }));
}

/** w = 2·v with v [N,k] of any k: lets a wrong width through to the next step. */
function doubleModel(): Uint8Array {
  const g = new GraphBuilder('double');
  const v = g.input('v', 'FP32', ['batch', 'k']);
  g.op('Mul', [v, g.floats('two', [1], [2])], {}, 'w');
  g.output('w', 'FP32', ['batch', 'k']);
  return encodeModel(makeModel(g.build(), { producerName: 'ge-mesh-tests' }));
}

async function writeModel(dir: string, name: string, config: string, bytes?: Uint8Array): Promise<void> {
  await mkdir(join(dir, name, '1'), { recursive: true });
  if (bytes) await writeFile(join(dir, name, '1', 'model.onnx'), bytes);
  await writeFile(join(dir, name, 'config.pbtxt'), config);
}

const io = (role: 'input' | 'output', name: string, type: string, dims: number[]) =>
  `${role} { name: "${name}" data_type: ${type} dims: [ ${dims.join(', ')} ] }\n`;
const step = (model: string, inputs: Record<string, string>, outputs: Record<string, string>) =>
  `  step { model_name: "${model}" model_version: -1 ${Object.entries(inputs)
    .map(([k, v]) => `input_map { key: "${k}" value: "${v}" } `)
    .join('')}${Object.entries(outputs)
    .map(([k, v]) => `output_map { key: "${k}" value: "${v}" } `)
    .join('')}}\n`;

describe('ensembles through the mesh', { timeout: 300_000 }, () => {
  let mesh: TestMesh;
  let dir: string;
  const ref = new Reference();
  let addSession: ort.InferenceSession;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gemesh-ensembles-'));
    for (const m of ['preprocess', 'resnet18']) {
      await mkdir(join(dir, m, '1'), { recursive: true });
      await copyFile(join(DEMO_REPOSITORY, m, 'config.pbtxt'), join(dir, m, 'config.pbtxt'));
      await copyFile(join(DEMO_REPOSITORY, m, '1', 'model.onnx'), join(dir, m, '1', 'model.onnx'));
    }
    await mkdir(join(dir, 'preprocess_resnet18', '1'), { recursive: true });
    await copyFile(
      join(DEMO_REPOSITORY, 'preprocess_resnet18', 'config.pbtxt'),
      join(dir, 'preprocess_resnet18', 'config.pbtxt'),
    );
    await writeTinyVariant(dir, 'tiny_a', BATCHING);
    await writeTinyVariant(dir, 'tiny_b', BATCHING);
    const add = addModel();
    await writeModel(
      dir,
      'add',
      `backend: "onnxruntime"\n${BATCHING}\n${io('input', 'a', 'TYPE_FP32', [4])}${io('input', 'b', 'TYPE_FP32', [4])}${io('output', 'sum', 'TYPE_FP32', [4])}`,
      add,
    );
    addSession = await ort.InferenceSession.create(add);
    await writeModel(
      dir,
      'double',
      `backend: "onnxruntime"\n${BATCHING}\n${io('input', 'v', 'TYPE_FP32', [-1])}${io('output', 'w', 'TYPE_FP32', [-1])}`,
      doubleModel(),
    );
    // The join is listed first: steps run in dependency order, not in the order written.
    await writeModel(
      dir,
      'diamond',
      `platform: "ensemble"\nmax_batch_size: 8\n${io('input', 'x', 'TYPE_FP32', [16])}${io('output', 'total', 'TYPE_FP32', [4])}${io('output', 'left', 'TYPE_FP32', [4])}` +
        `ensemble_scheduling {\n${step('add', { a: 'left', b: 'right' }, { sum: 'total' })}${step('tiny_a', { x: 'x' }, { y: 'left' })}${step('tiny_b', { x: 'x' }, { y: 'right' })}}\n`,
    );
    await writeModel(
      dir,
      'loose',
      `platform: "ensemble"\nmax_batch_size: 8\n${io('input', 'x', 'TYPE_FP32', [-1])}${io('output', 'y', 'TYPE_FP32', [4])}` +
        `ensemble_scheduling {\n${step('double', { v: 'x' }, { w: 'doubled' })}${step('tiny_a', { x: 'doubled' }, { y: 'y' })}}\n`,
    );
    await writeModel(
      dir,
      'broken',
      `platform: "ensemble"\nmax_batch_size: 8\n${io('input', 'x', 'TYPE_FP32', [16])}${io('output', 'y', 'TYPE_FP32', [4])}${io('output', 'z', 'TYPE_FP32', [4])}` +
        `ensemble_scheduling {\n${step('tiny_a', { x: 'x' }, { y: 'y' })}${step('nowhere', { x: 'x' }, { y: 'z' })}}\n`,
    );
    mesh = await startTestMesh({
      modelRepository: dir,
      models: ['preprocess', 'resnet18', 'tiny_a', 'tiny_b', 'add', 'double'],
      workers: 1,
    });
  });
  after(async () => {
    await addSession?.release();
    await ref.close();
    await mesh?.teardown();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const infer = async (model: string, body: string) => {
    const { status, text } = await httpCall(mesh.url, 'POST', `/v2/models/${model}/infer`, body);
    return { status, body: JSON.parse(text) as Record<string, unknown> };
  };
  type Out = { name: string; datatype: string; shape: number[]; data: number[] };
  const stats = async (model: string) => {
    const { text } = await httpCall(mesh.url, 'GET', `/v2/models/${model}/stats`);
    const s = (JSON.parse(text) as { model_stats: Array<Record<string, unknown>> }).model_stats[0] as {
      inference_count: number;
      execution_count: number;
      inference_stats: { success: { count: number } };
    };
    return { success: s.inference_stats.success.count, inferences: s.inference_count };
  };

  it('preprocess_resnet18 equals preprocess then resnet18, each run directly by onnxruntime', async () => {
    const image = sampleInputs(demoModel('preprocess'), 2, 7);
    const res = await infer('preprocess_resnet18', jsonInferBody(image));
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const out = (res.body.outputs as Out[])[0] as Out;
    assert.deepEqual(
      [res.body.model_name, out.name, out.datatype, out.shape],
      ['preprocess_resnet18', 'logits', 'FP32', [2, 1000]],
    );
    const pixels = (await ref.run('preprocess', image)).pixels as { data: Float32Array; dims: readonly number[] };
    const want = (
      await ref.run('resnet18', [{ name: 'input', dataType: 'FP32', dims: [...pixels.dims], data: pixels.data }])
    ).logits?.data as Float32Array;
    assert.ok(toleranceRatio(out.data, want, 1e-4, 1e-3) <= 1, 'logits differ from the two models run in turn');
    // One ensemble request; each step one request of its model (2 rows each).
    assert.deepEqual(await stats('preprocess_resnet18'), { success: 1, inferences: 2 });
    assert.deepEqual(await stats('preprocess'), { success: 1, inferences: 2 });
    assert.deepEqual(await stats('resnet18'), { success: 1, inferences: 2 });
  });

  it('a diamond DAG: two independent steps, then the step joining them; outputs as asked', async () => {
    const x = sampleInputs(demoModel('tiny'), 3, 21);
    const y = (await ref.run('tiny', x)).y?.data as Float32Array;
    const sum = (
      await addSession.run({ a: new ort.Tensor('float32', y, [3, 4]), b: new ort.Tensor('float32', y, [3, 4]) })
    ).sum?.data as Float32Array;
    const res = await infer('diamond', jsonInferBody(x));
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const outs = res.body.outputs as Out[];
    assert.deepEqual(
      outs.map((o) => [o.name, o.shape]),
      [
        ['total', [3, 4]],
        ['left', [3, 4]],
      ],
    );
    assert.ok(toleranceRatio(outs[0]?.data ?? [], sum, 1e-5, 1e-4) <= 1, 'total = tiny(x) + tiny(x)');
    assert.ok(toleranceRatio(outs[1]?.data ?? [], y, 1e-5, 1e-4) <= 1, 'left = tiny(x)');
    const only = await infer('diamond', jsonInferBody(x, { outputs: [{ name: 'total' }] }));
    assert.deepEqual(
      (only.body.outputs as Out[]).map((o) => o.name),
      ['total'],
    );
    assert.deepEqual(await stats('add'), { success: 2, inferences: 6 });
  });

  it("a failing step's error names the ensemble, the step and its model, with the model's own message", async () => {
    const res = await infer(
      'loose',
      JSON.stringify({ inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 8], data: Array(8).fill(0.5) }] }),
    );
    assert.equal(res.status, 400);
    assert.equal(
      res.body.error,
      "ensemble 'loose' step 2 ('tiny_a') failed: unexpected shape for input 'x' for model 'tiny_a'. Expected [-1,16], got [1,8]. NOTE: Setting a non-zero max_batch_size in the model config requires a batch dimension to be prepended to each input shape. If you want to specify the full shape including the batch dim in your input dims config, try setting max_batch_size to zero. See the model configuration docs for more info on max_batch_size.",
    );
    // Step 1 ran (and counted); step 2 was refused before it was queued.
    assert.deepEqual(await stats('double'), { success: 1, inferences: 1 });
  });

  it('shows ensembles as Triton does: platform "ensemble" in metadata and config, READY in the index; a bad one UNAVAILABLE with the reason', async () => {
    const meta = JSON.parse((await httpCall(mesh.url, 'GET', '/v2/models/diamond')).text) as Record<string, unknown>;
    assert.deepEqual(meta, {
      name: 'diamond',
      versions: ['1'],
      platform: 'ensemble',
      inputs: [{ name: 'x', datatype: 'FP32', shape: [-1, 16] }],
      outputs: [
        { name: 'total', datatype: 'FP32', shape: [-1, 4] },
        { name: 'left', datatype: 'FP32', shape: [-1, 4] },
      ],
    });
    const config = JSON.parse((await httpCall(mesh.url, 'GET', '/v2/models/preprocess_resnet18/config')).text) as {
      platform: string;
      backend: string;
      ensemble_scheduling: { step: Array<{ model_name: string; model_version: number; input_map: object }> };
    };
    assert.equal(config.platform, 'ensemble');
    assert.equal(config.backend, '');
    assert.deepEqual(
      config.ensemble_scheduling.step.map((s) => [s.model_name, s.model_version, s.input_map]),
      [
        ['preprocess', -1, { image: 'image' }],
        ['resnet18', -1, { input: 'pixels' }],
      ],
    );
    const index = JSON.parse((await httpCall(mesh.url, 'POST', '/v2/repository/index', {})).text) as Array<{
      name: string;
      state: string;
      reason?: string;
    }>;
    const row = (name: string) => index.find((r) => r.name === name);
    assert.equal(row('diamond')?.state, 'READY');
    assert.equal(row('preprocess_resnet18')?.state, 'READY');
    assert.deepEqual(row('broken'), {
      name: 'broken',
      state: 'UNAVAILABLE',
      reason:
        "broken/config.pbtxt:8:22: step 2 ('nowhere') names a model that is not in the repository (or did not load)",
    });
    assert.equal((await httpCall(mesh.url, 'GET', '/v2/models/diamond/ready')).status, 200);
  });

  it('an ensemble is ready only while every step model is: unloading one makes it unavailable', async () => {
    assert.equal((await httpCall(mesh.url, 'POST', '/v2/repository/models/tiny_b/unload', {})).status, 200);
    const index = JSON.parse((await httpCall(mesh.url, 'POST', '/v2/repository/index', {})).text) as Array<{
      name: string;
      state: string;
      reason?: string;
    }>;
    assert.deepEqual(
      index.find((r) => r.name === 'diamond'),
      { name: 'diamond', version: '1', state: 'UNAVAILABLE', reason: "step model 'tiny_b' is not ready" },
    );
    const res = await infer('diamond', jsonInferBody(sampleInputs(demoModel('tiny'), 1, 3)));
    assert.deepEqual(
      [res.status, res.body.error],
      [404, "Request for unknown model: 'diamond' has no available versions"],
    );
    // Loading the ensemble loads the step model it lacks, as Triton does.
    const load = await httpCall(mesh.url, 'POST', '/v2/repository/models/diamond/load', {});
    assert.equal(load.status, 200, load.text);
    assert.equal((await httpCall(mesh.url, 'GET', '/v2/models/tiny_b/ready')).status, 200);
    const again = await infer('diamond', jsonInferBody(sampleInputs(demoModel('tiny'), 1, 3)));
    assert.equal(again.status, 200, JSON.stringify(again.body));
  });
});
