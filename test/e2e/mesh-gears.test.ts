import assert from 'node:assert/strict';
import { mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  buildTextEncoderSeq,
  TEXT_ENCODER_GEARS,
  textEncoderGearsConfig,
  writeTextEncoderGears,
} from '@ge-mesh/demo-models';
import { createPrng } from '@ge-mesh/onnx';
import * as ort from 'onnxruntime-node';
import { startTestMesh, type TestMesh, uniqueNamespace } from '../support/mesh-harness.js';
import { toleranceRatio } from '../support/reference.js';

/**
 * The variable-length text encoder served with gears over batch × length
 * (1×32, 4×32, 1×64, 4×64, 8×128), on runtime ge (the bridge over the CANN
 * simulator, at fp32) and on runtime ort. Requests of several lengths arrive
 * at once: those that pad to the same gears share batches, are padded with
 * token 0 / mask 0, and each answer is cut back to its own length. Every
 * answer is checked against onnxruntime run here on the unpadded request.
 *
 * Tolerance 2e-3 + 2e-3·|reference|, as the other end-to-end accuracy suites:
 * kernels sum in another order than onnxruntime's, and masked tokens add
 * exp(-10000) = 0 to each softmax sum.
 */
const FP32 = 'parameters { key: "session.ge.exec.precision_mode_v2" value { string_value: "origin" } }\n';

interface Sample {
  ids: BigInt64Array;
  mask: BigInt64Array;
  rows: number;
  len: number;
}

/** Token ids in [1, 1000), the mask 1 on the first (len - k) tokens and 0 after, per row. */
function sample(rows: number, len: number, seed: number): Sample {
  const prng = createPrng(seed);
  const ids = new BigInt64Array(rows * len);
  const mask = new BigInt64Array(rows * len);
  for (let r = 0; r < rows; r++) {
    const real = Math.max(1, len - Math.floor(prng.next() * Math.min(4, len)));
    for (let t = 0; t < len; t++) {
      ids[r * len + t] = BigInt(1 + Math.floor(prng.next() * 999));
      mask[r * len + t] = t < real ? 1n : 0n;
    }
  }
  return { ids, mask, rows, len };
}

function body(s: Sample): string {
  return JSON.stringify({
    inputs: [
      { name: 'input_ids', datatype: 'INT64', shape: [s.rows, s.len], data: Array.from(s.ids, Number) },
      { name: 'attention_mask', datatype: 'INT64', shape: [s.rows, s.len], data: Array.from(s.mask, Number) },
    ],
  });
}

interface OutputJson {
  name: string;
  shape: number[];
  data: number[];
}

function suite(runtime: 'ge' | 'ort'): void {
  describe(`gears over batch × length end to end (runtime ${runtime})`, { timeout: 300_000 }, () => {
    let mesh: TestMesh;
    let reference: ort.InferenceSession;
    const repo = join(tmpdir(), uniqueNamespace(`gears-${runtime}`));

    before(async () => {
      await mkdir(repo, { recursive: true });
      await writeTextEncoderGears(
        repo,
        runtime === 'ge' ? textEncoderGearsConfig('npu_ge', FP32) : textEncoderGearsConfig('onnxruntime'),
      );
      reference = await ort.InferenceSession.create(buildTextEncoderSeq(), {
        intraOpNumThreads: 1,
        logSeverityLevel: 3,
      });
      mesh = await startTestMesh({
        workers: 1,
        modelRepository: repo,
        logLevel: 'debug',
        models: [TEXT_ENCODER_GEARS],
        flags: { worker: ['--runtime', runtime] },
      });
    });
    after(async () => {
      await reference?.release();
      await mesh?.teardown();
      await rm(repo, { recursive: true, force: true });
    });

    const infer = async (text: string) => {
      const res = await fetch(`${mesh.url}/v2/models/${TEXT_ENCODER_GEARS}/infer`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: text,
      });
      return { status: res.status, json: (await res.json()) as Record<string, unknown> };
    };

    it('answers requests of many lengths, sharing batches, as onnxruntime does on the unpadded inputs', async () => {
      // Distinct lengths: any batch of two or more requests mixes lengths.
      const plan: [number, number][] = [
        [1, 5],
        [1, 20],
        [1, 32],
        [1, 17],
        [2, 9],
        [1, 40],
        [1, 64],
        [1, 50],
        [3, 33],
        [1, 100],
        [1, 128],
        [2, 77],
        [1, 1],
      ];
      const samples = plan.map(([rows, len], i) => sample(rows, len, 4_000 + i));
      const answers = await Promise.all(samples.map((s) => infer(body(s))));
      let compared = 0;
      for (const [i, s] of samples.entries()) {
        const a = answers[i];
        assert.equal(a?.status, 200, `request ${i} (${s.rows}×${s.len}): ${JSON.stringify(a?.json)}`);
        const expected = await reference.run({
          input_ids: new ort.Tensor('int64', s.ids, [s.rows, s.len]),
          attention_mask: new ort.Tensor('int64', s.mask, [s.rows, s.len]),
        });
        for (const out of (a?.json.outputs ?? []) as OutputJson[]) {
          const e = expected[out.name];
          assert.ok(e, `reference has ${out.name}`);
          assert.deepEqual(out.shape, [...e.dims], `request ${i} ${out.name} shape`);
          const ratio = toleranceRatio(out.data, e.data as Float32Array, 2e-3, 2e-3);
          assert.ok(ratio <= 1, `request ${i} (${s.rows}×${s.len}) ${out.name} off by ${ratio}× the tolerance`);
          compared += out.data.length;
        }
      }
      const rows = plan.reduce((n, [r]) => n + r, 0);
      const tokens = plan.reduce((n, [r, l]) => n + r * l, 0);
      assert.equal(compared, tokens * 64 + rows * 64, 'every output element of every request was compared');

      // Batches carrying several requests (so several lengths) were formed, and ran on a gear.
      const published = mesh.lines
        .filter((l) => l.includes('batch published') && l.includes(TEXT_ENCODER_GEARS))
        .map((l) => JSON.parse(l.slice(l.indexOf('{'))) as { requests: number; tier: number; rows: number });
      assert.equal(
        published.reduce((n, b) => n + b.rows, 0),
        rows,
        'every row went out in a batch',
      );
      assert.ok(
        published.some((b) => b.requests >= 2),
        `some batch mixed lengths: ${JSON.stringify(published)}`,
      );
      for (const b of published) assert.ok([1, 4, 8].includes(b.tier), `tier ${b.tier} is a gear's batch size`);
    });

    it('refuses a shape that fits no gear with 400 naming the gears', async () => {
      const a = await infer(body(sample(1, 129, 7)));
      assert.equal(a.status, 400);
      assert.equal(
        a.json.error,
        `input shapes input_ids [1,129], attention_mask [1,129] fit no gear of model '${TEXT_ENCODER_GEARS}'; its gears are: ` +
          'input_ids [1,32], attention_mask [1,32]; input_ids [4,32], attention_mask [4,32]; ' +
          'input_ids [1,64], attention_mask [1,64]; input_ids [4,64], attention_mask [4,64]; ' +
          'input_ids [8,128], attention_mask [8,128]. Inputs input_ids, attention_mask are padded up to a gear; every other dim must match a gear exactly',
      );
      // 5 rows of 64 tokens: only the 8×128 gear holds them, padded on both dims.
      const big = await infer(body(sample(5, 64, 8)));
      assert.equal(big.status, 200);
    });
  });
}

suite('ge');
suite('ort');
