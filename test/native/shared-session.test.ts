import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { batchTiers, deviceMemory, finalizeGe, GeModel, initGe } from '@ge-mesh/ge-bridge';
import { createPrng } from '@ge-mesh/onnx';
import { runLanesTogether } from './lanes.js';
import { FP32, maxAbsDiff, skipNative, skipUnlessSimulator, tempDir, writeModel } from './support.js';

/**
 * One load per device: lanes loading a model with the same share key join one
 * GE session, so its weights sit in device memory once; graphs, streams and
 * I/O buffers stay each lane's own.
 */
const IN = 256;
const OUT = 1024;
const TIERS = [1, 4];
const WEIGHT_BYTES = IN * OUT * 4;
/** The simulator's aclrtMalloc charge (native/README.md): round_up(size, 32) + 32. */
const charge = (bytes: number) => Math.ceil(bytes / 32) * 32 + 32;

describe('lanes sharing one GE session per device', { skip: skipNative }, () => {
  const tmp = tempDir('shared');
  let path = '';
  let weights: Float32Array;

  before(() => {
    weights = createPrng(5).floats(IN * OUT, -0.1, 0.1);
    path = writeModel(tmp.dir, 'wide', (g) => {
      const y = g.op('MatMul', [g.input('x', 'FP32', ['batch', IN]), g.floats('w', [IN, OUT], weights)], {}, 'y');
      g.output(y, 'FP32', ['batch', OUT]);
    });
    process.env.GEMESH_SIM_DEVICES = '1';
    initGe();
  });

  after(() => {
    finalizeGe();
    tmp.cleanup();
  });

  const lane = (
    shareKey?: string,
    sessionOptions: Record<string, string> = FP32,
    graphOptions?: Record<string, string>,
  ) =>
    GeModel.load({
      modelPath: path,
      deviceId: 0,
      streams: 1,
      inputs: [{ name: 'x', dataType: 'FP32' }],
      tiers: batchTiers([[IN]], TIERS),
      sessionOptions,
      ...(graphOptions ? { graphOptions } : {}),
      ...(shareKey ? { shareKey } : {}),
    });
  const used = () => {
    const m = deviceMemory(0);
    return m.totalBytes - m.freeBytes;
  };

  function reference(x: Float32Array, batch: number): Float32Array {
    const y = new Float32Array(batch * OUT);
    for (let b = 0; b < batch; b++) {
      for (let k = 0; k < IN; k++) {
        const xv = x[b * IN + k] as number;
        for (let o = 0; o < OUT; o++)
          y[b * OUT + o] = (y[b * OUT + o] as number) + xv * (weights[k * OUT + o] as number);
      }
    }
    return y;
  }

  test('HBM holds the weights once and the buffers once per lane: 1 lane vs 4', { skip: skipUnlessSimulator }, () => {
    const base = used();
    const weightCharge = charge(WEIGHT_BYTES);
    // One lane alone: the weights and that lane's graphs, arenas and I/O buffers.
    const one = lane('wide/1/digest-a');
    const perLane = used() - base - weightCharge;
    // Its own I/O buffers alone are this much (input and output of each tier); the arenas add to it.
    const io = TIERS.reduce((s, b) => s + charge(b * IN * 4) + charge(b * OUT * 4), 0);
    assert.ok(perLane >= io, `a lane holds ${perLane} bytes, less than its I/O buffers (${io})`);
    const more = [lane('wide/1/digest-a'), lane('wide/1/digest-a'), lane('wide/1/digest-a')];
    assert.equal(used() - base, weightCharge + 4 * perLane, 'weights × 1 + buffers × 4 lanes');
    assert.deepEqual(
      [one, ...more].map((m) => m.sessionLoads),
      [4, 4, 4, 4],
    );

    // Lanes leave one at a time; the weights go with the last.
    for (const [i, m] of [one, ...more].entries()) {
      m.destroy();
      const left = 3 - i;
      assert.equal(used() - base, left > 0 ? weightCharge + left * perLane : 0, `${left} lanes left`);
    }

    // The same 4 lanes with a session each (no share key): weights × 4.
    const separate = [lane(), lane(), lane(), lane()];
    try {
      assert.equal(used() - base, 4 * (weightCharge + perLane), 'a session per lane: (weights + buffers) × 4');
      assert.deepEqual(
        separate.map((m) => m.sessionLoads),
        [1, 1, 1, 1],
      );
    } finally {
      for (const m of separate) m.destroy();
    }
    assert.equal(used(), base);
  });

  test('another key, or other session or graph options, get a session of their own', () => {
    const a = lane('wide/1/digest-a');
    const b = lane('wide/1/digest-b');
    const c = lane('wide/1/digest-a', { 'ge.exec.precision_mode_v2': 'fp16' });
    const d = lane('wide/1/digest-a', FP32, { 'ge.deterministic': '1' });
    const e = lane('wide/1/digest-a');
    try {
      assert.deepEqual(
        [a, b, c, d, e].map((m) => m.sessionLoads),
        [2, 1, 1, 1, 2],
      );
    } finally {
      for (const m of [a, b, c, d, e]) m.destroy();
    }
  });

  test('lanes of one session run side by side, each answer exact, and one leaving does not disturb the other', async () => {
    const lanes = [lane('wide/1/run'), lane('wide/1/run')];
    const live = new Set(lanes);
    try {
      const rng = createPrng(9);
      const inputs = lanes.map(() => Array.from({ length: 6 }, () => rng.floats(4 * IN, -1, 1)));
      const results = await runLanesTogether(
        lanes.map((m, i) => ({ handle: m.handle, stream: 0, tier: 1, batches: inputs[i] as Float32Array[] })),
      );
      for (const [l, r] of results.entries()) {
        for (const [i, out] of r.outputs.entries()) {
          const want = reference(inputs[l]?.[i] as Float32Array, 4);
          assert.ok(maxAbsDiff(out, want) <= 1e-4, `lane ${l} batch ${i}: ${maxAbsDiff(out, want)}`);
        }
      }
      lanes[0]?.destroy();
      live.delete(lanes[0] as GeModel);
      const x = rng.floats(IN, -1, 1);
      const out = new Float32Array(OUT);
      lanes[1]?.run(0, 0, [x], [out]);
      assert.ok(maxAbsDiff(out, reference(x, 1)) <= 1e-4);
      assert.equal(lanes[1]?.sessionLoads, 1);
    } finally {
      for (const m of live) m.destroy();
    }
  });

  test('a shared session does not serialise its lanes: 200 ms runs on two lanes overlap', {
    skip: skipUnlessSimulator,
  }, async () => {
    const timing = { ...FP32, 'gemesh.sim.timing': '1', 'gemesh.sim.latency_us': '200000' };
    const lanes = [lane('wide/1/timing', timing), lane('wide/1/timing', timing)];
    try {
      assert.equal(lanes[0]?.sessionLoads, 2);
      const [a, b] = await runLanesTogether(
        lanes.map((m) => ({ handle: m.handle, stream: 0, tier: 0, batches: [new Float32Array(IN)] })),
      );
      assert.ok(a && b && Math.max(a.start, b.start) < Math.min(a.end, b.end), 'the lanes never overlapped');
      assert.ok(Math.max(a.end, b.end) - Math.min(a.start, b.start) < 380, 'the two runs took one after the other');
    } finally {
      for (const m of lanes) m.destroy();
    }
  });
});
