/**
 * Soak: tiny at half the mesh's measured peak for a long run (10 minutes by
 * default), with a broker restart in the middle. Every answer is counted
 * (none may be lost), the resident memory of every mesh process is sampled
 * every 10 s, and the growth after warm-up is reported per service: a leak
 * shows up as a steady climb. Writes soak.md, soak.json and soak-rss.svg.
 *
 *   npm run soak -- [--minutes 10] [--rate <req/s>] [--warmup-minutes 2] [--outage-seconds 3] [--out dir]
 *
 * Without --rate the peak is measured first with a short closed-loop
 * concurrency sweep. Exits 1 when a request was lost or answered wrongly, or a
 * service exited.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT } from '@ge-mesh/launcher';
import { lineChartSvg, runClosedLoop } from '@ge-mesh/loadgen';
import { Pool } from 'undici';
import { readyAfter } from '../support/fault-scenario.js';
import { startTestMesh } from '../support/mesh-harness.js';
import { Reference } from '../support/reference.js';
import { startSoakDependencies } from './soak-deps.js';
import { type LoadCounts, OpenLoopLoad, type PreparedInputs, prepareTinyInputs } from './soak-load.js';
import { type RedisCensus, redisCensus } from './soak-redis.js';
import { type RssGrowth, type RssSample, rssGrowth, sampleRss } from './soak-rss.js';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    rate: { type: 'string' },
    'warmup-minutes': { type: 'string', default: '2' },
    'outage-seconds': { type: 'string', default: '3' },
    'sample-seconds': { type: 'string', default: '10' },
    'sweep-seconds': { type: 'string', default: '5' },
    out: { type: 'string', default: join(ROOT, 'test/bench/results') },
  },
});

function positive(name: string, v: string | undefined): number {
  const n = Number(v);
  if (!(n > 0)) throw new Error(`--${name} must be a positive number, got ${v}`);
  return n;
}

const minutes = positive('minutes', values.minutes);
const runS = minutes * 60;
// Warm-up never takes more than half a short run, so a short run still reports growth.
const warmupS = Math.min(positive('warmup-minutes', values['warmup-minutes']) * 60, runS / 2);
const outageMs = positive('outage-seconds', values['outage-seconds']) * 1000;
const sampleMs = positive('sample-seconds', values['sample-seconds']) * 1000;
const sweepMs = positive('sweep-seconds', values['sweep-seconds']) * 1000;
const REQUEST_TIMEOUT_MS = 5_000;
const LOST_AFTER_MS = REQUEST_TIMEOUT_MS + 1_000;
const SWEEP_LEVELS = [4, 16, 64, 128];

const log = (line: string) => process.stderr.write(`${line}\n`);
const mmss = (s: number) => `${Math.floor(s / 60)}:${String(Math.floor(s % 60)).padStart(2, '0')}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Closed-loop concurrency sweep; stops once a level adds less than 5 %. */
async function measurePeak(url: string, inputs: PreparedInputs) {
  const pool = new Pool(url, { connections: Math.max(...SWEEP_LEVELS) });
  const levels: Array<{ concurrency: number; inferPerSec: number; p99Ms: number; errors: number }> = [];
  try {
    for (const concurrency of SWEEP_LEVELS) {
      const r = await runClosedLoop({
        concurrency,
        durationMs: sweepMs,
        warmupMs: 1_000,
        send: async (_loop, seq) => {
          const res = await pool.request({
            path: '/v2/models/tiny/infer',
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: inputs.bodies[seq % inputs.bodies.length] as string,
          });
          await res.body.arrayBuffer();
          return res.statusCode === 200;
        },
      });
      levels.push({ concurrency, inferPerSec: r.inferPerSec, p99Ms: r.p99Us / 1000, errors: r.errors });
      log(`  peak sweep: c=${concurrency} ${r.inferPerSec.toFixed(0)} infer/s, p99 ${(r.p99Us / 1000).toFixed(1)} ms`);
      const best = Math.max(...levels.slice(0, -1).map((l) => l.inferPerSec), 0);
      if (levels.length > 1 && r.inferPerSec < best * 1.05) break;
    }
  } finally {
    await pool.close();
  }
  return { levels, peak: Math.max(...levels.map((l) => l.inferPerSec)) };
}

const started = new Date();
const deps = await startSoakDependencies(log);
const ref = new Reference();
let failed = false;
try {
  const mesh = await startTestMesh({
    models: ['tiny'],
    logLevel: 'warn',
    purge: deps.shared,
    env: { GEMESH_RABBITMQ_URL: deps.rabbitmqUrl, GEMESH_REDIS_URL: deps.redisUrl },
    flags: {
      gateway: ['--request-timeout-ms', String(REQUEST_TIMEOUT_MS)],
      batcher: ['--models', 'tiny'],
      worker: ['--models', 'tiny'],
    },
  });
  try {
    const inputs = await prepareTinyInputs(ref);
    let sweep: Awaited<ReturnType<typeof measurePeak>> | undefined;
    let rate: number;
    if (values.rate !== undefined) rate = positive('rate', values.rate);
    else {
      log('measuring the peak (closed-loop concurrency sweep)');
      sweep = await measurePeak(mesh.url, inputs);
      rate = Math.max(1, Math.round(sweep.peak / 2));
    }
    log(
      `soak: ${minutes} min of tiny at ${rate} req/s, broker restart at ${mmss(runS / 2)}, RSS every ${sampleMs / 1000} s`,
    );

    const procs = () => [...mesh.services.map((s) => ({ service: s.name, pid: s.child.pid })), ...deps.procs()];
    const samples: RssSample[] = [];
    const load = new OpenLoopLoad(mesh.url, rate, inputs, LOST_AFTER_MS);
    const t0 = Date.now();
    const elapsedS = () => (Date.now() - t0) / 1000;
    load.start();
    let restart: BrokerRestart | undefined;
    const restartDone = (async () => {
      await sleep(t0 + (runS / 2) * 1000 - Date.now());
      const atS = elapsedS();
      log(`[${mmss(atS)}] broker restart: down for ${outageMs / 1000} s`);
      const { stopMs, startMs } = await deps.restartBroker(outageMs);
      const readyMs = await readyAfter(mesh.url, Date.now(), 30_000);
      restart = { atS, stopMs, startMs, outageMs, readyMs };
      log(`[${mmss(elapsedS())}] broker back (stop ${stopMs} ms, start ${startMs} ms); mesh ready ${readyMs} ms later`);
    })();
    samples.push(...sampleRss(0, procs()));
    while (elapsedS() < runS) {
      await sleep(Math.min(sampleMs, t0 + runS * 1000 - Date.now()));
      const t = Math.round(elapsedS());
      const now = sampleRss(t, procs());
      samples.push(...now);
      const c = load.totals;
      const w = load.window();
      log(
        `[${mmss(t)}] sent ${c.sent} (${(c.sent / Math.max(1, t)).toFixed(0)}/s) 200 ${c.ok} 503 ${c.typed} wrong ${c.wrong} lost ${c.lost}` +
          ` p50 ${w.p50Ms.toFixed(1)} ms p99 ${w.p99Ms.toFixed(1)} ms | ` +
          now.map((s) => `${s.service} ${s.rssMiB.toFixed(0)} MiB`).join(', '),
      );
    }
    const counts = await load.stop();
    await restartDone;
    // Taken before the mesh stops: what the namespace holds in Redis after the run.
    const redis = await redisCensus(deps.redisUrl, mesh.namespace);
    log(
      `redis: ${redis.keys} keys of the namespace (${redis.noTtl} without TTL), used_memory ${redis.usedMemoryMiB.toFixed(1)} MiB: ` +
        redis.patterns
          .slice(0, 6)
          .map((p) => `${p.pattern} ${p.keys}`)
          .join(', '),
    );
    const growth = rssGrowth(samples, warmupS);
    const exits = mesh.services
      .filter((s) => s.child.exitCode !== null || s.child.signalCode !== null)
      .map((s) => s.name);
    const restarts = mesh.restarts();
    failed = counts.lost > 0 || counts.wrong > 0 || exits.length > 0 || restarts > 0;

    const machine = `${cpus().length} cores (${cpus()[0]?.model.trim() ?? 'unknown'}), Node ${process.version}`;
    const result: SoakResult = {
      date: started.toISOString(),
      machine,
      minutes,
      warmupMinutes: warmupS / 60,
      rate,
      peak: sweep ?? null,
      dependencies: deps.how,
      restart,
      requestTimeoutMs: REQUEST_TIMEOUT_MS,
      counts,
      serviceExits: exits,
      serviceRestarts: restarts,
      growth,
      redis: { ...redis, patterns: redis.patterns.slice(0, 50) },
      samples,
    };
    await mkdir(values.out, { recursive: true });
    await writeFile(join(values.out, 'soak.json'), `${JSON.stringify(result, null, 2)}\n`);
    await writeFile(
      join(values.out, 'soak-rss.svg'),
      await lineChartSvg({
        title: `RSS during a ${minutes}-minute soak (tiny at ${rate} req/s, broker restart at ${mmss(runS / 2)})`,
        rows: samples.map((s) => ({
          minute: Number((s.t / 60).toFixed(2)),
          rss: Number(s.rssMiB.toFixed(1)),
          process: s.service,
        })),
        x: 'minute',
        y: 'rss',
        series: 'process',
        xTitle: 'minutes',
        yTitle: 'RSS (MiB)',
      }),
    );
    await writeFile(join(values.out, 'soak.md'), report(result));
    log(`wrote ${join(values.out, 'soak.md')}, soak.json and soak-rss.svg`);
    log(
      `answers: ${counts.sent} sent, ${counts.ok} 200, ${counts.typed} typed 503, ${counts.wrong} wrong, ${counts.lost} lost; ` +
        growth.map((g) => `${g.service} ${g.growthMiB >= 0 ? '+' : ''}${g.growthMiB.toFixed(1)} MiB`).join(', '),
    );
  } finally {
    await mesh.teardown();
  }
} finally {
  await deps.stop();
  await ref.close();
}
if (failed) process.exitCode = 1;

interface BrokerRestart {
  /** Seconds into the soak. */
  atS: number;
  stopMs: number;
  startMs: number;
  outageMs: number;
  /** From the broker back until the gateway was ready. */
  readyMs: number;
}

interface SoakResult {
  date: string;
  machine: string;
  minutes: number;
  warmupMinutes: number;
  rate: number;
  peak: Awaited<ReturnType<typeof measurePeak>> | null;
  dependencies: string;
  restart: BrokerRestart | undefined;
  requestTimeoutMs: number;
  counts: LoadCounts;
  serviceExits: string[];
  serviceRestarts: number;
  growth: RssGrowth[];
  /** The namespace's keys in Redis at the end (the 50 largest patterns). */
  redis: RedisCensus;
  samples: RssSample[];
}

function report(r: SoakResult): string {
  const c = r.counts;
  const f1 = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : '–');
  const lines = [
    `# Soak: ${r.minutes} minutes${r.minutes < 10 ? ' (a short run, not the full 10-minute soak)' : ''}`,
    '',
    `Measured ${r.date} on ${r.machine}, on a machine shared with other work. tiny over HTTP (JSON, batch 1), open loop at ${r.rate} req/s` +
      (r.peak
        ? `, half the peak of a closed-loop sweep (${r.peak.levels.map((l) => `c=${l.concurrency}: ${l.inferPerSec.toFixed(0)}`).join(', ')} infer/s).`
        : ' (given).') +
      ` Gateway deadline ${r.requestTimeoutMs} ms; a request without an answer by then + 1 s counts as lost. Dependencies: ${r.dependencies}.`,
    '',
    '## Answers',
    '',
    '| sent | 200 (outputs checked) | typed 503 | wrong | lost | service exits | service restarts |',
    '|---|---|---|---|---|---|---|',
    `| ${c.sent} | ${c.ok} | ${c.typed} | ${c.wrong} | ${c.lost} | ${r.serviceExits.length} | ${r.serviceRestarts} |`,
    '',
    Object.keys(c.codes).length > 0
      ? `Other answers: ${Object.entries(c.codes)
          .map(([k, n]) => `${n} × ${k}`)
          .join('; ')}.`
      : 'Every answer was a 200 with the right outputs.',
    '',
    '## Broker restart',
    '',
    r.restart
      ? `At ${mmss(r.restart.atS)}: stopped in ${r.restart.stopMs} ms, down ${r.restart.outageMs / 1000} s, started again in ${r.restart.startMs} ms; the gateway was ready ${r.restart.readyMs} ms after the broker was back.`
      : 'The restart did not complete.',
    '',
    `## Resident memory after warm-up (first ${f1(r.warmupMinutes)} min)`,
    '',
    '| process | RSS after warm-up MiB | at the end MiB | max MiB | growth MiB | slope MiB/min | samples |',
    '|---|---|---|---|---|---|---|',
    ...r.growth.map(
      (g) =>
        `| ${g.service}${g.pids > 1 ? ` (${g.pids} processes)` : ''} | ${f1(g.afterWarmupMiB)} | ${f1(g.endMiB)} | ${f1(g.maxMiB)} | ${f1(g.growthMiB)} | ${f1(g.slopeMiBPerMin)} | ${g.samples} |`,
    ),
    '',
    'RSS of every process every sampling interval: ![RSS over time](soak-rss.svg). The slope is a least-squares fit over the samples after warm-up; the broker restart in the middle is part of that span.',
    '',
    '## Redis at the end',
    '',
    `The namespace held ${r.redis.keys} keys, ${r.redis.noTtl} of them without a TTL; Redis used_memory ${f1(r.redis.usedMemoryMiB)} MiB. Batch manifests and request claims expire 30 s after the last deadline they cover, so Redis holds the requests of the last deadline + 30 s and stays level; keys without a TTL that grow with the requests would be a leak.`,
    '',
    '| key pattern | keys | without TTL | longest TTL left, s |',
    '|---|---|---|---|',
    ...r.redis.patterns.slice(0, 12).map((p) => `| \`${p.pattern}\` | ${p.keys} | ${p.noTtl} | ${p.maxTtlS} |`),
    '',
  ];
  return lines.join('\n');
}
