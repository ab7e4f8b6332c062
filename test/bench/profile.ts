/**
 * Where the mesh spends its CPU: runs the mesh on one model (`tiny` by default) with every service
 * under V8's sampling profiler, drives a fixed request rate (or concurrency) through the
 * gateway, then prints CPU ms per request for each process (RabbitMQ and
 * Redis included) and the top functions by self time in each service.
 *
 *   node --import tsx test/bench/profile.ts [--model tiny] [--rate 600 | --concurrency 64] [--secs 10] [--durability fast|durable] [--top 15] [--interval-us 1000]
 *
 * `--interval-us N` samples every N µs (V8's default is 1000): finer for the
 * short stretches of one request at low load.
 *
 * `--concurrency N` holds N requests in flight instead of a fixed rate: the
 * profile at peak throughput, where the services rather than the hops bound it.
 *
 * `--model clip_sim` profiles the benchmark's simulated NPU (one device, 8 streams).
 *
 * Writes the raw profiles (open them in Chrome DevTools) and a summary to
 * test/bench/results/profile/.
 */
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT } from '@ge-mesh/launcher';
import { httpTarget, LoadDriver } from '@ge-mesh/loadgen';
import { Redis } from 'ioredis';
import { REDIS_URL, startTestMesh } from '../support/mesh-harness.js';
import { brokerAndRedisPids, cpuSeconds, kernelCounts } from './process-metrics.js';
import { commandsLine, commandsPerRequest, redisCommandCalls } from './redis-commands.js';
import { CLIP_SIM, SIM_AICORES, writeSimRepository } from './sim-models.js';

const { values } = parseArgs({
  options: {
    model: { type: 'string', default: 'tiny' },
    rate: { type: 'string', default: '600' },
    concurrency: { type: 'string' },
    secs: { type: 'string', default: '10' },
    durability: { type: 'string' },
    top: { type: 'string', default: '15' },
    'interval-us': { type: 'string', default: '1000' },
    out: { type: 'string', default: join(ROOT, 'test/bench/results/profile') },
  },
});
const model = values.model;
const rate = Number(values.rate);
const concurrency = values.concurrency === undefined ? undefined : Number(values.concurrency);
const load = concurrency === undefined ? `${rate} req/s` : `concurrency ${concurrency}`;
const secs = Number(values.secs);
const top = Number(values.top);
const out = values.out;
const log = (s: string) => process.stderr.write(`${s}\n`);

await rm(out, { recursive: true, force: true });
const durability = values.durability ? ['--durability', values.durability] : [];
const simulated = model === CLIP_SIM.name;
const mesh = await startTestMesh({
  models: [model],
  logLevel: 'warn',
  nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${out}`, `--cpu-prof-interval=${Number(values['interval-us'])}`],
  ...(simulated
    ? {
        modelRepository: await writeSimRepository(CLIP_SIM),
        env: { GEMESH_SIM_DEVICES: '1', GEMESH_SIM_AICORES: String(SIM_AICORES) },
      }
    : {}),
  flags: {
    gateway: durability,
    batcher: [...durability, '--models', model],
    worker: [...durability, '--models', model, ...(simulated ? ['--runtime', 'ge'] : [])],
  },
});
const names = new Map(mesh.services.map((s) => [s.child.pid ?? 0, s.name]));
const external = brokerAndRedisPids();
const pids = [...names.keys(), ...external.map((e) => e.pid)];
const label = (pid: number) => names.get(pid) ?? external.find((e) => e.pid === pid)?.name ?? String(pid);

const target = await httpTarget({ url: mesh.url, model, batch: 1, inputData: 'random', binary: true });
const driver = new LoadDriver(
  target.send,
  concurrency === undefined
    ? { kind: 'rate', perSec: rate, distribution: 'constant' }
    : { kind: 'concurrency', concurrency },
);
driver.start();
await driver.window(2_000);
log(`warm; measuring ${secs} s at ${load}`);
const redis = new Redis(REDIS_URL);
const calls0 = await redisCommandCalls(redis);
const cpu0 = pids.map(cpuSeconds);
const k0 = pids.map(kernelCounts);
// V8 stamps samples with the monotonic clock, as hrtime does: keep only the measured window.
const from = Number(process.hrtime.bigint() / 1000n);
const w = await driver.window(secs * 1000);
const to = Number(process.hrtime.bigint() / 1000n);
const cpu1 = pids.map(cpuSeconds);
const k1 = pids.map(kernelCounts);
const calls1 = await redisCommandCalls(redis);
redis.disconnect();
await driver.stop();
await target.close();
await mesh.teardown();

const answered = w.requests - w.errors;
const lines: string[] = [
  `# CPU profile: ${model} at ${load} for ${secs} s (${values.durability ?? 'default'} durability)`,
  '',
  `${answered} answered, ${w.errors} errors, ${w.inferPerSec.toFixed(0)} infer/s, mean latency ${(w.latencyUs / 1000).toFixed(2)} ms`,
  '',
  '| process | CPU ms per request | write syscalls per request | read syscalls per request | context switches per request |',
  '|---|---|---|---|---|',
];
let total = 0;
pids.forEach((pid, i) => {
  const perReq = (((cpu1[i] ?? 0) - (cpu0[i] ?? 0)) * 1000) / Math.max(1, answered);
  total += perReq;
  const per = (k: keyof ReturnType<typeof kernelCounts>) =>
    (((k1[i]?.[k] ?? 0) - (k0[i]?.[k] ?? 0)) / Math.max(1, answered)).toFixed(2);
  lines.push(`| ${label(pid)} | ${perReq.toFixed(3)} | ${per('writes')} | ${per('reads')} | ${per('switches')} |`);
});
lines.push(`| **all** | **${total.toFixed(3)}** | | | |`, '');
lines.push(`Redis commands per request: ${commandsLine(commandsPerRequest(calls0, calls1, answered))}`, '');

// V8 .cpuprofile: nodes with callFrames, samples (node ids) and timeDeltas (µs).
interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  startTime: number;
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}
const files = (await readdir(out)).filter((f) => f.endsWith('.cpuprofile'));
for (const f of files.sort()) {
  // CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile
  const [, , , pid = 0, thread = 0] = f.split('.').map(Number);
  const p = JSON.parse(await readFile(join(out, f), 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  let all = 0;
  let t = p.startTime;
  p.samples.forEach((id, i) => {
    const n = byId.get(id);
    const dt = p.timeDeltas[i] ?? 0;
    t += dt;
    if (!n || t < from || t > to) return;
    const fn = n.callFrame;
    const where = fn.url
      ? `${fn.url.replace(/^.*node_modules\/(\.pnpm\/)?/, '').replace(`file://${ROOT}`, '')}:${fn.lineNumber + 1}`
      : '';
    const key = `${fn.functionName || '(anonymous)'} ${where}`.trim();
    self.set(key, (self.get(key) ?? 0) + dt);
    all += dt;
  });
  const busy = all - (self.get('(idle)') ?? 0);
  if (busy < 50_000) continue; // a thread that did nothing worth reading
  lines.push(`## ${label(pid)}${thread > 0 ? ` thread ${thread}` : ''}: ${(busy / 1000).toFixed(0)} ms busy`, '');
  lines.push('| self ms | % of busy | function |', '|---|---|---|');
  const rows = [...self.entries()].filter(([k]) => k !== '(idle)').sort((a, b) => b[1] - a[1]);
  for (const [k, us] of rows.slice(0, top)) {
    lines.push(`| ${(us / 1000).toFixed(1)} | ${((100 * us) / busy).toFixed(1)} | \`${k}\` |`);
  }
  lines.push('');
}
await writeFile(join(out, 'SUMMARY.md'), `${lines.join('\n')}\n`);
process.stdout.write(`${lines.join('\n')}\n`);
