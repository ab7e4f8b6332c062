import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createPrng } from '@ge-mesh/onnx';
import * as ort from 'onnxruntime-node';
import { skipUnlessSimulator } from '../native/support.js';
import { denseReluModel } from '../support/dense-model.js';
import { startTestMesh, type TestMesh } from '../support/mesh-harness.js';
import { dotErrorBound, formatSummary, summarize } from '../support/precision-bound.js';

/**
 * A model served through the whole mesh (gateway → batcher → worker on runtime
 * `ge`, the CANN simulator) at bf16 (`mixed_bfloat16`), its answers checked per
 * element against onnxruntime fp32 with the bf16 bound of precision-bound.ts;
 * the same model with no precision key runs at GE's inference default (fp16),
 * and the worker logs the precision of every load.
 */
const K = 128;
const N = 16;
const rng = createPrng(77);
const W = rng.floats(N * K, -0.25, 0.25);
const B = rng.floats(N, -0.5, 0.5);

function config(name: string, precision?: string): string {
  const lines = [
    `name: "${name}"`,
    'backend: "npu_ge"',
    'max_batch_size: 8',
    `input [{ name: "x" data_type: TYPE_FP32 dims: [ ${K} ] }]`,
    `output [{ name: "y" data_type: TYPE_FP32 dims: [ ${N} ] }]`,
    'dynamic_batching { preferred_batch_size: [ 1, 4, 8 ] max_queue_delay_microseconds: 2000 }',
  ];
  if (precision) {
    lines.push(`parameters { key: "session.ge.exec.precision_mode_v2" value: { string_value: "${precision}" } }`);
  }
  return `${lines.join('\n')}\n`;
}

/** Per element of y = Relu(x·Wᵀ + b): Relu moves no two values further apart, so the Gemm's bound holds. */
function bounds(format: 'bf16' | 'fp32', x: Float32Array, ref: Float32Array): Float64Array {
  const rows = x.length / K;
  const out = new Float64Array(rows * N);
  for (let r = 0; r < rows; r++) {
    for (let j = 0; j < N; j++) {
      const i = r * N + j;
      out[i] = dotErrorBound(
        format,
        x.subarray(r * K, (r + 1) * K),
        W.subarray(j * K, (j + 1) * K),
        B[j] as number,
        ref[i] as number,
      );
    }
  }
  return out;
}

describe('end to end at bf16: GE precision through the mesh (CANN simulator)', {
  timeout: 180_000,
  // Checks the simulator's bf16 emulation; on an NPU bf16 needs an Atlas A2/A3.
  skip: skipUnlessSimulator,
}, () => {
  let dir = '';
  let mesh: TestMesh;
  let session: ort.InferenceSession;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gemesh-precision-'));
    const bytes = denseReluModel(K, N, W, B);
    for (const [name, precision] of [
      ['dense_bf16', 'mixed_bfloat16'],
      ['dense_default', undefined],
    ] as const) {
      await mkdir(join(dir, name, '1'), { recursive: true });
      await writeFile(join(dir, name, '1', 'model.onnx'), bytes);
      await writeFile(join(dir, name, 'config.pbtxt'), config(name, precision));
    }
    session = await ort.InferenceSession.create(bytes, { intraOpNumThreads: 1, logSeverityLevel: 3 });
    mesh = await startTestMesh({
      modelRepository: dir,
      models: ['dense_bf16', 'dense_default'],
      flags: { worker: ['--runtime', 'ge'] },
    });
  });
  after(async () => {
    await mesh?.teardown();
    await session?.release();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function infer(model: string, x: Float32Array): Promise<Float32Array> {
    const rows = x.length / K;
    const res = await fetch(`${mesh.url}/v2/models/${model}/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: [{ name: 'x', shape: [rows, K], datatype: 'FP32', data: Array.from(x) }] }),
    });
    const json = (await res.json()) as { outputs?: { name: string; shape: number[]; data: number[] }[] };
    assert.equal(res.status, 200, JSON.stringify(json).slice(0, 300));
    const y = json.outputs?.find((o) => o.name === 'y');
    assert.deepEqual(y?.shape, [rows, N]);
    return Float32Array.from(y?.data ?? []);
  }

  async function reference(x: Float32Array): Promise<Float32Array> {
    const out = await session.run({ x: new ort.Tensor('float32', x, [x.length / K, K]) });
    return out.y?.data as Float32Array;
  }

  it('concurrent mixed-batch requests at bf16 stay within the bf16 bound of onnxruntime fp32, and differ from fp32', async (t) => {
    const sizes = [1, 3, 1, 2, 5, 1, 8, 1, 4, 2, 1, 7];
    const inputs = sizes.map((rows) => rng.floats(rows * K, -1, 1));
    const answers = await Promise.all(inputs.map((x) => infer('dense_bf16', x)));
    let beyondFp32 = 0;
    let worst = 0;
    const all = { got: [] as number[], ref: [] as number[], bound: [] as number[], fp32: [] as number[] };
    for (const [i, x] of inputs.entries()) {
      const ref = await reference(x);
      const bound = bounds('bf16', x, ref);
      const fp32 = bounds('fp32', x, ref);
      const s = summarize(answers[i] as Float32Array, ref, bound, fp32);
      assert.ok(s.worstRatio <= 1, `request ${i} (${sizes[i]} rows): ${formatSummary(s)}`);
      beyondFp32 += s.beyondFp32;
      worst = Math.max(worst, s.worstRatio);
      all.got.push(...(answers[i] as Float32Array));
      all.ref.push(...ref);
      all.bound.push(...bound);
      all.fp32.push(...fp32);
    }
    t.diagnostic(`bf16 through the mesh: ${formatSummary(summarize(all.got, all.ref, all.bound, all.fp32))}`);
    assert.ok(beyondFp32 > 0, 'no answer differs from fp32 by more than fp32 rounding: bf16 was not applied');
  });

  it('the model with no precision key runs at fp16, not at bf16 or fp32', async () => {
    const x = rng.floats(4 * K, -1, 1);
    const [fp16, bf16] = await Promise.all([infer('dense_default', x), infer('dense_bf16', x)]);
    const ref = await reference(x);
    assert.notDeepEqual(fp16, bf16);
    assert.notDeepEqual(fp16, ref);
  });

  it('every load logs the precision in effect', () => {
    const loads = mesh.lines.filter((l) => l.startsWith('[worker') && l.includes('GE model loaded'));
    const of = (model: string) => loads.filter((l) => l.includes(`"model":"${model}"`));
    assert.ok(of('dense_bf16').length >= 1, loads.join('\n'));
    assert.ok(of('dense_default').length >= 1, loads.join('\n'));
    for (const l of of('dense_bf16')) {
      assert.match(l, /"precision":"ge\.exec\.precision_mode_v2=mixed_bfloat16","precisionFrom":"session"/);
    }
    for (const l of of('dense_default')) {
      assert.match(l, /"precision":"ge\.exec\.precision_mode_v2=fp16","precisionFrom":"default"/);
    }
  });
});
