/**
 * Throughput as workers are added, in one run on this machine: the whole mesh
 * (gateway → batcher → workers over RabbitMQ and Redis, separate processes)
 * with 1, 2 and 3 CPU workers (runtime ort; each leases a CPU device, i.e.
 * its share of the cores), then with 1, 4 and 8 simulated NPUs (runtime ge
 * on the CANN simulator in timing mode; one worker process per NPU, each
 * leasing its own device). Closed-loop HTTP load with the binary tensor
 * extension; prints a table and writes bench-results/workers.{json,md}.
 *
 *   node --import tsx test/bench/workers.ts [--seconds 8] [--only cpu|npu]
 *
 * The simulated NPU holds each run for 100 ms + 7.5 ms per row (one stream
 * per device, tiers 1..8), so one device is worth at most 8 rows / 160 ms =
 * 50 infer/s: slow enough that 8 of them stay within what the mesh itself
 * moves on this machine, so the figures show how the mesh scales across
 * devices, not how fast an NPU is.
 */
import { mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { demoModel, sampleInputs } from '@ge-mesh/demo-models';
import { ROOT } from '@ge-mesh/launcher';
import { type ClosedLoopResult, runClosedLoop } from '@ge-mesh/loadgen';
import { WorkerRegistry } from '@ge-mesh/store';
import { Redis } from 'ioredis';
import { Pool } from 'undici';
import { DEMO_REPOSITORY, REDIS_URL, startTestMesh, type TestMesh, uniqueNamespace } from '../support/mesh-harness.js';
import { binaryInferBody } from '../support/reference.js';

const { values } = parseArgs({
  options: { seconds: { type: 'string', default: '8' }, only: { type: 'string' } },
});
const seconds = Number(values.seconds);
const log = (s: string) => process.stderr.write(`${s}\n`);

interface Row {
  part: 'cpu' | 'npu';
  model: string;
  workers: number;
  concurrency: number;
  r: ClosedLoopResult;
  /** Batches each worker ran in the window (from the worker registry). */
  batchesPerWorker: number[];
  /** NPU part: the devices' modelled ceiling, infer/s. */
  ceiling?: number;
}
const rows: Row[] = [];

/** A KServe v2 binary-extension body for `model`. */
const binaryBody = (model: string, seed: number) => binaryInferBody(sampleInputs(demoModel(model), 1, seed));

async function batchCounts(registry: WorkerRegistry, model: string): Promise<Map<string, number>> {
  return new Map(
    (await registry.liveWorkers()).map((w) => [w.id, w.models.find((m) => m.model === model)?.batches ?? 0]),
  );
}

async function measure(
  mesh: TestMesh,
  part: Row['part'],
  model: string,
  as: string,
  workers: number,
  concurrency: number,
  ceiling?: number,
): Promise<void> {
  const redis = new Redis(REDIS_URL);
  const registry = new WorkerRegistry(redis, mesh.namespace);
  const pool = new Pool(mesh.url, { connections: concurrency, pipelining: 1 });
  const bodies = Array.from({ length: 16 }, (_, i) => binaryBody(as, 100 + i));
  const send = async (_loop: number, seq: number) => {
    const b = bodies[seq % bodies.length] as (typeof bodies)[number];
    const res = await pool.request({
      path: `/v2/models/${model}/infer`,
      method: 'POST',
      headers: {
        'content-type': 'application/octet-stream',
        'inference-header-content-length': String(b.headerLength),
      },
      body: b.body,
    });
    await res.body.arrayBuffer();
    return res.statusCode === 200;
  };
  log(`${part}: ${model}, ${workers} worker${workers > 1 ? 's' : ''}, concurrency ${concurrency}`);
  const before = await batchCounts(registry, model);
  const r = await runClosedLoop({
    concurrency,
    durationMs: seconds * 1000,
    warmupMs: 2000,
    send,
    onProgress: (n, ms) => process.stderr.write(`\r  ${n} requests in ${(ms / 1000).toFixed(0)} s   `),
  });
  process.stderr.write('\n');
  // Batch counts are published with each heartbeat.
  await new Promise((res) => setTimeout(res, 1500));
  const after = await batchCounts(registry, model);
  const batchesPerWorker = [...after].map(([id, n]) => n - (before.get(id) ?? 0)).sort((a, b) => b - a);
  rows.push({ part, model, workers, concurrency, r, batchesPerWorker, ...(ceiling ? { ceiling } : {}) });
  await pool.close();
  await redis.quit();
}

// CPU workers: each leases one of `workers` CPU devices and sizes its threads to its share.
if (values.only !== 'npu') {
  for (const workers of [1, 2, 3]) {
    const mesh = await startTestMesh({
      workers,
      logLevel: 'warn',
      flags: { worker: ['--models', 'tiny,resnet18'], batcher: ['--models', 'tiny,resnet18'] },
    });
    try {
      await measure(mesh, 'cpu', 'tiny', 'tiny', workers, 32);
      await measure(mesh, 'cpu', 'resnet18', 'resnet18', workers, 16);
    } finally {
      await mesh.teardown();
    }
  }
}

// Simulated NPUs: tiny's graph served as a GE backend model, timed by the simulator.
const NPU_LATENCY = '100000+7500*batch';
const npuCeiling = (devices: number) => (devices * 8) / ((100_000 + 7_500 * 8) / 1e6);
if (values.only !== 'cpu') {
  const repo = join(tmpdir(), uniqueNamespace('bench-workers-npu'));
  await mkdir(join(repo, 'npu_sim', '1'), { recursive: true });
  await symlink(join(DEMO_REPOSITORY, 'tiny', '1', 'model.onnx'), join(repo, 'npu_sim', '1', 'model.onnx'));
  await writeFile(
    join(repo, 'npu_sim', 'config.pbtxt'),
    `# tiny's graph on a simulated NPU: timing mode, ${NPU_LATENCY} µs per run, one stream per device.
name: "npu_sim"
backend: "npu_ge"
max_batch_size: 8
input [{ name: "x" data_type: TYPE_FP32 dims: [16] }]
output [{ name: "y" data_type: TYPE_FP32 dims: [4] }]
dynamic_batching { preferred_batch_size: [1, 2, 4, 8] max_queue_delay_microseconds: 2000 }
parameters { key: "session.gemesh.sim.timing" value: { string_value: "1" } }
parameters { key: "session.gemesh.sim.latency_us" value: { string_value: "${NPU_LATENCY}" } }
`,
  );
  try {
    for (const devices of [1, 4, 8]) {
      const mesh = await startTestMesh({
        workers: devices,
        modelRepository: repo,
        models: ['npu_sim'],
        logLevel: 'warn',
        // Every worker sees 8 simulated NPUs and leases one.
        env: { GEMESH_SIM_DEVICES: '8' },
        flags: { worker: ['--runtime', 'ge'] },
      });
      try {
        await measure(mesh, 'npu', 'npu_sim', 'tiny', devices, 16 * devices, npuCeiling(devices));
      } finally {
        await mesh.teardown();
      }
    }
  } finally {
    await rm(repo, { recursive: true, force: true });
  }
}

const fmt = (us: number) => (us / 1000).toFixed(1);
const header =
  '| workers | model | concurrency | infer/s | p50 ms | p99 ms | errors | batches per worker | modelled ceiling infer/s |\n|---|---|---|---|---|---|---|---|---|';
const line = (x: Row) =>
  `| ${x.workers} ${x.part === 'cpu' ? 'CPU' : `simulated NPU${x.workers > 1 ? 's' : ''}`} | ${x.model} | ${x.concurrency} | ${x.r.inferPerSec.toFixed(1)} | ${fmt(x.r.p50Us)} | ${fmt(x.r.p99Us)} | ${x.r.errors} | ${x.batchesPerWorker.join(', ')} | ${x.ceiling ? x.ceiling.toFixed(0) : '–'} |`;
const md = `# Throughput with 1, 2, 3 CPU workers and 1, 4, 8 simulated NPUs

Measured ${new Date().toISOString()} on this machine (${availableParallelism()} cores; figures are machine-specific),
${seconds} s closed-loop windows after a 2 s warmup, HTTP with the binary tensor extension, batch-1 requests.
Every process of the mesh (gateway, batcher, each worker, RabbitMQ, Redis) and the load generator share these cores.
Simulated NPUs: the CANN simulator in timing mode holds each run for ${NPU_LATENCY} µs (one stream per device).

${header}
${rows.map(line).join('\n')}
`;
process.stdout.write(`\n${md}`);
const out = join(ROOT, 'bench-results');
await mkdir(out, { recursive: true });
await writeFile(join(out, 'workers.json'), JSON.stringify(rows, null, 2));
await writeFile(join(out, 'workers.md'), md);
process.exit(0);
