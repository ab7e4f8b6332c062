import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { batchTiers, finalizeGe, GeBridgeError, GeModel, initGe } from '@ge-mesh/ge-bridge';
import { type LaneResult, runLanesTogether } from './lanes.js';
import { skipUnlessSimulator, tempDir, writeModel } from './support.js';

/**
 * Timing mode's contended model (native/README.md): a run holds its stream for
 * `a` µs of launch, then does rows × w core·µs on the device's AI cores, shared
 * by water-filling with every run in flight on the device and capped by
 * ge.aicoreNum and span × rows. Each expectation below is the model's formula;
 * the independent model (streams sleeping side by side) would give the alone
 * figure everywhere, which every window here excludes.
 */
const CORES = 8;
const A = 20_000; // µs
const FP32_ROW = 80_000; // core·µs per row
const FP16_ROW = 20_000;
const ROWS = 4;
const IN = 16;
// A run never ends before its modelled time (the clock only sleeps longer); a busy machine makes it later.
const EARLY_MS = 2;
const LATE_MS = 35;

const spec = (extra = '') => `contended:a=${A},fp32=${FP32_ROW},fp16=${FP16_ROW}${extra}`;
/** The formula for k equal runs started together, each capped at `cap` cores: a + w / min(cap, N/k). */
const togetherMs = (rows: number, perRow: number, k: number, cap = CORES) =>
  (A + (rows * perRow) / Math.min(cap, CORES / k)) / 1000;

function assertNear(measured: number, modelled: number, what: string): void {
  assert.ok(
    measured >= modelled - EARLY_MS && measured <= modelled + LATE_MS,
    `${what}: ${measured.toFixed(1)} ms, the model says ${modelled.toFixed(1)} ms`,
  );
}

describe('timing mode: the contended model (AI cores shared per device)', { skip: skipUnlessSimulator }, () => {
  const tmp = tempDir('contended');
  let model = '';

  before(() => {
    // Read once per process, before the first load.
    process.env.GEMESH_SIM_AICORES = String(CORES);
    process.env.GEMESH_SIM_DEVICES = '1';
    initGe();
    model = writeModel(tmp.dir, 'relu', (g) => {
      g.output(g.op('Relu', [g.input('x', 'FP32', ['batch', IN])], {}, 'y'), 'FP32', ['batch', IN]);
    });
  });

  after(() => {
    finalizeGe();
    tmp.cleanup();
  });

  const load = (streams: number, sessionOptions: Record<string, string>, tiers = [ROWS]) =>
    GeModel.load({
      modelPath: model,
      deviceId: 0,
      streams,
      inputs: [{ name: 'x', dataType: 'FP32' }],
      tiers: batchTiers([[IN]], tiers),
      sessionOptions: { 'gemesh.sim.timing': '1', ...sessionOptions },
    });

  function timeAlone(m: GeModel, tier: number, rows: number): number {
    const t0 = performance.now();
    m.run(0, tier, [new Float32Array(rows * IN)], [new Float32Array(rows * IN)]);
    return performance.now() - t0;
  }

  /** Lanes started together, one batch each: from the first start to the last end, and each lane's own time. */
  async function together(m: GeModel, streams: number): Promise<{ span: number; each: number[] }> {
    const results: LaneResult[] = await runLanesTogether(
      Array.from({ length: streams }, (_, stream) => ({
        handle: m.handle,
        stream,
        tier: 0,
        batches: [new Float32Array(ROWS * IN)],
      })),
    );
    return {
      span: Math.max(...results.map((r) => r.end)) - Math.min(...results.map((r) => r.start)),
      each: results.map((r) => r.end - r.start),
    };
  }

  test('two streams at once on one device take a + 2w/N, one alone a + w/N', async () => {
    const m = load(2, { 'ge.exec.precision_mode_v2': 'origin', 'gemesh.sim.latency_us': spec() });
    try {
      assertNear(timeAlone(m, 0, ROWS), togetherMs(ROWS, FP32_ROW, 1), 'one stream alone');
      // The pool is work-conserving: however far apart the two starts are (less than a run), the
      // last run ends a + 2w/N after the first started.
      const { span } = await together(m, 2);
      assertNear(span, togetherMs(ROWS, FP32_ROW, 2), 'two streams at once, first start to last end');
    } finally {
      m.destroy();
    }
  });

  test('ge.aicoreNum partitions the cores: a run keeps to its cores alone and is not slowed by a second', async () => {
    const half = CORES / 2;
    const m = load(3, {
      'ge.exec.precision_mode_v2': 'origin',
      'ge.aicoreNum': `${half}|${half}`,
      'gemesh.sim.latency_us': spec(),
    });
    try {
      assertNear(timeAlone(m, 0, ROWS), togetherMs(ROWS, FP32_ROW, 1, half), 'alone on half the cores');
      const two = await together(m, 2);
      for (const [lane, ms] of two.each.entries()) {
        assertNear(ms, togetherMs(ROWS, FP32_ROW, 2, half), `lane ${lane} of two on half the cores each`);
      }
      // Three halves do not fit: the three share the device, N/3 each.
      const three = await together(m, 3);
      assertNear(three.span, togetherMs(ROWS, FP32_ROW, 3, half), 'three streams capped at half the cores');
    } finally {
      m.destroy();
    }
  });

  test('fp16 and bf16 matrix ops cost the fp16 row price, fp32 the fp32 one', () => {
    for (const [precision, perRow] of [
      ['origin', FP32_ROW],
      ['fp16', FP16_ROW],
      ['mixed_bfloat16', FP16_ROW],
    ] as const) {
      const m = load(1, { 'ge.exec.precision_mode_v2': precision, 'gemesh.sim.latency_us': spec() });
      try {
        assertNear(timeAlone(m, 0, ROWS), togetherMs(ROWS, perRow, 1), `alone at ${precision}`);
      } finally {
        m.destroy();
      }
    }
  });

  test('span caps the cores a small batch can keep busy: span × rows', () => {
    const m = load(1, { 'ge.exec.precision_mode_v2': 'origin', 'gemesh.sim.latency_us': spec(',span=2') }, [1, ROWS]);
    try {
      assertNear(timeAlone(m, 0, 1), togetherMs(1, FP32_ROW, 1, 2), '1 row on 2 cores');
      assertNear(timeAlone(m, 1, ROWS), togetherMs(ROWS, FP32_ROW, 1, Math.min(CORES, 2 * ROWS)), '4 rows on 8 cores');
    } finally {
      m.destroy();
    }
  });

  test('a contended spec missing a row cost, and ge.aicoreNum above the device, are refused by name', () => {
    for (const [options, fragment] of [
      [
        { 'gemesh.sim.latency_us': 'contended:a=10,fp32=5' },
        'latency spec [contended:a=10,fp32=5] is invalid: [fp16] (core·µs per row) is required',
      ],
      [
        { 'gemesh.sim.latency_us': 'contended:fp32=5,fp16=1,cores=3' },
        'unknown key [cores] (keys: a, fp32, fp16, span)',
      ],
      [
        { 'ge.aicoreNum': '9|9', 'gemesh.sim.latency_us': spec() },
        `Value [9|9] for parameter [ge.aicoreNum] is invalid. Reason: the cube core count must be from 1 to ${CORES}, the device's AI cores`,
      ],
    ] as const) {
      assert.throws(
        () => load(1, options),
        (err: unknown) => err instanceof GeBridgeError && err.message.includes(fragment),
        fragment,
      );
    }
  });
});
