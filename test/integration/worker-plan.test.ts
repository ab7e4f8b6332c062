import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ConfigError, parseModelConfig, type RepositoryModel } from '@ge-mesh/model-repository';
import { type BatchMessage, decode, type InferRequestMessage } from '@ge-mesh/protocol';
import { detectDeviceCount, deviceKind, explicitDevices } from '../../services/worker/src/devices.js';
import { coreBudget, placeModel, threadsPerLane } from '../../services/worker/src/lane-plan.js';
import { warmupBatch, warmupSamples } from '../../services/worker/src/warmup.js';

/**
 * The worker's plan for a model, as pure functions: which of its devices
 * load it and with how many lanes (the GE backend's rule), threads per lane,
 * device detection, and the warmup samples (every tier, then Triton's
 * model_warmup).
 */
const IO = `input [{ name: "x" data_type: TYPE_FP32 dims: [ 16 ] }]
output [{ name: "y" data_type: TYPE_FP32 dims: [ 4 ] }]
max_batch_size: 8
dynamic_batching { preferred_batch_size: [ 1, 4, 8 ] }`;

const config = (body: string, backend = 'onnxruntime') =>
  parseModelConfig(`backend: "${backend}"\n${IO}\n${body}`, { file: 'm/config.pbtxt', modelName: 'm' });
const params = (kv: Record<string, string>) =>
  `parameters [${Object.entries(kv)
    .map(([k, v]) => `{ key: "${k}" value: { string_value: "${v}" } }`)
    .join(', ')}]`;

describe('worker plan: placement, lanes, threads, devices', () => {
  it('lanes per device = ceil(Σ instance_group count × instance_exec_blocks / devices that may load it)', () => {
    const c4 = config('instance_group [{ count: 3 }, { count: 1 }]');
    assert.deepEqual(placeModel(c4, [0], 1), { devices: [0], lanesPerDevice: 4 });
    assert.deepEqual(placeModel(c4, [2], 3), { devices: [2], lanesPerDevice: 2 });
    assert.deepEqual(placeModel(c4, [0, 1], 8), { devices: [0, 1], lanesPerDevice: 1 });
    // instance_exec_blocks multiplies (ort reads it; the ge runtime refuses values above 1).
    assert.deepEqual(
      placeModel(config(`instance_group [{ count: 3 }]\n${params({ instance_exec_blocks: '2' })}`), [1], 4),
      {
        devices: [1],
        lanesPerDevice: 2,
      },
    );
    // No instance_group: one instance.
    assert.deepEqual(placeModel(config(''), [5], 8), { devices: [5], lanesPerDevice: 1 });
  });

  it('device_ids restricts the devices and is the device count of the rule; device_exec_blocks overrides it', () => {
    const pinned = config(`instance_group [{ count: 4 }]\n${params({ device_ids: '1,3' })}`);
    assert.deepEqual(placeModel(pinned, [0, 1], 4), { devices: [1], lanesPerDevice: 2 });
    assert.deepEqual(placeModel(pinned, [0, 2], 4), { devices: [], lanesPerDevice: 2 });
    const blocks = config(`instance_group [{ count: 4 }]\n${params({ device_ids: '3', device_exec_blocks: '3' })}`);
    assert.deepEqual(placeModel(blocks, [3], 4), { devices: [3], lanesPerDevice: 3 });
    assert.deepEqual(placeModel(config(params({ device_exec_blocks: '-1' })), [0], 2), {
      devices: [0],
      lanesPerDevice: 1,
    });
    // The same rule on runtime ge, from the checked GE backend parameters.
    const ge = config(`instance_group [{ count: 8 }]\n${params({ device_ids: '0,1,2,3' })}`, 'npu_ge');
    assert.deepEqual(placeModel(ge, [2], 8), { devices: [2], lanesPerDevice: 2 });
    const geBlocks = config(params({ device_exec_blocks: '4' }), 'npu_ge');
    assert.deepEqual(placeModel(geBlocks, [7], 8), { devices: [7], lanesPerDevice: 4 });
  });

  it('refuses malformed device keys when the config loads, naming the key, on every runtime', () => {
    for (const backend of ['onnxruntime', 'npu_ge']) {
      for (const [kv, key, msg] of [
        [{ device_ids: '0,x' }, 'device_ids', `parameter 'device_ids' must be an integer >= 0, got "x"`],
        [{ device_ids: '1,1' }, 'device_ids', `parameter 'device_ids' lists a device twice: "1,1"`],
        [
          { device_exec_blocks: '0' },
          'device_exec_blocks',
          `parameter 'device_exec_blocks' must be -1 (derive) or >= 1, got "0"`,
        ],
      ] as const) {
        assert.throws(
          () => config(params(kv), backend),
          (e: unknown) => e instanceof ConfigError && e.field === `parameters["${key}"]` && e.message.endsWith(msg),
          `${backend} ${key}`,
        );
      }
    }
  });

  it('threads per lane: lanes × threads fit the worker share of the cores, at least one each', () => {
    assert.equal(coreBudget(0, 16, 1, 4), 4);
    assert.equal(coreBudget(0, 16, 2, 4), 8);
    assert.equal(coreBudget(0, 2, 1, 3), 1);
    assert.equal(coreBudget(6, 16, 1, 4), 6);
    assert.equal(threadsPerLane(8, 3), 2);
    assert.equal(threadsPerLane(4, 4), 1);
    assert.equal(threadsPerLane(1, 4), 1);
  });

  it('devices: explicit ids, kinds, and the device count detected per runtime', () => {
    assert.deepEqual(explicitDevices('', -1), null);
    assert.deepEqual(explicitDevices('', 3), [3]);
    assert.deepEqual(explicitDevices('2,0,2', 3), [2, 0]);
    assert.equal(deviceKind('ge'), 'npu');
    assert.equal(deviceKind('ort'), 'cpu');
    assert.equal(detectDeviceCount('ort', {}), availableParallelism());
    assert.equal(detectDeviceCount('ge', { ASCEND_RT_VISIBLE_DEVICES: '0,2,5' }), 3);
    // This machine has no /dev/davinci<N>: the simulator's count.
    assert.equal(detectDeviceCount('ge', { GEMESH_SIM_DEVICES: '8' }), 8);
    assert.equal(detectDeviceCount('ge', {}), 2);
  });
});

describe('worker warmup samples', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gemesh-warmup-'));
    await mkdir(join(dir, 'warmup'));
    const sample = new Float32Array(16).map((_, i) => i / 16);
    await writeFile(join(dir, 'warmup', 'x.bin'), new Uint8Array(sample.buffer));
    await writeFile(join(dir, 'warmup', 'short.bin'), new Uint8Array(10));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  const model = (body: string): RepositoryModel => ({
    name: 'm',
    dir,
    config: config(body),
    versions: [{ version: '1', modelPath: join(dir, '1', 'model.onnx') }],
  });
  const warmup = (entries: string) => `model_warmup [ ${entries} ]`;

  it('warms every tier with zeros, then each model_warmup sample count times', async () => {
    const samples = await warmupSamples(
      model(
        warmup(`
        { name: "zeros" batch_size: 2 inputs { key: "x" value: { data_type: TYPE_FP32 dims: [ 16 ] zero_data: true } } },
        { name: "rand" batch_size: 5 inputs { key: "x" value: { data_type: TYPE_FP32 dims: [ 16 ] random_data: true } } count: 3 },
        { name: "file" batch_size: 1 inputs { key: "x" value: { data_type: TYPE_FP32 dims: [ 16 ] input_data_file: "x.bin" } } },
        { name: "skipped, as Triton skips batch_size 0" inputs { key: "x" value: { data_type: TYPE_FP32 dims: [ 16 ] zero_data: true } } }`),
      ),
    );
    assert.deepEqual(
      samples.map((s) => [s.name, s.rows, s.inputs[0]?.shape]),
      [
        ['tier 1', 1, [1, 16]],
        ['tier 4', 4, [4, 16]],
        ['tier 8', 8, [8, 16]],
        ['zeros', 2, [2, 16]],
        ['rand', 5, [5, 16]],
        ['rand', 5, [5, 16]],
        ['rand', 5, [5, 16]],
        ['file', 1, [1, 16]],
      ],
    );
    const f32 = (i: number) => {
      const d = samples[i]?.inputs[0]?.data ?? new Uint8Array();
      return new Float32Array(Uint8Array.from(d).buffer);
    };
    assert.ok(f32(2).every((v) => v === 0));
    assert.ok(f32(4).every((v) => v >= 0 && v < 1) && f32(4).some((v) => v > 0));
    assert.deepEqual([...f32(7)], [...new Float32Array(16).map((_, i) => i / 16)]);

    // As a one-member batch at the smallest tier that holds it, for the lane's normal path.
    const b = decode<BatchMessage>(warmupBatch(model(''), '1', samples[4] as (typeof samples)[number]));
    assert.deepEqual([b.tier, b.rows, b.members.length], [8, 5, 1]);
    const req = decode<InferRequestMessage>(b.members[0]?.body as Uint8Array);
    assert.deepEqual([req.batch, req.inputs[0]?.shape, req.deadline > Date.now() + 3_600_000], [5, [5, 16], true]);
  });

  it('refuses at load a sample above the largest tier or of a variable-size type, naming line and field', () => {
    const w = (extra: string, dt = 'TYPE_FP32') =>
      warmup(`{ name: "w" ${extra} inputs { key: "x" value: { data_type: ${dt} dims: [ 16 ] zero_data: true } } }`);
    assert.throws(
      () => config(w('batch_size: 9')),
      (e: unknown) =>
        e instanceof ConfigError &&
        e.field === 'model_warmup[0].batch_size' &&
        e.line === 6 &&
        e.detail === "warmup 'w' has batch_size 9, above the largest tier 8; lower it or add a tier",
    );
    assert.throws(
      () => config(w('batch_size: 1', 'TYPE_STRING')),
      (e: unknown) =>
        e instanceof ConfigError &&
        e.field === 'model_warmup[0].inputs["x"].data_type' &&
        /^warmup 'w' input 'x' has data_type TYPE_STRING; warmup needs a fixed-size type/.test(e.detail),
    );
    // Inputs the model has, every dim given and the config's, and a source of data; Triton refuses
    // the last three too (at load, or when the sample runs).
    const refusal = (entry: string, field: string, detail: RegExp) =>
      assert.throws(
        () => config(warmup(`{ name: "w" batch_size: 1 ${entry} }`)),
        (e: unknown) => e instanceof ConfigError && e.field === field && detail.test(e.detail),
      );
    refusal(
      'inputs { key: "q" value: { data_type: TYPE_FP32 dims: [ 16 ] zero_data: true } }',
      'model_warmup[0].inputs["q"]',
      /^warmup 'w' names input 'q', which the model does not have \(inputs: x\)$/,
    );
    refusal(
      'inputs { key: "x" value: { data_type: TYPE_FP32 dims: [ -1 ] zero_data: true } }',
      'model_warmup[0].inputs["x"].dims',
      /^warmup 'w' input 'x' has dims \[-1\]; the model's are \[16\]/,
    );
    refusal(
      'inputs { key: "x" value: { data_type: TYPE_FP32 dims: [ 8 ] zero_data: true } }',
      'model_warmup[0].inputs["x"].dims',
      /^warmup 'w' input 'x' has dims \[8\]/,
    );
    refusal(
      'inputs { key: "x" value: { data_type: TYPE_FP32 dims: [ 16 ] } }',
      'model_warmup[0].inputs["x"]',
      /^warmup 'w' input 'x' sets no data; set zero_data: true, random_data: true or input_data_file$/,
    );
    // The typed entry the worker reads.
    assert.deepEqual(config(w('batch_size: 3 count: 2')).warmup, [
      { name: 'w', rows: 3, count: 2, inputs: [{ name: 'x', dataType: 'FP32', dims: [16], data: { kind: 'zero' } }] },
    ]);
  });

  it('refuses an unreadable or wrong-sized warmup file when the warmup runs', async () => {
    const x = (file: string) =>
      warmup(
        `{ name: "w" batch_size: 1 inputs { key: "x" value: { data_type: TYPE_FP32 dims: [ 16 ] input_data_file: "${file}" } } }`,
      );
    await assert.rejects(warmupSamples(model(x('short.bin'))), {
      message: "model_warmup 'w': short.bin has 10 bytes, input 'x' needs 64",
    });
    await assert.rejects(warmupSamples(model(x('none.bin'))), /model_warmup 'w': cannot read none.bin/);
  });
});
