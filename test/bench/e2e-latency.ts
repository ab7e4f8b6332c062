/**
 * End-to-end latency and throughput of the mesh (gateway → batcher → worker
 * over RabbitMQ and Redis, separate processes) next to the same model run
 * in-process by onnxruntime, in one run on one machine. Prints a table and
 * writes bench-results/e2e-latency.{json,md}.
 *
 *   node --import tsx test/bench/e2e-latency.ts [--seconds 10]
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { demoModel, sampleInputs } from '@ge-mesh/demo-models';
import { ROOT } from '@ge-mesh/launcher';
import { type ClosedLoopResult, runClosedLoop } from '@ge-mesh/loadgen';
import * as ort from 'onnxruntime-node';
import { Pool } from 'undici';
import { DEMO_REPOSITORY, startTestMesh } from '../support/mesh-harness.js';
import { jsonInferBody } from '../support/reference.js';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '10' } } });
const seconds = Number(values.seconds);
const plan = [
  { model: 'tiny', concurrency: 16 },
  { model: 'resnet18', concurrency: 8 },
];

const fmt = (us: number) => (us / 1000).toFixed(2);
const rows: Array<{ model: string; setup: string; r: ClosedLoopResult }> = [];
const progress = (label: string) => (n: number, ms: number) =>
  process.stderr.write(`\r  ${label}: ${n} requests in ${(ms / 1000).toFixed(0)} s   `);

const mesh = await startTestMesh({
  workers: 1,
  logLevel: 'warn',
  flags: {
    worker: ['--models', plan.map((p) => p.model).join(',')],
    batcher: ['--models', plan.map((p) => p.model).join(',')],
  },
});
try {
  const pool = new Pool(mesh.url, { connections: 64, pipelining: 1 });
  for (const p of plan) {
    const m = demoModel(p.model);
    const bodies = Array.from({ length: 32 }, (_, i) => jsonInferBody(sampleInputs(m, 1, 50 + i)));
    const send = async (_loop: number, seq: number) => {
      const res = await pool.request({
        path: `/v2/models/${p.model}/infer`,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: bodies[seq % bodies.length],
      });
      await res.body.arrayBuffer();
      return res.statusCode === 200;
    };
    process.stderr.write(`mesh ${p.model} c=${p.concurrency}\n`);
    const r = await runClosedLoop({
      concurrency: p.concurrency,
      durationMs: seconds * 1000,
      warmupMs: 2000,
      send,
      onProgress: progress(p.model),
    });
    process.stderr.write('\n');
    rows.push({ model: p.model, setup: `mesh, HTTP JSON, batch-1 requests, concurrency ${p.concurrency}`, r });
  }
  await pool.close();
} finally {
  await mesh.teardown();
}

// The same models in this process: one onnxruntime session using every core, one request at a time.
for (const p of plan) {
  const m = demoModel(p.model);
  const session = await ort.InferenceSession.create(join(DEMO_REPOSITORY, p.model, '1', 'model.onnx'), {
    logSeverityLevel: 3,
  });
  const feeds = sampleInputs(m, 1, 50).map(
    (t) => [t.name, new ort.Tensor(t.dataType === 'INT64' ? 'int64' : 'float32', t.data, t.dims)] as const,
  );
  process.stderr.write(`in-process ${p.model}\n`);
  const r = await runClosedLoop({
    concurrency: 1,
    durationMs: seconds * 1000,
    warmupMs: 1000,
    send: async () => {
      await session.run(Object.fromEntries(feeds));
      return true;
    },
    onProgress: progress(p.model),
  });
  process.stderr.write('\n');
  rows.push({ model: p.model, setup: 'in-process onnxruntime, batch 1, sequential', r });
  await session.release();
}

const header =
  '| model | setup | infer/s | p50 ms | p99 ms | avg ms | requests | errors |\n|---|---|---|---|---|---|---|---|';
const table = rows
  .map(
    ({ model, setup, r }) =>
      `| ${model} | ${setup} | ${r.inferPerSec.toFixed(1)} | ${fmt(r.p50Us)} | ${fmt(r.p99Us)} | ${fmt(r.avgUs)} | ${r.requests} | ${r.errors} |`,
  )
  .join('\n');
const md = `# End-to-end latency\n\nMeasured ${new Date().toISOString()} on this machine (figures are machine-specific), ${seconds} s windows after warmup.\n\n${header}\n${table}\n`;
process.stdout.write(`\n${md}`);
const out = join(ROOT, 'bench-results');
await mkdir(out, { recursive: true });
await writeFile(join(out, 'e2e-latency.json'), JSON.stringify(rows, null, 2));
await writeFile(join(out, 'e2e-latency.md'), md);
