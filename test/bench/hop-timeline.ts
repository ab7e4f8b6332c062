/**
 * Where the mesh's time at concurrency 1 goes beyond the shape's floor, hop
 * by hop. The floor (shape-floor.ts) and the mesh run tiny one after the
 * other, one request at a time, while the kernel's syscall tracepoints record
 * every socket and eventfd read and write of their processes
 * (syscall-trace.ts, root only). Each request is cut at the same ten points in
 * both: the gateway reads the HTTP request, publishes it, the batcher reads
 * it, publishes the batch, the worker reads it, posts it to its lane, the
 * lane posts back, the worker publishes the replies, the gateway reads them
 * and writes the HTTP answer. A segment is the time from one point to the
 * next; the table gives each one's median in both and the difference, which
 * is what the mesh's code adds to that stretch.
 *
 * A point is a syscall's entry, so a segment holds the work between two
 * calls plus the first call itself. The trace slows both sides a little; the
 * untraced p50 of each is measured first, in the same run.
 *
 * Also: on the mesh's worker, whether the lane or start-batch's Redis round
 * trip (which runs beside it) is what the replies wait for.
 *
 *   node --import tsx test/bench/hop-timeline.ts [--requests 400] [--warmup 3000]
 *
 * Writes test/bench/results/hop-timeline.{md,json}.
 */
import { writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { demoModel, sampleInputs } from '@ge-mesh/demo-models';
import { ROOT } from '@ge-mesh/launcher';
import { percentile } from '@ge-mesh/loadgen';
import { RABBITMQ_URL, REDIS_URL, startTestMesh } from '../support/mesh-harness.js';
import { binaryInferBody } from '../support/reference.js';
import { type Proc, serviceProcs } from './host-processes.js';
import { startShapeFloor } from './shape-floor.js';
import { canTrace, monotonicMs, type SyscallEvent, SyscallTrace } from './syscall-trace.js';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '400' },
    warmup: { type: 'string', default: '3000' },
    out: { type: 'string', default: join(ROOT, 'test/bench/results') },
  },
});
const requests = Number(values.requests);
const warmup = Number(values.warmup);
const log = (s: string) => process.stderr.write(`${s}\n`);

if (!canTrace()) {
  log(
    'hop-timeline needs root and tracefs at /sys/kernel/tracing (the syscall tracepoints): mount -t tracefs nodev /sys/kernel/tracing',
  );
  process.exit(2);
}

type Point = (e: SyscallEvent) => boolean;
const writes = (e: SyscallEvent) => e.call !== 'read';
const onWorkerMain = (e: SyscallEvent) => e.proc.startsWith('worker') && e.main;
/** The ten points of a request, in order; a process is named by its role. */
const POINTS: ReadonlyArray<[string, Point]> = [
  ['gateway reads the HTTP request', (e) => e.proc === 'gateway' && e.call === 'read' && e.peer === 'http'],
  ['gateway publishes the request', (e) => e.proc === 'gateway' && writes(e) && e.peer === 'broker'],
  ['batcher reads it', (e) => e.proc === 'batcher' && e.call === 'read' && e.peer === 'broker'],
  ['batcher publishes the batch', (e) => e.proc === 'batcher' && writes(e) && e.peer === 'broker'],
  ['worker reads the batch', (e) => onWorkerMain(e) && e.call === 'read' && e.peer === 'broker'],
  ['worker posts it to the lane', (e) => onWorkerMain(e) && writes(e) && e.peer === 'eventfd'],
  ['lane posts the replies back', (e) => e.proc.startsWith('worker') && !e.main && writes(e) && e.peer === 'eventfd'],
  ['worker publishes the replies', (e) => onWorkerMain(e) && writes(e) && e.peer === 'broker'],
  ['gateway reads them', (e) => e.proc === 'gateway' && e.call === 'read' && e.peer === 'broker'],
  ['gateway writes the HTTP answer', (e) => e.proc === 'gateway' && writes(e) && e.peer === 'http'],
];

interface Side {
  setup: string;
  untracedP50Ms: number;
  tracedP50Ms: number;
  /** Median µs from the previous point (the first: from the client's send). */
  segmentsUs: number[];
  matched: number;
  /** Mesh worker: median µs from reading the batch to the lane's answer and to start-batch's. */
  worker?: { laneUs: number; startBatchUs: number; startBatchLast: number };
}

const { body, headerLength } = binaryInferBody(sampleInputs(demoModel('tiny'), 1, 7));

/** One request on one kept-alive connection: when it was sent (monotonic ms) and how long it took. */
function sender(url: string): () => Promise<{ sentAt: number; ms: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const target = new URL(url);
  return () =>
    new Promise((resolve, reject) => {
      const sentAt = monotonicMs();
      const req = request(
        {
          host: target.hostname,
          port: target.port,
          path: '/v2/models/tiny/infer',
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/octet-stream', 'inference-header-content-length': headerLength },
        },
        (res) => {
          if (res.statusCode !== 200) reject(new Error(`HTTP ${res.statusCode}`));
          res.resume();
          res.on('end', () => resolve({ sentAt, ms: monotonicMs() - sentAt }));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
}

const median = (xs: number[]) =>
  percentile(
    [...xs].sort((a, b) => a - b),
    50,
  );
const portOf = (url: string) => Number(new URL(url).port);

/** The events of each request, cut at the points: µs from the previous point, or null if one is missing. */
function segments(events: SyscallEvent[], sentAt: number, until: number): number[] | null {
  const window = events.filter((e) => e.t >= sentAt && e.t < until);
  const out: number[] = [];
  let prev = sentAt;
  let i = 0;
  for (const [, point] of POINTS) {
    while (i < window.length && !point(window[i] as SyscallEvent)) i++;
    const e = window[i++];
    if (!e) return null;
    out.push((e.t - prev) * 1000);
    prev = e.t;
  }
  return out;
}

/** The worker's two paths after it reads a batch: to the lane's answer and to start-batch's. */
function workerPaths(events: SyscallEvent[], sentAt: number, until: number) {
  const w = events.filter((e) => e.t >= sentAt && e.t < until && onWorkerMain(e));
  const got = w.find((e) => e.call === 'read' && e.peer === 'broker');
  if (!got) return null;
  const after = w.filter((e) => e.t > got.t);
  const lane = after.find((e) => e.call === 'read' && e.peer === 'eventfd');
  const asked = after.find((e) => writes(e) && e.peer === 'redis');
  const answered = asked && after.find((e) => e.t > asked.t && e.call === 'read' && e.peer === 'redis');
  if (!lane || !answered) return null;
  return { laneUs: (lane.t - got.t) * 1000, startBatchUs: (answered.t - got.t) * 1000 };
}

async function measure(setup: string, url: string, procs: Proc[]): Promise<Side> {
  const send = sender(url);
  log(`${setup}: ${warmup} warm-up requests`);
  const untraced: number[] = [];
  for (let i = 0; i < warmup; i++) {
    const { ms } = await send();
    if (i >= warmup / 2) untraced.push(ms);
  }
  const trace = new SyscallTrace(procs, { broker: portOf(RABBITMQ_URL) || 5672, redis: portOf(REDIS_URL) || 6379 });
  trace.start();
  const sent: Array<{ sentAt: number; ms: number }> = [];
  try {
    for (let i = 0; i < requests; i++) {
      sent.push(await send());
      if (i % 100 === 99) process.stderr.write(`\r  traced ${i + 1}/${requests}`);
    }
  } finally {
    process.stderr.write('\n');
  }
  // Writes that trail the answer (a finish-batch) land before the next request's send.
  await new Promise((r) => setTimeout(r, 50));
  const events = trace.stop();
  const cut: number[][] = [];
  const paths: Array<{ laneUs: number; startBatchUs: number }> = [];
  sent.forEach(({ sentAt }, i) => {
    const until = sent[i + 1]?.sentAt ?? sentAt + 50;
    const s = segments(events, sentAt, until);
    if (s) cut.push(s);
    const p = setup === 'GE Mesh' ? workerPaths(events, sentAt, until) : null;
    if (p) paths.push(p);
  });
  return {
    setup,
    untracedP50Ms: median(untraced),
    tracedP50Ms: median(sent.map((s) => s.ms)),
    segmentsUs: POINTS.map((_, k) => median(cut.map((s) => s[k] as number))),
    matched: cut.length,
    ...(paths.length > 0
      ? {
          worker: {
            laneUs: median(paths.map((p) => p.laneUs)),
            startBatchUs: median(paths.map((p) => p.startBatchUs)),
            startBatchLast: paths.filter((p) => p.startBatchUs > p.laneUs).length / paths.length,
          },
        }
      : {}),
  };
}

const floor = await startShapeFloor('tiny');
let floorSide: Side;
try {
  floorSide = await measure(
    'the shape’s floor',
    floor.url,
    floor.procs.map((p) => ({ ...p, name: p.name.replace('floor ', '') })),
  );
} finally {
  await floor.stop();
}
const mesh = await startTestMesh({ models: ['tiny'], logLevel: 'warn' });
let meshSide: Side;
try {
  meshSide = await measure('GE Mesh', mesh.url, serviceProcs(mesh));
} finally {
  await mesh.teardown();
}

const us = (x: number) => x.toFixed(0);
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const floorSum = sum(floorSide.segmentsUs);
const meshSum = sum(meshSide.segmentsUs);
const lines = [
  '# Hop timeline: tiny at concurrency 1, the mesh against the shape’s floor',
  '',
  `Measured ${new Date().toISOString()}: ${requests} traced requests each, after ${warmup} untraced ones (\`test/bench/hop-timeline.ts\`). Medians of each segment, µs; a segment ends when the named syscall is entered.`,
  '',
  `| | ${floorSide.setup} | ${meshSide.setup} |`,
  '|---|---|---|',
  `| p50 untraced, ms | ${floorSide.untracedP50Ms.toFixed(2)} | ${meshSide.untracedP50Ms.toFixed(2)} |`,
  `| p50 traced, ms | ${floorSide.tracedP50Ms.toFixed(2)} | ${meshSide.tracedP50Ms.toFixed(2)} |`,
  `| requests cut at every point | ${floorSide.matched} | ${meshSide.matched} |`,
  '',
  '| until | floor µs | mesh µs | mesh − floor µs |',
  '|---|---|---|---|',
  ...POINTS.map(
    ([name], k) =>
      `| ${name} | ${us(floorSide.segmentsUs[k] ?? 0)} | ${us(meshSide.segmentsUs[k] ?? 0)} | ${us((meshSide.segmentsUs[k] ?? 0) - (floorSide.segmentsUs[k] ?? 0))} |`,
  ),
  `| **sum of medians** | ${us(floorSum)} | ${us(meshSum)} | ${us(meshSum - floorSum)} |`,
  '',
  ...(meshSide.worker
    ? [
        `Mesh worker, from reading the batch: the lane's answer is back after ${us(meshSide.worker.laneUs)} µs, start-batch's after ${us(meshSide.worker.startBatchUs)} µs (median); start-batch is the later one in ${(meshSide.worker.startBatchLast * 100).toFixed(0)} % of requests. The replies wait for both.`,
      ]
    : []),
];
const md = `${lines.join('\n')}\n`;
process.stdout.write(md);
await writeFile(join(values.out, 'hop-timeline.md'), md);
await writeFile(
  join(values.out, 'hop-timeline.json'),
  `${JSON.stringify({ points: POINTS.map(([n]) => n), sides: [floorSide, meshSide] }, null, 2)}\n`,
);
process.exit(0);
