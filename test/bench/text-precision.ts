/**
 * The text model's answers per precision: the variable-length text encoder
 * (gears over batch × length) served by runtime ge on the CANN simulator at
 * precision_mode_v2 origin (fp32), with no precision key (GE's default,
 * fp16) and at bf16, each answer compared with onnxruntime (fp32) run here on
 * the unpadded request. Prints the largest absolute error and the largest
 * error relative to max(1, |reference|) per output, and writes them to
 * test/bench/results/text-precision.{md,json}.
 *
 *   node --import tsx test/bench/text-precision.ts
 */
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  buildTextEncoderSeq,
  TEXT_ENCODER_GEARS,
  textEncoderGearsConfig,
  writeTextEncoderGears,
} from '@ge-mesh/demo-models';
import { ROOT } from '@ge-mesh/launcher';
import { createPrng } from '@ge-mesh/onnx';
import * as ort from 'onnxruntime-node';
import { startTestMesh, uniqueNamespace } from '../support/mesh-harness.js';

const PRECISIONS = [
  { name: 'text_fp32', label: 'origin (fp32)', param: 'origin' },
  { name: 'text_default', label: 'no key: GE default (fp16)', param: '' },
  { name: 'text_bf16', label: 'mixed_bfloat16 (bf16)', param: 'mixed_bfloat16' },
] as const;

/** (rows, tokens) of each request: every gear, padded and exact lengths. */
const PLAN: readonly [number, number][] = [
  [1, 7],
  [1, 32],
  [2, 20],
  [1, 48],
  [4, 64],
  [1, 100],
  [3, 128],
];

const log = (s: string) => process.stderr.write(`${s}\n`);

function sample(rows: number, len: number, seed: number) {
  const prng = createPrng(seed);
  const ids = new BigInt64Array(rows * len);
  const mask = new BigInt64Array(rows * len).fill(1n);
  for (let i = 0; i < ids.length; i++) ids[i] = BigInt(1 + Math.floor(prng.next() * 999));
  return { ids, mask, rows, len };
}

const repo = join(tmpdir(), uniqueNamespace('text-precision'));
await mkdir(repo, { recursive: true });
for (const p of PRECISIONS) {
  const key = p.param
    ? `parameters { key: "session.ge.exec.precision_mode_v2" value { string_value: "${p.param}" } }\n`
    : '';
  const config = textEncoderGearsConfig('npu_ge', key).replace(`name: "${TEXT_ENCODER_GEARS}"`, `name: "${p.name}"`);
  const dir = join(repo, 'staging');
  await writeTextEncoderGears(dir, config);
  await rm(join(repo, p.name), { recursive: true, force: true });
  await mkdir(join(repo, p.name), { recursive: true });
  await rename(join(dir, TEXT_ENCODER_GEARS), join(repo, p.name));
  await rm(dir, { recursive: true, force: true });
}
const reference = await ort.InferenceSession.create(buildTextEncoderSeq(), {
  intraOpNumThreads: 1,
  logSeverityLevel: 3,
});
log('starting a mesh on runtime ge (CANN simulator) with the three precisions');
const mesh = await startTestMesh({
  workers: 1,
  modelRepository: repo,
  models: PRECISIONS.map((p) => p.name),
  flags: { worker: ['--runtime', 'ge'] },
});

interface Row {
  precision: string;
  output: string;
  elements: number;
  maxAbs: number;
  maxRel: number;
}
const rows: Row[] = [];
try {
  for (const p of PRECISIONS) {
    const worst = new Map<string, { elements: number; maxAbs: number; maxRel: number }>();
    for (const [i, [r, len]] of PLAN.entries()) {
      const s = sample(r, len, 7_000 + i);
      const res = await fetch(`${mesh.url}/v2/models/${p.name}/infer`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          inputs: [
            { name: 'input_ids', datatype: 'INT64', shape: [r, len], data: Array.from(s.ids, Number) },
            { name: 'attention_mask', datatype: 'INT64', shape: [r, len], data: Array.from(s.mask, Number) },
          ],
        }),
      });
      const json = (await res.json()) as { outputs?: Array<{ name: string; data: number[] }>; error?: string };
      if (res.status !== 200 || !json.outputs) throw new Error(`${p.name} ${r}x${len}: ${res.status} ${json.error}`);
      const want = await reference.run({
        input_ids: new ort.Tensor('int64', s.ids, [r, len]),
        attention_mask: new ort.Tensor('int64', s.mask, [r, len]),
      });
      for (const o of json.outputs) {
        const ref = want[o.name]?.data as Float32Array | undefined;
        if (!ref || ref.length !== o.data.length) throw new Error(`${p.name} ${o.name}: ${o.data.length} values`);
        const w = worst.get(o.name) ?? { elements: 0, maxAbs: 0, maxRel: 0 };
        for (let k = 0; k < ref.length; k++) {
          const d = Math.abs((o.data[k] as number) - (ref[k] as number));
          w.maxAbs = Math.max(w.maxAbs, d);
          w.maxRel = Math.max(w.maxRel, d / Math.max(1, Math.abs(ref[k] as number)));
        }
        w.elements += ref.length;
        worst.set(o.name, w);
      }
    }
    for (const [output, w] of worst) rows.push({ precision: p.label, output, ...w });
    log(`${p.label}: ${[...worst].map(([o, w]) => `${o} max |err| ${w.maxAbs.toExponential(2)}`).join(', ')}`);
  }
} finally {
  await mesh.teardown();
  await reference.release();
  await rm(repo, { recursive: true, force: true });
}

const md = [
  '# Text encoder (gears over batch × length) per precision, runtime ge on the CANN simulator',
  '',
  `Requests (rows × tokens): ${PLAN.map(([r, l]) => `${r}×${l}`).join(', ')}; reference: onnxruntime fp32 on the unpadded request.`,
  '',
  '| precision | output | elements compared | max abs error | max error / max(1, abs(reference)) |',
  '|---|---|---|---|---|',
  ...rows.map(
    (r) =>
      `| ${r.precision} | ${r.output} | ${r.elements} | ${r.maxAbs.toExponential(2)} | ${r.maxRel.toExponential(2)} |`,
  ),
  '',
].join('\n');
const out = join(ROOT, 'test/bench/results');
await mkdir(out, { recursive: true });
await writeFile(join(out, 'text-precision.md'), md);
await writeFile(join(out, 'text-precision.json'), `${JSON.stringify(rows, null, 2)}\n`);
process.stdout.write(md);
