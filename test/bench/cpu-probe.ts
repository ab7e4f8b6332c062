/**
 * Which thread of which process is busy under load: the mesh on one model, binary-extension
 * requests at a fixed concurrency (or rate), and for every thread of every service (main thread,
 * worker_threads lanes, onnxruntime's and V8's helper threads), RabbitMQ and Redis, CPU µs per
 * answered request and context switches per request (voluntary: it waited; preempted: another
 * task took its core). The load generator's own CPU and the machine's idle share are printed
 * beside them, so a saturated machine shows as one. No profiler runs: the figures are the
 * processes' own, where `profile.ts` shows functions but slows every process down.
 *
 *   node --import tsx test/bench/cpu-probe.ts [--model tiny] [--concurrency 64 | --rate 1000] [--warmup 15] [--secs 10]
 *
 * Writes test/bench/results/cpu-probe.{md,json}.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT } from '@ge-mesh/launcher';
import { httpTarget, LoadDriver } from '@ge-mesh/loadgen';
import { startTestMesh } from '../support/mesh-harness.js';
import { brokerAndRedisPids, cpuSeconds, machineTicks, type ThreadUsage, threadUsage } from './process-metrics.js';

const { values } = parseArgs({
  options: {
    model: { type: 'string', default: 'tiny' },
    concurrency: { type: 'string', default: '64' },
    rate: { type: 'string' },
    warmup: { type: 'string', default: '15' },
    secs: { type: 'string', default: '10' },
    out: { type: 'string', default: join(ROOT, 'test/bench/results') },
  },
});
const model = values.model;
const load =
  values.rate !== undefined
    ? { kind: 'rate' as const, perSec: Number(values.rate), distribution: 'constant' as const }
    : { kind: 'concurrency' as const, concurrency: Number(values.concurrency) };
const loadName = load.kind === 'rate' ? `${load.perSec} req/s` : `concurrency ${load.concurrency}`;
const log = (s: string) => process.stderr.write(`${s}\n`);

const mesh = await startTestMesh({
  models: [model],
  logLevel: 'warn',
  flags: { batcher: ['--models', model], worker: ['--models', model] },
});
const target = await httpTarget({
  url: mesh.url,
  model,
  batch: 1,
  inputData: 'random',
  binary: true,
  connections: 256,
});
const driver = new LoadDriver(target.send, load);

interface Row {
  process: string;
  thread: string;
  cpuUsPerRequest: number;
  voluntaryPerRequest: number;
  preemptedPerRequest: number;
}
let rows: Row[] = [];
let answered = 0;
let inferPerSec = 0;
let loadgenUs = 0;
let idleShare = 0;
try {
  driver.start();
  log(`${model}: warming up for ${values.warmup} s at ${loadName}`);
  await driver.window(Number(values.warmup) * 1000);
  const services = mesh.services.map((s) => ({ name: s.name, pid: s.child.pid ?? 0 }));
  const external = brokerAndRedisPids();
  const threads0 = services.map((s) => threadUsage(s.pid));
  const external0 = external.map((e) => cpuSeconds(e.pid));
  const self0 = process.cpuUsage();
  const machine0 = machineTicks();
  log(`${model}: measuring ${values.secs} s`);
  const w = await driver.window(Number(values.secs) * 1000);
  const machine1 = machineTicks();
  const self1 = process.cpuUsage(self0);
  const external1 = external.map((e) => cpuSeconds(e.pid));
  const threads1 = services.map((s) => threadUsage(s.pid));

  answered = Math.max(1, w.requests - w.errors);
  inferPerSec = w.inferPerSec;
  loadgenUs = (self1.user + self1.system) / answered;
  const busy = machine1[0] - machine0[0];
  const idle = machine1[1] - machine0[1];
  idleShare = idle / Math.max(1, busy + idle);
  const per = (n: number) => n / answered;
  services.forEach((s, i) => {
    const before = new Map((threads0[i] ?? []).map((t) => [t.tid, t]));
    for (const t of threads1[i] ?? []) {
      const b: ThreadUsage | undefined = before.get(t.tid);
      if (!b) continue;
      rows.push({
        process: s.name,
        thread: t.tid === s.pid ? 'main' : `${t.name} ${t.tid}`,
        cpuUsPerRequest: per((t.cpuSeconds - b.cpuSeconds) * 1e6),
        voluntaryPerRequest: per(t.voluntarySwitches - b.voluntarySwitches),
        preemptedPerRequest: per(t.involuntarySwitches - b.involuntarySwitches),
      });
    }
  });
  for (const [i, e] of external.entries()) {
    rows.push({
      process: e.name,
      thread: 'all',
      cpuUsPerRequest: per(((external1[i] ?? 0) - (external0[i] ?? 0)) * 1e6),
      voluntaryPerRequest: Number.NaN,
      preemptedPerRequest: Number.NaN,
    });
  }
  // /proc counts CPU in 10 ms ticks: a thread that used none in the window says nothing.
  rows = rows.filter((r) => r.cpuUsPerRequest > 0 || r.voluntaryPerRequest >= 0.01);
} finally {
  await driver.stop();
  await target.close();
  await mesh.teardown();
}

const total = rows.reduce((a, r) => a + r.cpuUsPerRequest, 0);
const num = (n: number, digits: number) => (Number.isNaN(n) ? '–' : n.toFixed(digits));
const lines = [
  `# Busy threads: ${model} at ${loadName} through the mesh`,
  '',
  `Measured ${new Date().toISOString()}: ${values.secs} s after ${values.warmup} s of warm-up, ${answered} requests answered (${inferPerSec.toFixed(0)} infer/s), binary-extension bodies. CPU from /proc in 10 ms ticks, so threads under ${(10_000 / answered).toFixed(2)} µs per request round to zero.`,
  '',
  '| process | thread | CPU µs per request | waits per request | preempted per request |',
  '|---|---|---|---|---|',
  ...rows.map(
    (r) =>
      `| ${r.process} | ${r.thread} | ${r.cpuUsPerRequest.toFixed(1)} | ${num(r.voluntaryPerRequest, 2)} | ${num(r.preemptedPerRequest, 2)} |`,
  ),
  `| **mesh, RabbitMQ and Redis** | | **${total.toFixed(1)}** | | |`,
  `| load generator (this process) | all | ${loadgenUs.toFixed(1)} | – | – |`,
  '',
  `The machine was idle ${(idleShare * 100).toFixed(1)} % of the window (all cores).`,
];
const md = `${lines.join('\n')}\n`;
await mkdir(values.out, { recursive: true });
await writeFile(join(values.out, 'cpu-probe.md'), md);
await writeFile(
  join(values.out, 'cpu-probe.json'),
  `${JSON.stringify({ model, load, answered, inferPerSec, loadgenUs, idleShare, rows }, null, 2)}\n`,
);
process.stdout.write(md);
