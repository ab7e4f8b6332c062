/**
 * Which thread of which process is busy under load: the mesh on one model, binary-extension
 * requests at a fixed concurrency (or rate), and for every thread of every service (main thread,
 * worker_threads lanes, onnxruntime's and V8's helper threads), RabbitMQ and Redis, CPU µs per
 * answered request and context switches per request (voluntary: it waited; preempted: another
 * task took its core). The load generator's own CPU and the machine's idle share are printed
 * beside them, so a saturated machine shows as one, and Redis's commands per request. No
 * profiler runs: the figures are the processes' own, where `profile.ts` shows functions but slows
 * every process down.
 *
 * `--floor` first runs the shape's floor (shape-floor.ts: the same hops with nothing in them)
 * under the same load and warm-up, and prints its table and, per process, what the mesh adds to
 * it: the same syscalls with more CPU between them is code, more waits per request is hops.
 *
 *   node --import tsx test/bench/cpu-probe.ts [--model tiny] [--concurrency 64 | --rate 1000] [--warmup 15] [--secs 10] [--floor]
 *
 * Writes test/bench/results/cpu-probe.{md,json}.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT } from '@ge-mesh/launcher';
import { httpTarget, LoadDriver } from '@ge-mesh/loadgen';
import { Redis } from 'ioredis';
import { REDIS_URL, startTestMesh } from '../support/mesh-harness.js';
import { type Proc, serviceProcs } from './host-processes.js';
import { brokerAndRedisPids, cpuSeconds, machineTicks, type ThreadUsage, threadUsage } from './process-metrics.js';
import { commandsLine, commandsPerRequest, redisCommandCalls } from './redis-commands.js';
import { startShapeFloor } from './shape-floor.js';

const { values } = parseArgs({
  options: {
    model: { type: 'string', default: 'tiny' },
    concurrency: { type: 'string', default: '64' },
    rate: { type: 'string' },
    warmup: { type: 'string', default: '15' },
    secs: { type: 'string', default: '10' },
    floor: { type: 'boolean', default: false },
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

interface Row {
  process: string;
  thread: string;
  cpuUsPerRequest: number;
  voluntaryPerRequest: number;
  preemptedPerRequest: number;
}

/** What one server's processes and threads did under the load. */
interface Probe {
  /** When the window ended. */
  measuredAt: string;
  answered: number;
  inferPerSec: number;
  /** The load generator's CPU per request. */
  loadgenUs: number;
  /** The machine's idle share in the window, all cores. */
  idleShare: number;
  rows: Row[];
  /** Calls per request of each Redis command, most called first. */
  redisCommands: [command: string, perRequest: number][];
}

/** Warm up, then measure every thread of `procs` (and RabbitMQ and Redis, whole) over one window. */
async function probe(name: string, url: string, procs: readonly Proc[]): Promise<Probe> {
  const target = await httpTarget({ url, model, batch: 1, inputData: 'random', binary: true, connections: 256 });
  const driver = new LoadDriver(target.send, load);
  const redis = new Redis(REDIS_URL);
  try {
    driver.start();
    log(`${name}: warming up for ${values.warmup} s at ${loadName}`);
    await driver.window(Number(values.warmup) * 1000);
    const external = brokerAndRedisPids();
    const threads0 = procs.map((s) => threadUsage(s.pid));
    const external0 = external.map((e) => cpuSeconds(e.pid));
    const calls0 = await redisCommandCalls(redis);
    const self0 = process.cpuUsage();
    const machine0 = machineTicks();
    log(`${name}: measuring ${values.secs} s`);
    const w = await driver.window(Number(values.secs) * 1000);
    const machine1 = machineTicks();
    const self1 = process.cpuUsage(self0);
    const external1 = external.map((e) => cpuSeconds(e.pid));
    const threads1 = procs.map((s) => threadUsage(s.pid));
    const calls1 = await redisCommandCalls(redis);

    const answered = Math.max(1, w.requests - w.errors);
    const per = (n: number) => n / answered;
    const busy = machine1[0] - machine0[0];
    const idle = machine1[1] - machine0[1];
    const rows: Row[] = [];
    procs.forEach((s, i) => {
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
    return {
      measuredAt: new Date().toISOString(),
      answered,
      inferPerSec: w.inferPerSec,
      loadgenUs: (self1.user + self1.system) / answered,
      idleShare: idle / Math.max(1, busy + idle),
      // /proc counts CPU in 10 ms ticks: a thread that used none in the window says nothing.
      rows: rows.filter((r) => r.cpuUsPerRequest > 0 || r.voluntaryPerRequest >= 0.01),
      redisCommands: commandsPerRequest(calls0, calls1, answered),
    };
  } finally {
    redis.disconnect();
    await driver.stop();
    await target.close();
  }
}

let floor: Probe | undefined;
if (values.floor) {
  const f = await startShapeFloor(model);
  try {
    floor = await probe('shape floor', f.url, f.procs);
  } finally {
    await f.stop();
  }
}
const mesh = await startTestMesh({
  models: [model],
  logLevel: 'warn',
  flags: { batcher: ['--models', model], worker: ['--models', model] },
});
let meshProbe: Probe;
try {
  meshProbe = await probe('mesh', mesh.url, serviceProcs(mesh));
} finally {
  await mesh.teardown();
}

const num = (n: number, digits: number) => (Number.isNaN(n) ? '–' : n.toFixed(digits));
function table(title: string, p: Probe): string[] {
  const total = p.rows.reduce((a, r) => a + r.cpuUsPerRequest, 0);
  return [
    `# Busy threads: ${model} at ${loadName} through ${title}`,
    '',
    `Measured ${p.measuredAt}: ${values.secs} s after ${values.warmup} s of warm-up, ${p.answered} requests answered (${p.inferPerSec.toFixed(0)} infer/s), binary-extension bodies. CPU from /proc in 10 ms ticks, so threads under ${(10_000 / p.answered).toFixed(2)} µs per request round to zero.`,
    '',
    '| process | thread | CPU µs per request | waits per request | preempted per request |',
    '|---|---|---|---|---|',
    ...p.rows.map(
      (r) =>
        `| ${r.process} | ${r.thread} | ${r.cpuUsPerRequest.toFixed(1)} | ${num(r.voluntaryPerRequest, 2)} | ${num(r.preemptedPerRequest, 2)} |`,
    ),
    `| **all, with RabbitMQ and Redis** | | **${total.toFixed(1)}** | | |`,
    `| load generator (this process) | all | ${p.loadgenUs.toFixed(1)} | – | – |`,
    '',
    `The machine was idle ${(p.idleShare * 100).toFixed(1)} % of the window (all cores).`,
    '',
    `Redis commands per request: ${commandsLine(p.redisCommands)}.`,
  ];
}

/** The process a row belongs to, named alike on both sides (`floor gateway` and `gateway`, `worker-0` and `floor worker`). */
const role = (name: string) => name.replace(/^floor /, '').replace(/-\d+$/, '');
function comparison(f: Probe, m: Probe): string[] {
  /** `key` summed over `rows` by process. */
  const byRole = (rows: readonly Row[], key: (r: Row) => number) => {
    const sums = new Map<string, number>();
    for (const r of rows) sums.set(role(r.process), (sums.get(role(r.process)) ?? 0) + key(r));
    return sums;
  };
  const cpu = (p: Probe) => byRole(p.rows, (r) => r.cpuUsPerRequest);
  const mainWaits = (p: Probe) =>
    byRole(
      p.rows.filter((r) => r.thread === 'main'),
      (r) => r.voluntaryPerRequest,
    );
  const [fc, mc, fw, mw] = [cpu(f), cpu(m), mainWaits(f), mainWaits(m)];
  return [
    '## What the mesh adds to the floor, per process',
    '',
    `Same load; the floor answered ${f.inferPerSec.toFixed(0)} infer/s, the mesh ${m.inferPerSec.toFixed(0)}.`,
    '',
    '| process | floor CPU µs per request | mesh CPU µs per request | mesh − floor | main-thread waits per request, floor / mesh |',
    '|---|---|---|---|---|',
    ...[...mc.keys()].map((k) => {
      const waits = fw.has(k) ? `${num(fw.get(k) ?? 0, 2)} / ${num(mw.get(k) ?? 0, 2)}` : '–';
      return `| ${k} | ${(fc.get(k) ?? 0).toFixed(1)} | ${(mc.get(k) ?? 0).toFixed(1)} | ${((mc.get(k) ?? 0) - (fc.get(k) ?? 0)).toFixed(1)} | ${waits} |`;
    }),
  ];
}

const lines = [
  ...table('the mesh', meshProbe),
  ...(floor ? ['', ...table("the shape's floor", floor), '', ...comparison(floor, meshProbe)] : []),
];
const md = `${lines.join('\n')}\n`;
await mkdir(values.out, { recursive: true });
await writeFile(join(values.out, 'cpu-probe.md'), md);
await writeFile(
  join(values.out, 'cpu-probe.json'),
  `${JSON.stringify({ model, load, mesh: meshProbe, ...(floor ? { floor } : {}) }, null, 2)}\n`,
);
process.stdout.write(md);
