import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { batchTiers, finalizeGe, GeBridgeError, GeModel, type GeOptions, initGe } from '@ge-mesh/ge-bridge';
import { createPrng, type GraphBuilder } from '@ge-mesh/onnx';
import * as ort from 'onnxruntime-node';
import {
  dotErrorBound,
  type FloatFormat,
  formatSummary,
  summarize,
  UNIT_ROUNDOFF,
} from '../support/precision-bound.js';
import { f32, skipNative, skipUnlessSimulator, tempDir, writeModel } from './support.js';

/**
 * Precision modes on the bridge: with no key it passes GE's inference default
 * (precision_mode_v2=fp16) and reports it; under fp16/bf16 modes the simulator
 * rounds the inputs, weights, bias and output of each MatMul/Gemm/Conv to the
 * format and accumulates in fp32. Each output element is checked against
 * onnxruntime's fp32 answer with the bound of test/support/precision-bound.ts
 * (the format's unit roundoff and the op's reduction length).
 */

const BATCH = 2;
const rng = createPrng(2024);

interface Case {
  name: string;
  /** Builds the one-op model; returns the graph inputs' names, row dims (after batch) and values. */
  build(g: GraphBuilder): void;
  inputs: { name: string; rowDims: number[]; data: Float32Array }[];
  /** Per output element, the dot product it is: its a and b terms and its bias. */
  terms(i: number): { a: number[]; b: number[]; bias: number };
  outputElements: number;
}

function gemmCase(): Case {
  const K = 256;
  const N = 48;
  const w = rng.floats(N * K, -0.5, 0.5);
  const bias = rng.floats(N, -0.5, 0.5);
  const x = rng.floats(BATCH * K, -1, 1);
  return {
    name: 'Gemm (K=256, transB, bias)',
    build(g) {
      const y = g.op(
        'Gemm',
        [g.input('x', 'FP32', ['batch', K]), g.floats('w', [N, K], w), g.floats('b', [N], bias)],
        { transB: { kind: 'int', value: 1 } },
        'y',
      );
      g.output(y, 'FP32', ['batch', N]);
    },
    inputs: [{ name: 'x', rowDims: [K], data: x }],
    terms(i) {
      const r = Math.floor(i / N);
      const j = i % N;
      return {
        a: [...x.subarray(r * K, (r + 1) * K)],
        b: [...w.subarray(j * K, (j + 1) * K)],
        bias: bias[j] as number,
      };
    },
    outputElements: BATCH * N,
  };
}

function matmulCase(): Case {
  // Both operands are runtime inputs: the simulator rounds them per run.
  const M = 8;
  const K = 96;
  const N = 24;
  const a = rng.floats(BATCH * M * K, -1, 1);
  const b = rng.floats(BATCH * K * N, -1, 1);
  return {
    name: 'MatMul (batched, K=96, two runtime operands)',
    build(g) {
      const y = g.op('MatMul', [g.input('a', 'FP32', ['batch', M, K]), g.input('b', 'FP32', ['batch', K, N])], {}, 'y');
      g.output(y, 'FP32', ['batch', M, N]);
    },
    inputs: [
      { name: 'a', rowDims: [M, K], data: a },
      { name: 'b', rowDims: [K, N], data: b },
    ],
    terms(i) {
      const n = Math.floor(i / (M * N));
      const r = Math.floor(i / N) % M;
      const c = i % N;
      const as: number[] = [];
      const bs: number[] = [];
      for (let k = 0; k < K; k++) {
        as.push(a[(n * M + r) * K + k] as number);
        bs.push(b[(n * K + k) * N + c] as number);
      }
      return { a: as, b: bs, bias: 0 };
    },
    outputElements: BATCH * M * N,
  };
}

function convCase(kernel: 1 | 3): Case {
  const C = 6;
  const O = 10;
  const H = 12;
  const pad = kernel === 3 ? 1 : 0;
  const w = rng.floats(O * C * kernel * kernel, -0.5, 0.5);
  const bias = rng.floats(O, -0.5, 0.5);
  const x = rng.floats(BATCH * C * H * H, -1, 1);
  return {
    name: kernel === 3 ? 'Conv 3x3 (im2col, pads 1, K=54)' : 'Conv 1x1 (direct, K=6)',
    build(g) {
      const y = g.op(
        'Conv',
        [g.input('x', 'FP32', ['batch', C, H, H]), g.floats('w', [O, C, kernel, kernel], w), g.floats('b', [O], bias)],
        { pads: { kind: 'ints', value: [pad, pad, pad, pad] } },
        'y',
      );
      g.output(y, 'FP32', ['batch', O, H, H]);
    },
    inputs: [{ name: 'x', rowDims: [C, H, H], data: x }],
    terms(i) {
      const n = Math.floor(i / (O * H * H));
      const o = Math.floor(i / (H * H)) % O;
      const oh = Math.floor(i / H) % H;
      const ow = i % H;
      const as: number[] = [];
      const bs: number[] = [];
      for (let c = 0; c < C; c++) {
        for (let kh = 0; kh < kernel; kh++) {
          for (let kw = 0; kw < kernel; kw++) {
            const ih = oh + kh - pad;
            const iw = ow + kw - pad;
            if (ih < 0 || ih >= H || iw < 0 || iw >= H) continue;
            as.push(x[((n * C + c) * H + ih) * H + iw] as number);
            bs.push(w[((o * C + c) * kernel + kh) * kernel + kw] as number);
          }
        }
      }
      return { a: as, b: bs, bias: bias[o] as number };
    },
    outputElements: BATCH * O * H * H,
  };
}

const MODES: { format: FloatFormat; options: GeOptions }[] = [
  { format: 'fp16', options: { 'ge.exec.precision_mode_v2': 'fp16' } },
  { format: 'bf16', options: { 'ge.exec.precision_mode_v2': 'mixed_bfloat16' } },
];

describe('precision modes: fp16 and bf16 emulation against onnxruntime fp32', { skip: skipNative }, () => {
  const tmp = tempDir('precision');
  const cases = [gemmCase(), matmulCase(), convCase(3), convCase(1)];
  const paths = new Map<string, string>();
  const references = new Map<string, Float32Array>();

  before(async () => {
    for (const [i, c] of cases.entries()) {
      const path = writeModel(tmp.dir, `case${i}`, (g) => c.build(g));
      paths.set(c.name, path);
      const session = await ort.InferenceSession.create(path, { intraOpNumThreads: 1 });
      const feeds = Object.fromEntries(
        c.inputs.map((t) => [t.name, new ort.Tensor('float32', t.data, [BATCH, ...t.rowDims])]),
      );
      references.set(c.name, (await session.run(feeds)).y?.data as Float32Array);
      await session.release();
    }
    initGe();
  });
  after(() => {
    finalizeGe();
    tmp.cleanup();
  });

  function run(c: Case, sessionOptions?: GeOptions, graphOptions?: GeOptions): { y: Float32Array; model: GeModel } {
    const model = GeModel.load({
      modelPath: paths.get(c.name) as string,
      deviceId: 0,
      streams: 1,
      inputs: c.inputs.map((t) => ({ name: t.name, dataType: 'FP32' })),
      tiers: batchTiers(
        c.inputs.map((t) => t.rowDims),
        [BATCH],
      ),
      ...(sessionOptions ? { sessionOptions } : {}),
      ...(graphOptions ? { graphOptions } : {}),
    });
    const [out] = model.allocateOutputs(0);
    model.run(
      0,
      0,
      c.inputs.map((t) => t.data),
      [out as Uint8Array],
    );
    return { y: Float32Array.from(f32(out as Uint8Array)), model };
  }

  function bounds(c: Case, format: FloatFormat, ref: Float32Array): Float64Array {
    const out = new Float64Array(c.outputElements);
    for (let i = 0; i < c.outputElements; i++) {
      const t = c.terms(i);
      out[i] = dotErrorBound(format, t.a, t.b, t.bias, ref[i] as number);
    }
    return out;
  }

  // The simulator's emulation: an NPU's fp32 (origin) path may use HF32, and bf16 needs an Atlas A2/A3.
  for (const c of cases) {
    test(`${c.name}: fp32 (origin) stays within the fp32 bound; fp16 and bf16 differ from it and stay within theirs`, {
      skip: skipUnlessSimulator,
    }, (t) => {
      const ref = references.get(c.name) as Float32Array;
      const fp32Bounds = bounds(c, 'fp32', ref);
      const exact = run(c, { 'ge.exec.precision_mode_v2': 'origin' });
      exact.model.destroy();
      const s32 = summarize(exact.y, ref, fp32Bounds, fp32Bounds);
      t.diagnostic(`fp32: ${formatSummary(s32)}`);
      assert.ok(s32.worstRatio <= 1, `fp32 ${formatSummary(s32)}`);

      const maxErrors: number[] = [];
      for (const mode of MODES) {
        const { y, model } = run(c, mode.options);
        model.destroy();
        const changed = y.filter((v, i) => v !== exact.y[i]).length;
        assert.ok(changed > y.length / 2, `${mode.format}: only ${changed} of ${y.length} answers differ from fp32`);
        const s = summarize(y, ref, bounds(c, mode.format, ref), fp32Bounds);
        t.diagnostic(`${mode.format} (u = 2^${Math.log2(UNIT_ROUNDOFF[mode.format])}): ${formatSummary(s)}`);
        assert.ok(s.worstRatio <= 1, `${mode.format} exceeds its bound: ${formatSummary(s)}`);
        assert.ok(s.beyondFp32 > 0, `${mode.format} answers are all within fp32's error: the emulation did nothing`);
        maxErrors.push(s.maxAbs);
      }
      const [fp16, bf16] = maxErrors as [number, number];
      assert.ok(bf16 > fp16, `bf16 (8 significand bits) should err more than fp16 (11): ${bf16} vs ${fp16}`);
    });
  }

  // Subnormal fp16 results are the simulator's choice; an NPU may flush them.
  test('operands round to nearest, ties to even, overflowing to inf (x times an identity)', {
    skip: skipUnlessSimulator,
  }, () => {
    const path = writeModel(tmp.dir, 'identity', (g) => {
      const eye = Array.from({ length: 64 }, (_, i) => (i % 9 === 0 ? 1 : 0));
      g.output(g.op('MatMul', [g.input('x', 'FP32', ['batch', 8]), g.floats('eye', [8, 8], eye)], {}, 'y'), 'FP32', [
        'batch',
        8,
      ]);
    });
    const cases: { options: GeOptions; x: number[]; want: number[] }[] = [
      {
        options: { 'ge.exec.precision_mode_v2': 'fp16' },
        // ties at 1 + 2^-11 and 1 + 3·2^-11, the largest finite, subnormal ties, 0.1, then 65520 alone in row 2.
        x: [1 + 2 ** -11, 1 + 3 * 2 ** -11, 65519, -(1 + 2 ** -11), 2 ** -25, 3 * 2 ** -25, 0.1, 1e-3],
        want: [1, 1 + 2 ** -9, 65504, -1, 0, 2 ** -23, 0.0999755859375, 0.0010004043579101562],
      },
      {
        options: { 'ge.exec.precision_mode_v2': 'mixed_bfloat16' },
        x: [1 + 2 ** -8, 1 + 3 * 2 ** -8, 65519, -(1 + 2 ** -8), 2 ** -130, 3e38, 0.1, 1e-3],
        want: [1, 1 + 2 ** -6, 65536, -1, 2 ** -130, 226 * 2 ** 120, 0.10009765625, 0.00099945068359375],
      },
    ];
    for (const c of cases) {
      const model = GeModel.load({
        modelPath: path,
        deviceId: 0,
        streams: 1,
        inputs: [{ name: 'x', dataType: 'FP32' }],
        tiers: batchTiers([[8]], [2]),
        sessionOptions: c.options,
      });
      try {
        const y = new Float32Array(16);
        const x = new Float32Array(16);
        x.set(c.x);
        x[8] = c.options['ge.exec.precision_mode_v2'] === 'fp16' ? 65520 : 3.4e38;
        model.run(0, 0, [x], [y]);
        assert.deepEqual([...y.subarray(0, 8)], [...Float32Array.from(c.want)], JSON.stringify(c.options));
        // Row 2 holds one value past the format's largest finite number; the rest of its row is inf·0 = NaN.
        assert.equal(y[8], Number.POSITIVE_INFINITY);
      } finally {
        model.destroy();
      }
    }
  });

  test('no precision key: the bridge passes GE inference default fp16 and reports it', () => {
    const c = cases[0] as Case;
    const dflt = run(c);
    const fp16 = run(c, { 'ge.exec.precision_mode_v2': 'fp16' });
    try {
      assert.deepEqual(dflt.model.precision, { key: 'ge.exec.precision_mode_v2', value: 'fp16', source: 'default' });
      assert.deepEqual(fp16.model.precision, { key: 'ge.exec.precision_mode_v2', value: 'fp16', source: 'session' });
      assert.deepEqual(dflt.y, fp16.y);
    } finally {
      dflt.model.destroy();
      fp16.model.destroy();
    }
  });

  // fp16 modes only, so this holds on any Ascend device (bf16 needs an Atlas A2/A3).
  test('the precision in effect follows GE: graph over session, either key spelling', () => {
    const c = cases[0] as Case;
    const graph = run(c, { 'ge.exec.precision_mode_v2': 'origin' }, { 'ge.exec.precision_mode_v2': 'mixed_float16' });
    const v1 = run(c, { 'ge.exec.precision_mode': 'allow_mix_precision_fp16' });
    const v1fp16 = run(c, undefined, { 'ge.exec.precision_mode': 'force_fp16' });
    const v2fp16 = run(c, { 'ge.exec.precision_mode_v2': 'fp16' });
    try {
      assert.deepEqual(graph.model.precision, {
        key: 'ge.exec.precision_mode_v2',
        value: 'mixed_float16',
        source: 'graph',
      });
      assert.deepEqual(v1.model.precision, {
        key: 'ge.exec.precision_mode',
        value: 'allow_mix_precision_fp16',
        source: 'session',
      });
      assert.deepEqual(v1fp16.model.precision, { key: 'ge.exec.precision_mode', value: 'force_fp16', source: 'graph' });
      // One mode, one answer, whichever key or level named it (GE maps both spellings to one mode).
      assert.deepEqual(graph.y, v1.y);
      assert.deepEqual(v1fp16.y, v2fp16.y);
    } finally {
      for (const r of [graph, v1, v1fp16, v2fp16]) r.model.destroy();
    }
  });

  test('a hifloat8 mode fails compilation on the simulator, naming the mode', { skip: skipUnlessSimulator }, () => {
    assert.throws(
      () => run(cases[0] as Case, { 'ge.exec.precision_mode_v2': 'cube_hif8' }),
      (err: unknown) =>
        err instanceof GeBridgeError &&
        err.status === 'GRAPH' &&
        err.message.includes('precision mode cube_hif8 (hifloat8) is not emulated by the simulator'),
    );
  });
});
