import { writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { barChartSvg, type LevelResult, lineChartSvg } from '@ge-mesh/loadgen';
import type { EngineRow } from './engine-alone.js';
import type { UsageRow } from './host-processes.js';
import { type WakeupRow, wakeupSentence } from './host-wakeup.js';
import type { SideRow } from './side-by-side.js';
import { latencySpec, modelledCeiling, type SimModel } from './sim-models.js';
import { type TracingRow, tracingSection } from './tracing-overhead.js';

/** What one `npm run bench` measured, and how REPORT.md and the plots present it. */
export const SETUP = {
  naive: 'naive server (ort, no batching)',
  mesh: 'GE Mesh (ort, 1 CPU worker)',
  meshDurable: 'GE Mesh (ort, 1 CPU worker, --durability durable)',
  meshGrpc: 'GE Mesh over gRPC (ort, 1 CPU worker, ModelInfer)',
  echoFast: 'RabbitMQ round trip only (fast: classic queue, transient)',
  echoDurable: 'RabbitMQ round trip only (durable: quorum queue, persistent)',
  naiveSim: 'naive server, 1 simulated NPU (8 lanes)',
  engine: 'engine alone (onnxruntime, no server, best setup)',
  floor: "the shape's floor (the mesh's hops, no work in them)",
} as const;

export interface Sweep {
  model: string;
  setup: string;
  results: LevelResult[];
  /** Why this sweep has no results (e.g. the services refused a flag). */
  notMeasured?: string;
}

export interface SimRow {
  setup: string;
  devices: number;
  best?: LevelResult;
}

export interface ScalingRow {
  devices: number;
  concurrency: number;
  result?: LevelResult;
  /** throughput(n) / (n × throughput(1)). */
  efficiency?: number;
  notMeasured?: string;
}

export interface RateRun {
  model: string;
  perSec: number;
  result?: LevelResult;
  /** CPU of every serving process over the run, per answered request. */
  cpuMsPerRequest?: number;
  notMeasured?: string;
}

export interface Target {
  what: string;
  ratio?: number;
  measured: string;
  target: string;
  met?: boolean;
  /** What the shape's floor reaches on the same ratio (or budget), where it applies. */
  floor?: string;
  /** The floor itself misses the target: the mesh cannot meet it with this shape here. */
  floorMisses?: boolean;
}

export interface BenchData {
  windowMs: number;
  maxTrials: number;
  /** Load each server got before its first measured level (absent in runs before it existed). */
  warmupMs?: number;
  engine: EngineRow[];
  sweeps: Sweep[];
  clip: { model: SimModel; rows: SimRow[] };
  scaling: { model: SimModel; windowMs: number; rows: ScalingRow[] };
  rate: RateRun;
  /** The shape's floor at the same fixed rate; absent when not measured. */
  floorRate?: RateRun;
  usage: UsageRow[];
  /** Tracing off vs on (tracing-overhead.ts); absent when not measured. */
  tracing?: TracingRow[];
  /** tiny at c=1, 16 and 64: the mesh, the bare round trip, the floor and the naive server, windows interleaved. */
  tinySides?: SideRow[];
  /** Rounds of interleaved windows behind `tinySides`. */
  tinySidesRounds?: number;
  /** resnet18: the mesh and the naive server at their sweeps' best concurrency and the engine alone at its best, windows interleaved. */
  resnetSides?: SideRow[];
  /** Rounds of interleaved windows behind `resnetSides`. */
  resnetSidesRounds?: number;
  /** Window of each side in `resnetSides`, ms. */
  resnetSidesWindowMs?: number;
  /** The engine alone's setup in `resnetSides`. */
  resnetSidesEngine?: { tier: number; sessions: number; threads: number };
  /** The host's idle-wakeup penalty (host-wakeup.ts). */
  wakeup?: WakeupRow[];
}

const ms = (us: number | undefined) => (us === undefined || Number.isNaN(us) ? '–' : (us / 1000).toFixed(2));
const x = (r: number | undefined) => (r === undefined || !Number.isFinite(r) ? '–' : `${r.toFixed(2)}×`);
const num = (v: number | undefined, digits = 1) => (v === undefined || !Number.isFinite(v) ? '–' : v.toFixed(digits));

function sweepOf(d: BenchData, model: string, setup: string): Sweep | undefined {
  return d.sweeps.find((s) => s.model === model && s.setup === setup);
}
/** A setup's best level in its sweep of `model`. */
export function peak(d: BenchData, model: string, setup: string): LevelResult | undefined {
  return [...(sweepOf(d, model, setup)?.results ?? [])].sort((a, b) => b.inferPerSec - a.inferPerSec)[0];
}
function at(d: BenchData, model: string, setup: string, level: number): LevelResult | undefined {
  return sweepOf(d, model, setup)?.results.find((r) => r.level === level);
}
const div = (a: number | undefined, b: number | undefined) => (a !== undefined && b ? a / b : undefined);
/** The engine alone's best tier and setup for `model`. */
export const engineBest = (d: BenchData, model: string) =>
  d.engine.filter((r) => r.model === model).sort((a, b) => b.inferPerSec - a.inferPerSec)[0];

const CLIP_P99_BOUND_US = 150_000;

/** CPU ms per answered request of every process of a scenario; undefined when not measured. */
export function scenarioCpu(d: BenchData, scenario: string): number | undefined {
  const v = d.usage.find((u) => u.scenario === scenario)?.allCpuMsPerRequest;
  return v !== undefined && Number.isFinite(v) ? v : undefined;
}

/**
 * tiny's p50 at concurrency 1 for one setup: from the interleaved windows when
 * the run has them (a ratio of latencies a millisecond or two apart must not
 * span minutes of a shared host's drift), else from the setup's sweep.
 */
function c1P50Us(d: BenchData, setup: string): number | undefined {
  const side = d.tinySides?.find((r) => r.side === setup && r.load === 'c=1');
  return side ? side.p50Ms * 1000 : at(d, 'tiny', setup, 1)?.p50Us;
}

/** tiny's best throughput for one setup and the load it came at: from the interleaved windows when the run has them, else from the sweep. */
function tinyPeak(d: BenchData, setup: string): { inferPerSec: number; load: string } | undefined {
  const rows = d.tinySides?.filter((r) => r.side === setup) ?? [];
  const best = [...rows].sort((a, b) => b.inferPerSec - a.inferPerSec)[0];
  if (best) return { inferPerSec: best.inferPerSec, load: best.load };
  const p = peak(d, 'tiny', setup);
  return p ? { inferPerSec: p.inferPerSec, load: `c=${p.level}` } : undefined;
}

/**
 * resnet18's best throughput for one setup (the engine alone included) and
 * where it came: from the interleaved windows when the run has them, else
 * from the setup's sweep or the engine's own run.
 */
function resnetPeak(d: BenchData, setup: string): { inferPerSec: number; load: string } | undefined {
  const side = d.resnetSides?.find((r) => r.side === setup);
  const e = d.resnetSidesEngine;
  if (side) {
    const load = setup === SETUP.engine && e ? engineSetup(e.tier, e.sessions) : side.load;
    return { inferPerSec: side.inferPerSec, load };
  }
  if (setup === SETUP.engine) {
    const best = engineBest(d, 'resnet18');
    return best ? { inferPerSec: best.inferPerSec, load: engineSetup(best.tier, best.sessions) } : undefined;
  }
  const p = peak(d, 'resnet18', setup);
  return p ? { inferPerSec: p.inferPerSec, load: `c=${p.level}` } : undefined;
}

const engineSetup = (tier: number, sessions: number) => `tier ${tier}, ${sessions} session(s)`;

const interleaved = (d: BenchData) => (d.tinySides?.length ? ', windows interleaved' : '');

/** The targets the mesh is held to, each with what this run measured. */
export function targets(d: BenchData): Target[] {
  const out: Target[] = [];
  const meshC1 = c1P50Us(d, SETUP.mesh);
  const echoC1 = c1P50Us(d, SETUP.echoFast);
  const r1 = div(meshC1, echoC1);
  const floorC1 = c1P50Us(d, SETUP.floor);
  const f1 = div(floorC1, echoC1);
  out.push({
    what: `tiny, c=1 p50: mesh / bare RabbitMQ round trip (fast)${interleaved(d)}`,
    ratio: r1,
    measured: `${ms(meshC1)} ms / ${ms(echoC1)} ms`,
    target: '≤ 4×',
    ...(r1 !== undefined ? { met: r1 <= 4 } : {}),
    ...(f1 !== undefined ? { floor: `${x(f1)} (${ms(floorC1)} ms)`, floorMisses: f1 > 4 } : {}),
  });
  const tm = tinyPeak(d, SETUP.mesh);
  const tn = tinyPeak(d, SETUP.naive);
  const rt = div(tm?.inferPerSec, tn?.inferPerSec);
  out.push({
    what: `tiny, peak: mesh / naive server${interleaved(d)}`,
    ratio: rt,
    measured: `${num(tm?.inferPerSec)} (${tm?.load ?? '–'}) / ${num(tn?.inferPerSec)} (${tn?.load ?? '–'}) infer/s`,
    target: '≥ 0.5×',
    ...(rt !== undefined ? { met: rt >= 0.5 } : {}),
    ...floorPeak(d, tn?.inferPerSec, 0.5),
  });
  const resnetInterleaved = d.resnetSides?.length ? ', windows interleaved' : '';
  const m = resnetPeak(d, SETUP.mesh);
  const n = resnetPeak(d, SETUP.naive);
  const r = div(m?.inferPerSec, n?.inferPerSec);
  out.push({
    what: `resnet18, peak: mesh / naive server${resnetInterleaved}`,
    ratio: r,
    measured: `${num(m?.inferPerSec)} (${m?.load ?? '–'}) / ${num(n?.inferPerSec)} (${n?.load ?? '–'}) infer/s`,
    target: '≥ 0.9×',
    ...(r !== undefined ? { met: r >= 0.9 } : {}),
    ...floorBudget(d, n?.inferPerSec, 0.9),
  });
  const eb = resnetPeak(d, SETUP.engine);
  const re = div(m?.inferPerSec, eb?.inferPerSec);
  out.push({
    what: `resnet18, peak: mesh / engine alone (best)${resnetInterleaved}`,
    ratio: re,
    measured: `${num(m?.inferPerSec)} / ${num(eb?.inferPerSec)} infer/s (${eb?.load ?? '–'})`,
    target: '≥ 0.8×',
    ...(re !== undefined ? { met: re >= 0.8 } : {}),
    ...floorBudget(d, eb?.inferPerSec, 0.8),
  });
  // Throughput under a latency bound: the busiest load whose p99 stays within 150 ms (else the busiest).
  const clipLevels = sweepOf(d, d.clip.model.name, 'GE Mesh, 1 simulated NPU')?.results ?? [];
  const clip =
    [...clipLevels].filter((r) => r.p99Us <= CLIP_P99_BOUND_US).sort((a, b) => b.inferPerSec - a.inferPerSec)[0] ??
    d.clip.rows.find((r) => r.setup === 'GE Mesh' && r.devices === 1)?.best;
  const ceiling = modelledCeiling(d.clip.model);
  const rc = div(clip?.inferPerSec, ceiling);
  out.push({
    what: `${d.clip.model.name}, 1 simulated NPU: mesh / modelled ceiling at the busiest load with p99 ≤ 150 ms`,
    ratio: rc,
    measured: `${num(clip?.inferPerSec)} / ${num(ceiling)} infer/s (c=${clip?.level ?? '–'}), p99 ${ms(clip?.p99Us)} ms`,
    target: '≥ 0.8× with p99 ≤ 150 ms',
    ...(rc !== undefined && clip ? { met: rc >= 0.8 && clip.p99Us <= CLIP_P99_BOUND_US } : {}),
  });
  const s1 = d.scaling.rows.find((r) => r.devices === 1)?.result;
  const s4row = d.scaling.rows.find((r) => r.devices === 4);
  out.push({
    what: `${d.scaling.model.name}: scaling efficiency 1 → 4 simulated NPUs`,
    ...(s4row?.efficiency !== undefined ? { ratio: s4row.efficiency } : {}),
    measured: `${num(s4row?.result?.inferPerSec)} infer/s on 4 / (4 × ${num(s1?.inferPerSec)} on 1)`,
    target: '≥ 0.9',
    ...(s4row?.efficiency !== undefined ? { met: s4row.efficiency >= 0.9 } : {}),
  });
  const cpu = d.rate.cpuMsPerRequest;
  out.push({
    what: `${d.rate.model} at ${d.rate.perSec} req/s offered: CPU ms per request, all processes`,
    measured:
      cpu === undefined
        ? `not measured${d.rate.notMeasured ? ` (${d.rate.notMeasured})` : ''}`
        : `${cpu.toFixed(3)} ms (${num(d.rate.result?.inferPerSec)} req/s answered)`,
    target: '≤ 0.6 ms',
    ...(cpu !== undefined ? { met: cpu <= 0.6 } : {}),
    ...(d.floorRate?.cpuMsPerRequest !== undefined
      ? { floor: `${d.floorRate.cpuMsPerRequest.toFixed(3)} ms`, floorMisses: d.floorRate.cpuMsPerRequest > 0.6 }
      : {}),
  });
  return out;
}

/** tiny's peak: the floor's best throughput against the same reference. */
function floorPeak(d: BenchData, reference: number | undefined, goal: number): Partial<Target> {
  const f = tinyPeak(d, SETUP.floor);
  const r = div(f?.inferPerSec, reference);
  return r === undefined
    ? {}
    : { floor: `${x(r)} (${num(f?.inferPerSec)} infer/s, ${f?.load})`, floorMisses: r < goal };
}

/**
 * resnet18: the floor runs no model, so it is read as CPU. At the target's
 * throughput the cores give cores × 1000 / (goal × reference) ms per request;
 * onnxruntime takes its CPU per inference from the engine-alone run; what is
 * left is the budget for everything else, against the floor's CPU per request
 * (all its processes, RabbitMQ and Redis, over its sweep).
 */
function floorBudget(d: BenchData, reference: number | undefined, goal: number): Partial<Target> {
  const floorCpu = scenarioCpu(d, 'floor resnet18');
  const engine = engineBest(d, 'resnet18')?.cpuMsPerInfer;
  if (floorCpu === undefined || engine === undefined || !reference) return {};
  const budget = (cpus().length * 1000) / (goal * reference) - engine;
  return {
    floor: `${floorCpu.toFixed(1)} ms CPU per request moving the bytes; the target leaves ${budget.toFixed(1)} ms beside onnxruntime's ${engine.toFixed(1)} (computed)`,
    floorMisses: floorCpu > budget,
  };
}

function targetsSection(t: Target[]): string[] {
  const out = [
    '## Targets',
    '',
    "The last column is the shape's floor on the same ratio: the mesh's hops and Redis round trips with no work in them (below).",
    '',
    "| what | ratio | measured | target | met | the shape's floor |",
    '|---|---|---|---|---|---|',
  ];
  for (const r of t) {
    const met = r.met === undefined ? '–' : r.met ? 'yes' : 'no';
    const ratio = r.ratio === undefined ? '–' : r.what.includes('efficiency') ? r.ratio.toFixed(2) : x(r.ratio);
    out.push(`| ${r.what} | ${ratio} | ${r.measured} | ${r.target} | ${met} | ${r.floor ?? '–'} |`);
  }
  const below = t.filter((r) => r.floorMisses).map((r) => r.what);
  if (below.length > 0) {
    out.push(
      '',
      `The floor itself misses ${below.length} target(s): ${below.join('; ')}. ` +
        'No change inside the services can meet those with this shape on this machine.',
    );
  }
  return out;
}

function floorSection(d: BenchData): string[] {
  const fr = d.floorRate;
  return [
    "## The shape's floor",
    '',
    "Three processes with the services' V8 flags (`test/bench/shape-floor.ts`): a node:http gateway that publishes each request's raw body " +
      'unconfirmed to a classic queue (transient messages) and answers from its reply queue with a precomputed response; a batcher that takes ' +
      'up to max_batch_size requests while the worker has a batch slot free (two per lane), runs one Redis script, publishes the batch with a ' +
      'confirm (first, and the script once it is confirmed, when a lane is idle, as the mesh does) and then acks its members; a worker (prefetch two) that runs one Redis script while a worker_thread decodes the batch and encodes ' +
      'one reply per reply queue, publishes the replies, acks and runs a last script that publishes the finish over Redis pub/sub. ' +
      'No KServe parsing, no validation, no model: every figure is a bound the mesh cannot beat with this shape here. ' +
      'Its sweeps are under *Every sweep*, its CPU under *Memory and CPU per process*.',
    '',
    '| | tiny c=1 p50 ms | tiny best infer/s | tiny CPU ms per request at the fixed rate | resnet18 best infer/s | resnet18 CPU ms per request (sweep) |',
    '|---|---|---|---|---|---|',
    ...[
      { setup: SETUP.mesh, rateCpu: d.rate.cpuMsPerRequest, scenario: 'mesh resnet18' },
      { setup: SETUP.floor, rateCpu: fr?.cpuMsPerRequest, scenario: 'floor resnet18' },
    ].map(
      (r) =>
        `| ${r.setup} | ${ms(at(d, 'tiny', r.setup, 1)?.p50Us)} | ${num(peak(d, 'tiny', r.setup)?.inferPerSec)} | ${num(r.rateCpu, 3)} | ` +
        `${num(peak(d, 'resnet18', r.setup)?.inferPerSec)} | ${num(scenarioCpu(d, r.scenario), 2)} |`,
    ),
  ];
}

function ratiosSection(d: BenchData): string[] {
  const out = [
    '## Ratios',
    '',
    '| model | mesh / engine (best) | mesh / naive (best) | mesh / naive (highest concurrency) | mesh / messaging, fast (same concurrency) |',
    '|---|---|---|---|---|',
  ];
  for (const model of ['tiny', 'resnet18']) {
    const levels = sweepOf(d, model, SETUP.mesh)?.results.map((r) => r.level) ?? [];
    const top = Math.max(1, ...levels);
    const meshTop = at(d, model, SETUP.mesh, top);
    const msg = model === 'tiny' ? at(d, 'tiny', SETUP.echoFast, top) : undefined;
    out.push(
      `| ${model} | ${x(div(peak(d, model, SETUP.mesh)?.inferPerSec, engineBest(d, model)?.inferPerSec))} | ` +
        `${x(div(peak(d, model, SETUP.mesh)?.inferPerSec, peak(d, model, SETUP.naive)?.inferPerSec))} | ` +
        `${x(div(meshTop?.inferPerSec, at(d, model, SETUP.naive, top)?.inferPerSec))} (c=${top}) | ` +
        `${msg ? `${x(div(meshTop?.inferPerSec, msg.inferPerSec))} (c=${top})` : '–'} |`,
    );
  }
  return out;
}

function simSection(d: BenchData): string[] {
  const m = d.clip.model;
  const out = [
    `## Simulated NPUs (${m.name})`,
    '',
    `Each run is held for ${latencySpec(m)} µs (the simulator's timing mode), ${m.streams} streams per device, tiers 1..${m.maxBatch}. ` +
      `Modelled ceiling of one device, computed from that latency spec (not measured): ${m.streams} streams × ${m.maxBatch} rows / ` +
      `${((m.a + m.b * m.maxBatch) / 1000).toFixed(1)} ms = ${modelledCeiling(m).toFixed(0)} infer/s. ` +
      "Requests carry tiny's 64-byte input. The naive server runs each request alone on one of the same streams (one lane per stream).",
    '',
    '| setup | devices | best infer/s | at concurrency | p50 ms | p99 ms | of modelled ceiling |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const s of d.clip.rows) {
    out.push(
      `| ${s.setup} | ${s.devices} | ${num(s.best?.inferPerSec)} | ${s.best?.level ?? '–'} | ${ms(s.best?.p50Us)} | ${ms(s.best?.p99Us)} | ` +
        `${x(div(s.best?.inferPerSec, modelledCeiling(m) * s.devices))} |`,
    );
  }
  return out;
}

function scalingSection(d: BenchData): string[] {
  const m = d.scaling.model;
  const out = [
    `## Scaling across simulated NPUs (${m.name})`,
    '',
    `Each run is held for ${latencySpec(m)} µs, ${m.streams} streams per device, tiers 1..${m.maxBatch}: modelled ceiling, computed from the spec, ` +
      `${modelledCeiling(m).toFixed(1)} infer/s per device. One worker per device; concurrency ${m.streams * m.maxBatch * 2} per device ` +
      `(twice the rows the device's streams hold). Windows of ${d.scaling.windowMs} ms. Efficiency = throughput(n) / (n × throughput(1)).`,
    '',
    '| devices | concurrency | infer/s | of modelled ceiling | efficiency | p50 ms | p99 ms | stable |',
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const r of d.scaling.rows) {
    if (!r.result) {
      out.push(`| ${r.devices} | ${r.concurrency} | not measured (${r.notMeasured ?? '?'}) | – | – | – | – | – |`);
      continue;
    }
    out.push(
      `| ${r.devices} | ${r.concurrency} | ${num(r.result.inferPerSec)} | ${x(div(r.result.inferPerSec, modelledCeiling(m) * r.devices))} | ` +
        `${num(r.efficiency, 2)} | ${ms(r.result.p50Us)} | ${ms(r.result.p99Us)} | ${r.result.stable ? 'yes' : 'no'} |`,
    );
  }
  return out;
}

function rateSection(d: BenchData): string[] {
  const row = (setup: string, run: RateRun) => {
    const r = run.result;
    return r
      ? `| ${setup} | ${run.perSec} | ${num(r.inferPerSec)} | ${ms(r.p50Us)} | ${ms(r.p99Us)} | ${ms(r.server?.queueUs)} | ${ms(r.server?.computeInferUs)} | ${r.errors} | ${r.stable ? 'yes' : 'no'} | ${num(run.cpuMsPerRequest, 3)} |`
      : `| ${setup} | ${run.perSec} | not measured (${run.notMeasured ?? '?'}) | – | – | – | – | – | – | – |`;
  };
  return [
    `## Fixed rate: ${d.rate.model} at ${d.rate.perSec} req/s (open loop, constant schedule)`,
    '',
    "Latency counts from each request's scheduled start. CPU is every serving process (services, RabbitMQ, Redis) over the whole run, divided by the requests answered in it.",
    '',
    '| setup | offered req/s | answered infer/s | p50 ms | p99 ms | server queue ms | server infer ms | errors | stable | CPU ms per request, all processes |',
    '|---|---|---|---|---|---|---|---|---|---|',
    row(SETUP.mesh, d.rate),
    ...(d.floorRate ? [row(SETUP.floor, d.floorRate)] : []),
  ];
}

function engineSection(d: BenchData): string[] {
  const out = [
    '## Engine alone (onnxruntime, no server, every core)',
    '',
    'N sessions on N worker_threads (onnxruntime-node runs a session on its calling thread), the cores split between them, each session running the tier back to back; the best N is kept.',
    '',
    '| model | tier | best infer/s | ms per run | CPU ms per inference | best setup | infer/s by sessions (1 / 2 / 4) |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const r of d.engine) {
    out.push(
      `| ${r.model} | ${r.tier} | ${num(r.inferPerSec)} | ${num(r.msPerRun, 2)} | ${num(r.cpuMsPerInfer, 2)} | ${r.sessions} session(s) × ${r.threadsPerSession} thread(s) | ` +
        `${r.variants.map((v) => num(v.inferPerSec)).join(' / ')} |`,
    );
  }
  return out;
}

function sweepsSection(d: BenchData): string[] {
  const out = [
    '## Every sweep',
    '',
    'Server columns are the Triton statistics of the mesh (`/v2/models/<m>/stats`), averaged per request over the same windows as the client figures: request = received to answered, then its queue, compute input, infer and output parts.',
  ];
  for (const s of d.sweeps) {
    out.push('', `### ${s.model}: ${s.setup}`, '');
    if (s.notMeasured) {
      out.push(`Not measured: ${s.notMeasured}`);
      continue;
    }
    out.push(
      '| concurrency | infer/s | avg ms | p50 ms | p90 ms | p99 ms | server request ms | server queue ms | server input ms | server infer ms | server output ms | errors | windows | stable |',
      '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    );
    for (const r of s.results) {
      const v = r.server;
      out.push(
        `| ${r.level} | ${num(r.inferPerSec)} | ${ms(r.avgUs)} | ${ms(r.p50Us)} | ${ms(r.p90Us)} | ${ms(r.p99Us)} | ${ms(v?.requestUs)} | ${ms(v?.queueUs)} | ` +
          `${ms(v?.computeInputUs)} | ${ms(v?.computeInferUs)} | ${ms(v?.computeOutputUs)} | ${r.errors} | ${r.windows} | ${r.stable ? 'yes' : 'no'} |`,
      );
    }
  }
  return out;
}

function usageSection(d: BenchData): string[] {
  // The default run's one mesh serves every model swept on it, from one worker.
  const shared = [...new Set(d.sweeps.filter((s) => s.setup === SETUP.mesh).map((s) => s.model))];
  const out = [
    '## Memory and CPU per process',
    '',
    'Every process that serves a scenario, RabbitMQ and Redis included where the scenario uses them; the load generator (the benchmark process, which also hosts the messaging echo) is left out. ' +
      "RSS is the highest VmRSS sampled every 250 ms during the scenario; VmHWM is the process's peak since it started. CPU is user + system time from /proc over the whole scenario (each level's first, unmeasured window included; not the warm-up before the first level), per request answered in it. " +
      `The scenarios named 'mesh <model>' (gRPC and the fixed rate included) run on one mesh whose worker serves ${shared.join(' and ')} together, so that worker's RSS is theirs together in every one of them; the durable mesh's worker serves tiny alone.`,
    '',
    '| scenario | process | RSS MiB (scenario peak) | VmHWM MiB | cores | CPU ms per request | CPU ms per request, all processes |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const r of d.usage) {
    out.push(
      `| ${r.scenario} | ${r.service} | ${r.rssMiB.toFixed(0)} | ${r.hwmMiB.toFixed(0)} | ${r.cpuCores.toFixed(2)} | ${num(r.cpuMsPerRequest, 3)} | ${num(r.allCpuMsPerRequest, 3)} |`,
    );
  }
  return out;
}

/** REPORT.md's text. */
/** tiny at c=1, 16 and 64, every setup's windows interleaved with the others'. */
export function tinySidesSection(d: BenchData): string[] {
  const rows = d.tinySides ?? [];
  if (rows.length === 0) return [];
  const ref = (load: string, setup: string) => rows.find((r) => r.load === load && r.side === setup);
  return [
    '## tiny side by side: c=1, 16 and 64, windows interleaved',
    '',
    `The tiny targets are read here: the four setups run at once, idle but for the one measured, and their windows of ${d.windowMs} ms alternate, ${d.tinySidesRounds ?? 0} round(s), each round measuring every load and at each load every side, each side first in every other round (\`side-by-side.ts\`). ` +
      'Ratios of figures measured minutes apart, in separate sweeps, would carry the shared host’s drift in between. ' +
      "The bare round trip's client and echo run in the benchmark's own process beside the load generator, so its CPU is not shown.",
    '',
    '| load | setup | p50 ms | p99 ms | infer/s | p50 / bare round trip | infer/s / naive | CPU ms per request, all processes | errors |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.load} | ${r.side} | ${r.p50Ms.toFixed(2)} | ${r.p99Ms.toFixed(2)} | ${r.inferPerSec.toFixed(1)} | ` +
        `${x(div(r.p50Ms, ref(r.load, SETUP.echoFast)?.p50Ms))} | ${x(div(r.inferPerSec, ref(r.load, SETUP.naive)?.inferPerSec))} | ` +
        `${r.side === SETUP.echoFast ? '–' : r.cpuMsPerRequest.toFixed(3)} | ${r.errors} |`,
    ),
  ];
}

export function resnetSidesSection(d: BenchData): string[] {
  const rows = d.resnetSides ?? [];
  const e = d.resnetSidesEngine;
  if (rows.length === 0 || !e) return [];
  const ref = (setup: string) => rows.find((r) => r.side === setup)?.inferPerSec;
  return [
    '## resnet18 side by side: each at its best, windows interleaved',
    '',
    `The resnet18 targets are read here: the mesh and the naive server at the concurrency their sweeps peaked at, and the engine alone in its best setup (${engineSetup(e.tier, e.sessions)} × ${e.threads} thread(s)), ` +
      `take turns in windows of ${d.resnetSidesWindowMs ?? '–'} ms, ${d.resnetSidesRounds ?? 0} round(s), each side first in every other round (\`side-by-side.ts\`), ` +
      "so the host's drift between the sweeps and the engine's run stays out of the ratios. The engine runs in the benchmark's own process, so its CPU is not shown.",
    '',
    '| setup | load | infer/s | p50 ms | p99 ms | / naive | / engine alone | CPU ms per request, all processes | errors |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.side} | ${r.side === SETUP.engine ? engineSetup(e.tier, e.sessions) : r.load} | ${r.inferPerSec.toFixed(1)} | ` +
        `${r.p50Ms.toFixed(1)} | ${r.p99Ms.toFixed(1)} | ${x(div(r.inferPerSec, ref(SETUP.naive)))} | ` +
        `${x(div(r.inferPerSec, ref(SETUP.engine)))} | ${r.side === SETUP.engine ? '–' : r.cpuMsPerRequest.toFixed(2)} | ${r.errors} |`,
    ),
  ];
}

export function renderReport(d: BenchData, totalSeconds: number): string {
  const lines = [
    '# GE Mesh benchmark',
    '',
    `Measured ${new Date().toISOString()} on this machine: ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), Node ${process.version}. ` +
      'The figures are specific to this machine and were taken while it was shared, so compare the ratios, which come from one run. ' +
      `Windows of ${d.windowMs} ms, perf_analyzer's stability rule (last 3 windows within 10 %, at most ${d.maxTrials}), batch-1 requests with the binary tensor extension.${d.warmupMs ? ` Every server is loaded for ${d.warmupMs / 1000} s before its first measured level (two thirds at its highest level, then its lowest), unmeasured, as perf_analyzer's warm-up requests do: a JIT-compiled server reaches its steady speed only after seconds of load.` : ''}`,
    '',
    ...(d.wakeup ? [wakeupSentence(d.wakeup), ''] : []),
    ...targetsSection(targets(d)),
    '',
    ...tinySidesSection(d),
    '',
    ...resnetSidesSection(d),
    '',
    ...ratiosSection(d),
    '',
    ...simSection(d),
    '',
    ...scalingSection(d),
    '',
    ...rateSection(d),
    '',
    ...floorSection(d),
    '',
    ...tracingSection(d.tracing ?? []),
    '',
    ...engineSection(d),
    '',
    ...sweepsSection(d),
    '',
    ...usageSection(d),
    '',
    '## Plots',
    '',
    ...['tiny', 'resnet18', d.clip.model.name].map(
      (m) => `![${m} throughput](${m}-throughput.svg) ![${m} latency](${m}-latency.svg)`,
    ),
    '',
    '![scaling](scaling.svg) ![CPU per request](cpu-per-request.svg)',
    '',
    '![engine tiers](engine-tiers.svg)',
    '',
    `Total run time: ${totalSeconds.toFixed(0)} s.`,
  ];
  return `${lines.join('\n')}\n`;
}

async function sweepPlots(d: BenchData, out: string, model: string): Promise<void> {
  const rows = d.sweeps
    .filter((s) => s.model === model)
    .flatMap((s) =>
      s.results.map((r) => ({ setup: s.setup, concurrency: r.level, throughput: r.inferPerSec, p99: r.p99Us / 1000 })),
    );
  await writeFile(
    join(out, `${model}-throughput.svg`),
    await lineChartSvg({
      title: `${model}: throughput vs concurrency`,
      rows,
      x: 'concurrency',
      y: 'throughput',
      series: 'setup',
      yTitle: 'infer/s',
      logY: true,
    }),
  );
  await writeFile(
    join(out, `${model}-latency.svg`),
    await lineChartSvg({
      title: `${model}: p99 latency vs throughput`,
      rows,
      x: 'throughput',
      y: 'p99',
      series: 'setup',
      xTitle: 'infer/s',
      yTitle: 'p99 latency (ms)',
      logY: true,
    }),
  );
}

/** Every SVG the report links. */
export async function writePlots(d: BenchData, out: string): Promise<void> {
  for (const model of ['tiny', 'resnet18', d.clip.model.name]) await sweepPlots(d, out, model);
  const one = d.scaling.rows.find((r) => r.devices === 1)?.result?.inferPerSec ?? 0;
  const ceiling = modelledCeiling(d.scaling.model);
  const scalingRows = d.scaling.rows.flatMap((r) => [
    ...(r.result ? [{ devices: r.devices, infer: r.result.inferPerSec, series: 'GE Mesh, measured' }] : []),
    { devices: r.devices, infer: one * r.devices, series: 'linear from 1 device (measured)' },
    { devices: r.devices, infer: ceiling * r.devices, series: 'modelled ceiling (computed)' },
  ]);
  await writeFile(
    join(out, 'scaling.svg'),
    await lineChartSvg({
      title: `${d.scaling.model.name}: throughput vs simulated NPUs`,
      rows: scalingRows,
      x: 'devices',
      y: 'infer',
      series: 'series',
      yTitle: 'infer/s',
    }),
  );
  const perScenario = [...new Map(d.usage.map((u) => [u.scenario, u.allCpuMsPerRequest])).entries()];
  await writeFile(
    join(out, 'cpu-per-request.svg'),
    await barChartSvg({
      title: 'CPU ms per answered request, all serving processes',
      rows: perScenario.filter(([, v]) => Number.isFinite(v)).map(([scenario, cpu]) => ({ scenario, cpu })),
      x: 'scenario',
      y: 'cpu',
      yTitle: 'CPU ms per request',
    }),
  );
  await writeFile(
    join(out, 'engine-tiers.svg'),
    await barChartSvg({
      title: 'engine alone: infer/s per tier (best sessions)',
      rows: d.engine.map((r) => ({ tier: `${r.model} b${r.tier} (${r.sessions}s)`, infer: r.inferPerSec })),
      x: 'tier',
      y: 'infer',
      yTitle: 'infer/s',
    }),
  );
}
