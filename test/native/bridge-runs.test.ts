import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { batchTiers, deviceMemory, finalizeGe, GeBridgeError, GeModel, initGe } from '@ge-mesh/ge-bridge';
import { createPrng } from '@ge-mesh/onnx';
import * as ort from 'onnxruntime-node';
import { type LaneResult, runLane, runLanesTogether } from './lanes.js';
import { FP32, maxAbs, maxAbsDiff, skipNative, skipUnlessSimulator, tempDir, writeModel } from './support.js';

const IN = 256;
const HIDDEN = 512;
const OUT = 8;
const BATCH = 16;

describe('running models', { skip: skipNative }, () => {
  const tmp = tempDir('runs');
  let mlp = '';
  let session: ort.InferenceSession;

  // y = Gemm(Relu(Gemm(x, W1, b1)), W2ᵀ, b2): about 0.5 ms per batch, so 40 batches per lane overlap.
  before(async () => {
    const rng = createPrng(11);
    mlp = writeModel(tmp.dir, 'mlp', (g) => {
      const x = g.input('x', 'FP32', ['batch', IN]);
      const h = g.op('Relu', [
        g.op('Gemm', [
          x,
          g.floats('w1', [IN, HIDDEN], rng.floats(IN * HIDDEN, -0.2, 0.2)),
          g.floats('b1', [HIDDEN], rng.floats(HIDDEN, -0.1, 0.1)),
        ]),
      ]);
      const w2 = g.floats('w2', [OUT, HIDDEN], rng.floats(OUT * HIDDEN, -0.2, 0.2));
      const y = g.op(
        'Gemm',
        [h, w2, g.floats('b2', [OUT], rng.floats(OUT, -0.1, 0.1))],
        { transB: { kind: 'int', value: 1 } },
        'y',
      );
      g.output(y, 'FP32', ['batch', OUT]);
    });
    session = await ort.InferenceSession.create(mlp);
    process.env.GEMESH_SIM_DEVICES = '2'; // the teardown test uses device 1
    initGe();
  });

  after(async () => {
    finalizeGe();
    await session.release();
    tmp.cleanup();
  });

  const loadMlp = (streams: number, graphOptions?: Record<string, string>) =>
    GeModel.load({
      modelPath: mlp,
      deviceId: 0,
      streams,
      inputs: [{ name: 'x', dataType: 'FP32' }],
      tiers: batchTiers([[IN]], [1, BATCH]),
      sessionOptions: FP32,
      ...(graphOptions ? { graphOptions } : {}),
    });

  async function reference(x: Float32Array, batch: number): Promise<Float32Array> {
    const r = await session.run({ x: new ort.Tensor('float32', x, [batch, IN]) });
    return r.y?.data as Float32Array;
  }

  function batches(seed: number, count: number): Float32Array[] {
    const rng = createPrng(seed);
    return Array.from({ length: count }, () => rng.floats(BATCH * IN, -1, 1));
  }

  test('two worker_threads on two streams run in parallel and both get correct results', async () => {
    const model = loadMlp(2);
    try {
      const jobs = [batches(1, 40), batches(2, 40)];
      const results = await runLanesTogether(
        jobs.map((b, stream) => ({ handle: model.handle, stream, tier: 1, batches: b })),
      );
      for (const [lane, result] of results.entries()) {
        assert.equal(result.outputs.length, 40);
        for (const [i, out] of result.outputs.entries()) {
          const want = await reference(jobs[lane]?.[i] as Float32Array, BATCH);
          // fp32 with the same accumulation order up to blocking: a few ulps of these magnitudes.
          assert.ok(maxAbsDiff(out, want) <= 1e-5, `lane ${lane} batch ${i}: max diff ${maxAbsDiff(out, want)}`);
        }
      }
      const [a, b] = results as [LaneResult, LaneResult];
      assert.ok(Math.max(a.start, b.start) < Math.min(a.end, b.end), 'the two lanes never ran at the same time');
    } finally {
      model.destroy();
    }
  });

  test('a run on a stream that is busy is refused without disturbing the running batch', {
    skip: skipUnlessSimulator,
  }, async () => {
    const model = loadMlp(1, { 'gemesh.sim.timing': '1', 'gemesh.sim.latency_us': '400000' });
    try {
      let started!: () => void;
      const running = new Promise<void>((r) => {
        started = r;
      });
      const lane = runLane({ handle: model.handle, stream: 0, tier: 0, batches: [new Float32Array(IN)] }, () =>
        started(),
      );
      await running;
      await sleep(100);
      assert.throws(
        () => model.run(0, 0, [new Float32Array(IN)], [new Float32Array(OUT)]),
        (err: unknown) =>
          err instanceof GeBridgeError &&
          err.status === 'STATE' &&
          err.message === 'stream 0 is already running a batch (runs on one stream must not overlap)',
      );
      const result = await lane;
      assert.ok(result.end - result.start >= 400, `the lane's run took ${result.end - result.start} ms`);
    } finally {
      model.destroy();
    }
  });

  test('timing mode holds each run for the modelled latency and writes zeros', { skip: skipUnlessSimulator }, () => {
    // a + b·batch = 30 ms at batch 1 and 20 + 10·16 = 180 ms at batch 16.
    const model = loadMlp(1, { 'gemesh.sim.timing': '1', 'gemesh.sim.latency_us': '20000+10000*batch' });
    try {
      for (const [tier, batch, modelled] of [
        [0, 1, 30],
        [1, BATCH, 180],
      ] as const) {
        const out = new Float32Array(batch * OUT).fill(7);
        const t0 = performance.now();
        model.run(0, tier, [new Float32Array(batch * IN).fill(1)], [out]);
        const elapsed = performance.now() - t0;
        assert.ok(elapsed >= modelled, `batch ${batch}: ${elapsed} ms < ${modelled} ms`);
        assert.ok(elapsed < modelled + 250, `batch ${batch}: ${elapsed} ms is far above ${modelled} ms`);
        assert.equal(maxAbs(out), 0);
      }
    } finally {
      model.destroy();
    }
  });

  test('a latency table interpolates between batch sizes', { skip: skipUnlessSimulator }, () => {
    const model = GeModel.load({
      modelPath: mlp,
      deviceId: 0,
      streams: 1,
      inputs: [{ name: 'x', dataType: 'FP32' }],
      tiers: batchTiers([[IN]], [2]),
      sessionOptions: { 'gemesh.sim.timing': '1', 'gemesh.sim.latency_us': '1=40000,4=100000' },
    });
    try {
      const t0 = performance.now();
      model.run(0, 0, [new Float32Array(2 * IN)], [new Float32Array(2 * OUT)]);
      const elapsed = performance.now() - t0;
      // Batch 2 lies a third of the way from 40 ms to 100 ms: 60 ms.
      assert.ok(elapsed >= 60 && elapsed < 60 + 250, `took ${elapsed} ms`);
    } finally {
      model.destroy();
    }
  });

  // Byte-exact accounting is the simulator's: an NPU's free memory moves with the driver and other processes.
  test('teardown returns every device byte: load, run and destroy leave memory at the baseline', {
    skip: skipUnlessSimulator,
  }, async () => {
    const base0 = deviceMemory(0);
    const base1 = deviceMemory(1);
    const a = loadMlp(2);
    const b = GeModel.load({
      modelPath: mlp,
      deviceId: 1,
      streams: 3,
      inputs: [{ name: 'x', dataType: 'FP32' }],
      tiers: batchTiers([[IN]], [1, 4, BATCH]),
      sessionOptions: FP32,
    });
    assert.ok(deviceMemory(0).freeBytes < base0.freeBytes);
    assert.ok(deviceMemory(1).freeBytes < base1.freeBytes);
    const x = batches(5, 1)[0] as Float32Array;
    const out = new Float32Array(BATCH * OUT);
    b.run(2, 2, [x], [out]);
    assert.ok(maxAbsDiff(out, await reference(x, BATCH)) <= 1e-5);
    a.destroy();
    assert.deepEqual(deviceMemory(0), base0);
    assert.ok(deviceMemory(1).freeBytes < base1.freeBytes);
    b.destroy();
    assert.deepEqual(deviceMemory(1), base1);
  });
});
