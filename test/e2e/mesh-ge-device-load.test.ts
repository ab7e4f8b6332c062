import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { batchTiers, deviceMemory, finalizeGe, GeModel, initGe } from '@ge-mesh/ge-bridge';
import { createPrng } from '@ge-mesh/onnx';
import { skipUnlessSimulator } from '../native/support.js';
import { denseReluModel } from '../support/dense-model.js';
import { startTestMesh, type TestMesh } from '../support/mesh-harness.js';
import { parsePrometheusText, sampleValue } from '../support/prometheus-text.js';

/**
 * One load per device through the worker: a model on 4 lanes and another on 1
 * lane, on one simulated NPU. The 4 lanes join one GE session (their load
 * lines count 1, 2, 3, 4 loads), and the device's HBM, as the worker reports
 * it, is the weights once per model plus one lane's buffers per lane. One
 * lane's buffers are measured here, in this process, by loading the same
 * model on the same tiers through the bridge; the weights are the
 * initializers' bytes under the simulator's allocation rule.
 */
const K = 512;
const N = 256;
const TIERS = [1, 4, 8];
const rng = createPrng(31);
const W = rng.floats(N * K, -0.1, 0.1);
const B = rng.floats(N, -0.1, 0.1);
const FP32 = { 'ge.exec.precision_mode_v2': 'origin' };
/** The simulator's aclrtMalloc charge (native/README.md): round_up(size, 32) + 32. */
const charge = (bytes: number) => Math.ceil(bytes / 32) * 32 + 32;
const WEIGHTS = charge(N * K * 4) + charge(N * 4);

const config = (name: string, lanes: number) =>
  [
    `name: "${name}"`,
    'backend: "npu_ge"',
    `max_batch_size: ${Math.max(...TIERS)}`,
    `input [{ name: "x" data_type: TYPE_FP32 dims: [ ${K} ] }]`,
    `output [{ name: "y" data_type: TYPE_FP32 dims: [ ${N} ] }]`,
    `dynamic_batching { preferred_batch_size: [ ${TIERS.join(', ')} ] }`,
    `parameters { key: "device_exec_blocks" value: { string_value: "${lanes}" } }`,
    'parameters { key: "session.ge.exec.precision_mode_v2" value: { string_value: "origin" } }',
    '',
  ].join('\n');

describe('one GE load per device through the worker (CANN simulator)', {
  timeout: 180_000,
  // Byte-exact HBM accounting is the simulator's.
  skip: skipUnlessSimulator,
}, () => {
  let dir = '';
  let mesh: TestMesh;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gemesh-device-load-'));
    const bytes = denseReluModel(K, N, W, B);
    for (const [name, lanes] of [
      ['dense_x4', 4],
      ['dense_x1', 1],
    ] as const) {
      await mkdir(join(dir, name, '1'), { recursive: true });
      await writeFile(join(dir, name, '1', 'model.onnx'), bytes);
      await writeFile(join(dir, name, 'config.pbtxt'), config(name, lanes));
    }
    mesh = await startTestMesh({
      modelRepository: dir,
      models: ['dense_x4', 'dense_x1'],
      env: { GEMESH_SIM_DEVICES: '1' },
      flags: { worker: ['--runtime', 'ge'] },
    });
  });
  after(async () => {
    await mesh?.teardown();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const loads = (model: string) =>
    mesh.lines
      .filter((l) => l.startsWith('[worker') && l.includes('GE model loaded') && l.includes(`"model":"${model}"`))
      .map((l) => JSON.parse(l.slice(l.indexOf('{'))) as { lane: number; tiers: number[]; sessionLoads: number });

  it("the 4 lanes of a model join one session, the other model's lane has its own", () => {
    const x4 = loads('dense_x4');
    // Each lane reports the session's loads when it logs (lanes load at once, so two may both read
    // 4): the lane that joined last reads all four, and none reads more; own sessions would read 1 each.
    const seen = x4.map((l) => l.sessionLoads);
    assert.equal(Math.max(...seen), 4, JSON.stringify(seen));
    assert.ok(
      seen.every((n) => n >= 1 && n <= 4),
      JSON.stringify(seen),
    );
    assert.deepEqual(x4.map((l) => l.lane).sort(), [0, 1, 2, 3]);
    assert.deepEqual(
      loads('dense_x1').map((l) => l.sessionLoads),
      [1],
    );
    for (const l of x4) assert.deepEqual(l.tiers, TIERS);
  });

  it('the device holds each model’s weights once and one set of buffers per lane', async () => {
    // One lane alone, loaded here on the tiers the worker compiled: weights + that lane's buffers.
    process.env.GEMESH_SIM_DEVICES = '1';
    initGe();
    let perLane = 0;
    try {
      const base = deviceMemory(0);
      const model = GeModel.load({
        modelPath: join(dir, 'dense_x1', '1', 'model.onnx'),
        deviceId: 0,
        streams: 1,
        inputs: [{ name: 'x', dataType: 'FP32' }],
        tiers: batchTiers([[K]], TIERS),
        sessionOptions: FP32,
      });
      perLane = base.freeBytes - deviceMemory(0).freeBytes - WEIGHTS;
      model.destroy();
    } finally {
      finalizeGe();
    }
    assert.ok(perLane > 0, `one lane's buffers: ${perLane} bytes`);

    const ready = mesh.lines.find((l) => l.startsWith('[worker-0]') && l.includes('"msg":"worker ready"')) ?? '';
    const port = Number(/"metricsPort":(\d+)/.exec(ready)?.[1]);
    const s = parsePrometheusText(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text());
    const used = sampleValue(s, 'gemesh_device_memory_used_bytes', { device: '0' });
    // dense_x4: weights once + 4 lanes' buffers; dense_x1: weights + 1 lane's. A session per lane would be 5 × weights.
    assert.equal(used, 2 * WEIGHTS + 5 * perLane);
  });

  it('answers through the shared session match the reference', async () => {
    const x = rng.floats(K, -1, 1);
    const answers = await Promise.all(
      Array.from({ length: 16 }, async () => {
        const res = await fetch(`${mesh.url}/v2/models/dense_x4/infer`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ inputs: [{ name: 'x', shape: [1, K], datatype: 'FP32', data: Array.from(x) }] }),
        });
        assert.equal(res.status, 200);
        const json = (await res.json()) as { outputs: { data: number[] }[] };
        return json.outputs[0]?.data ?? [];
      }),
    );
    for (const a of answers) assert.deepEqual(a, answers[0]);
    let want = 0;
    for (let k = 0; k < K; k++) want += (x[k] as number) * (W[k] as number);
    want = Math.max(0, want + (B[0] as number));
    assert.ok(Math.abs((answers[0]?.[0] ?? Number.NaN) - want) < 1e-4, `y[0] ${answers[0]?.[0]} vs ${want}`);
  });
});
