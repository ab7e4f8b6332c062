/**
 * `npm run bench`: GE Mesh next to its alternatives, in one run, on this
 * machine and these models (figures are machine-specific; compare ratios).
 *   (a) the engine alone, onnxruntime with no server, each tier at its best
 *       number of parallel sessions (the compute limit);
 *   (b) a naive HTTP server running each request on onnxruntime, no batching;
 *   (c) GE Mesh end to end over RabbitMQ and Redis (binary tensor extension),
 *       in the default durability mode, plus tiny at a fixed 1,000 req/s for
 *       its CPU cost and one tiny sweep with `--durability durable`;
 *   (d) for tiny, a bare RabbitMQ request/reply round trip in both queue
 *       modes (the messaging limit);
 *   (e) the shape's floor: the mesh's hops and Redis round trips with no
 *       work in them (shape-floor.ts), both models and tiny at the fixed rate;
 * then by simulation: the `ge` runtime in timing mode, the mesh on 1 (and 2)
 * simulated NPUs against a naive server on the same 8 streams of one, and the
 * mesh's scaling over 1, 2 and 4 simulated NPUs of a slow model. The tiny
 * and resnet18 targets come from windows interleaved between the setups
 * (`--only sides` and `--only resnet-sides` run just those). CPU and
 * memory of every serving process (RabbitMQ and Redis included) per scenario.
 * Writes test/bench/results/REPORT.md (+ results.json and SVG plots).
 *
 *   npm run bench            (about 27 minutes on two cores)
 *   node --import tsx test/bench/suite.ts --quick [--out DIR]
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT, waitForHttp } from '@ge-mesh/launcher';
import {
  breakdown,
  grpcTarget,
  httpTarget,
  type InferenceStatsSnapshot,
  type LevelResult,
  readStats,
  type Send,
  sweep,
  warmUpAcross,
} from '@ge-mesh/loadgen';
import {
  DEMO_REPOSITORY,
  freePort,
  RABBITMQ_URL,
  startTestMesh,
  type TestMesh,
  uniqueNamespace,
} from '../support/mesh-harness.js';
import {
  type BenchData,
  engineBest,
  peak,
  type RateRun,
  renderReport,
  resnetSidesSection,
  SETUP,
  scenarioCpu,
  targets,
  tinySidesSection,
  writePlots,
} from './bench-report.js';
import { engineSide, measureEngine } from './engine-alone.js';
import { type Proc, ScenarioMeter, serviceProcs } from './host-processes.js';
import { measureWakeup, wakeupSentence } from './host-wakeup.js';
import { echoSend, type QueueMode, startEcho } from './messaging-echo.js';
import { brokerAndRedisPids } from './process-metrics.js';
import { startShapeFloor } from './shape-floor.js';
import { httpSide, meshSide, type Side, sideBySide } from './side-by-side.js';
import {
  CLIP_SIM,
  contendedOf,
  latencySpec,
  modelledCeiling,
  SIM_AICORES,
  type SimModel,
  writeSimRepository,
} from './sim-models.js';
import { measureTracingOverhead, tracingSection } from './tracing-overhead.js';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    out: { type: 'string' },
    // `--only grpc`: tiny over HTTP and over gRPC on one mesh (c=1, 16, 64; c=4 with --quick), printed, no report.
    // `--only tracing`: tiny with tracing off and on (tracing-overhead.ts), printed, no report.
    // `--only sides`: tiny at c=1, 16 and 64, the mesh beside the bare round trip, the floor and the naive server, windows interleaved, printed, no report.
    // `--only contended`: clip_sim and scale_sim on 1 device under both timing models, printed, no report.
    only: { type: 'string' },
  },
});
const QUICK = values.quick;
const WINDOW_MS = QUICK ? 1500 : 3000;
const MAX_TRIALS = QUICK ? 3 : 5;
/** Load before each server's first measured level (loadgen's warmUp says why). */
const WARMUP_MS = QUICK ? 3000 : 15_000;
const OUT = values.out ?? join(ROOT, 'test/bench/results');
const started = Date.now();
const log = (s: string) => process.stderr.write(`[${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${s}\n`);

const PLAN = {
  tiny: { levels: QUICK ? [1, 16] : [1, 4, 16, 64] },
  resnet18: { levels: QUICK ? [1, 8] : [1, 4, 16] },
};
/** resnet18's interleaved windows: a batch of 16 takes about half a second on this machine's two cores. */
const RESNET_SIDES_WINDOW_MS = QUICK ? 3000 : 6000;
/** The fixed-rate run that prices a request in CPU. */
const RATE = { model: 'tiny', perSec: 1000 };
/** Shaped like a large image encoder on one NPU: 8 streams, short runs. */
/** Slow enough (≈128 infer/s per device) that 4 devices stay within what the mesh moves on this machine. */
const SCALE_SIM: SimModel = {
  name: 'scale_sim',
  a: 450_000,
  b: 6250,
  streams: 8,
  maxBatch: 8,
  maxQueueDelayUs: 10_000,
};
const SCALE_DEVICES = [1, 2, 4];
const SCALE_WINDOW_MS = QUICK ? 4000 : 8000;

const data: BenchData = {
  windowMs: WINDOW_MS,
  warmupMs: WARMUP_MS,
  maxTrials: MAX_TRIALS,
  engine: [],
  sweeps: [],
  clip: { model: CLIP_SIM, rows: [] },
  scaling: { model: SCALE_SIM, windowMs: SCALE_WINDOW_MS, rows: [] },
  rate: { model: RATE.model, perSec: RATE.perSec },
  usage: [],
};

const BROKERS = brokerAndRedisPids();
log(`RabbitMQ/Redis processes metered: ${BROKERS.map((p) => `${p.name} pid ${p.pid}`).join(', ') || 'none found'}`);
const meshProcs = (mesh: TestMesh): Proc[] => [...serviceProcs(mesh), ...BROKERS];
const bestOf = (results: LevelResult[]) => [...results].sort((a, b) => b.inferPerSec - a.inferPerSec)[0];

/** A send that counts its answers, so CPU can be divided by what was served. */
function counted(send: Send): { send: Send; answered: () => number } {
  let n = 0;
  return {
    send: async (seq) => {
      const ok = await send(seq);
      if (ok) n++;
      return ok;
    },
    answered: () => n,
  };
}

interface SweepSpec {
  url: string;
  model: string;
  levels: number[];
  label: string;
  /** Read the server's Triton statistics around each window (the mesh has them, the naive server not). */
  withStats: boolean;
  mode?: 'concurrency' | 'rate';
  windowMs?: number;
  /** host:port of the gateway's gRPC server: the sweep goes over gRPC (ModelInfer) instead of HTTP. */
  grpcUrl?: string;
}

/**
 * Every server gets the same warm-up before its first level, unmetered:
 * two thirds at its highest level, then its lowest. (A fixed-rate run follows
 * a sweep of the same server, warm already.)
 */
async function warmServer(send: Send, levels: number[], scenario: string): Promise<void> {
  log(`${scenario}: warming up for ${WARMUP_MS / 1000} s`);
  await warmUpAcross(send, levels, WARMUP_MS);
}

/** A loadgen sweep over HTTP, metered: the processes' CPU over the whole sweep, per answered request. */
async function meteredSweep(s: SweepSpec, scenario: string, procs: Proc[]): Promise<LevelResult[]> {
  // One connection per request in flight: a pool smaller than the concurrency would cap what the server sees.
  const connections = s.mode === 'rate' ? 256 : Math.max(256, ...s.levels);
  const target = await httpTarget({
    url: s.url,
    model: s.model,
    batch: 1,
    inputData: 'random',
    binary: true,
    connections,
  });
  // Over gRPC the requests take the gRPC target; the HTTP pool still reads the statistics.
  const grpc = s.grpcUrl
    ? await grpcTarget({ grpcUrl: s.grpcUrl, url: s.url, model: s.model, batch: 1, inputData: 'random' })
    : undefined;
  if ((s.mode ?? 'concurrency') === 'concurrency') await warmServer(grpc?.send ?? target.send, s.levels, scenario);
  const c = counted(grpc?.send ?? target.send);
  const meter = new ScenarioMeter(scenario, procs);
  try {
    return await sweep({
      send: c.send,
      mode: s.mode ?? 'concurrency',
      levels: s.levels,
      windowMs: s.windowMs ?? WINDOW_MS,
      maxTrials: MAX_TRIALS,
      ...(s.withStats
        ? {
            serverSnapshot: () => readStats(target.pool, s.model).catch(() => null),
            serverDelta: (a: unknown, b: unknown) =>
              a && b ? breakdown(a as InferenceStatsSnapshot, b as InferenceStatsSnapshot) : undefined,
          }
        : {}),
      log: (l) => log(`${s.label} ${s.model}: ${l.trim()}`),
    });
  } finally {
    const rows = meter.finish(c.answered());
    data.usage.push(...rows);
    log(`${scenario}: ${rows[0]?.allCpuMsPerRequest.toFixed(3) ?? '–'} CPU ms per request, all processes`);
    await grpc?.close();
    await target.close();
  }
}

async function startNaive(repo: string, model: string, runtime: 'ort' | 'ge', env: NodeJS.ProcessEnv = {}) {
  const port = await freePort();
  const script = join(ROOT, 'test/bench/naive-server.ts');
  const args = [
    '--import',
    'tsx',
    script,
    '--repo',
    repo,
    '--model',
    model,
    '--port',
    String(port),
    '--runtime',
    runtime,
  ];
  const child: ChildProcess = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  // Never outlive the benchmark, even when it fails.
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill);
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/`, 120_000, (s) => s > 0);
  return {
    url,
    proc: { name: 'naive server', pid: child.pid ?? 0 },
    async stop() {
      process.off('exit', kill);
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}

/** (a) The engine alone. */
async function engineAlone(): Promise<void> {
  for (const name of Object.keys(PLAN)) data.engine.push(...(await measureEngine(name, QUICK ? 400 : 2000, log)));
}

/** (b) The naive server, one per model. */
async function naiveServers(): Promise<void> {
  for (const [name, p] of Object.entries(PLAN)) {
    const naive = await startNaive(DEMO_REPOSITORY, name, 'ort');
    try {
      const spec = { url: naive.url, model: name, levels: p.levels, label: 'naive', withStats: false };
      data.sweeps.push({
        model: name,
        setup: SETUP.naive,
        results: await meteredSweep(spec, `naive ${name}`, [naive.proc]),
      });
    } finally {
      await naive.stop();
    }
  }
}

/** (c) The mesh in its default durability mode, both models on one CPU worker, then tiny at a fixed rate. */
async function meshDefault(): Promise<void> {
  const models = Object.keys(PLAN).join(',');
  log('mesh: starting (default durability)');
  const grpcPort = await freePort();
  const mesh = await startTestMesh({
    grpcPort,
    workers: 1,
    logLevel: 'warn',
    flags: { worker: ['--models', models], batcher: ['--models', models] },
  });
  try {
    for (const [name, p] of Object.entries(PLAN)) {
      const spec = { url: mesh.url, model: name, levels: p.levels, label: 'mesh', withStats: true };
      data.sweeps.push({
        model: name,
        setup: SETUP.mesh,
        results: await meteredSweep(spec, `mesh ${name}`, meshProcs(mesh)),
      });
    }
    await meshGrpc(mesh, `127.0.0.1:${grpcPort}`);
    const spec = { url: mesh.url, model: RATE.model, levels: [RATE.perSec], label: 'mesh-rate', withStats: true };
    data.rate = await rateRun(spec, `mesh ${RATE.model} at ${RATE.perSec} req/s`, meshProcs(mesh));
  } finally {
    await mesh.teardown();
  }
}

/** The fixed-rate run (RATE) against one server, priced in CPU per answered request. */
async function rateRun(spec: SweepSpec, scenario: string, procs: Proc[]): Promise<RateRun> {
  const [result] = await meteredSweep({ ...spec, mode: 'rate' }, scenario, procs);
  return {
    model: RATE.model,
    perSec: RATE.perSec,
    ...(result ? { result } : { notMeasured: 'no result' }),
    ...cpuOf(scenario),
  };
}

/** (c'') tiny over the gateway's gRPC API, the same levels as its HTTP row. */
async function meshGrpc(mesh: TestMesh, grpcUrl: string, levels = PLAN.tiny.levels): Promise<void> {
  const spec = { url: mesh.url, model: 'tiny', levels, label: 'mesh-grpc', withStats: true, grpcUrl };
  data.sweeps.push({
    model: 'tiny',
    setup: SETUP.meshGrpc,
    results: await meteredSweep(spec, 'mesh tiny, gRPC', meshProcs(mesh)),
  });
}

function cpuOf(scenario: string): { cpuMsPerRequest?: number } {
  const v = scenarioCpu(data, scenario);
  return v !== undefined ? { cpuMsPerRequest: v } : {};
}

/**
 * (c') One tiny sweep with every service in `--durability durable`. Services
 * that do not know the flag yet fail to start: the row then says so instead
 * of ending the benchmark.
 */
async function meshDurable(): Promise<void> {
  const flag = ['--durability', 'durable'];
  const namespace = uniqueNamespace('bench-durable');
  let mesh: TestMesh | undefined;
  try {
    log('mesh: starting with --durability durable');
    mesh = await startTestMesh({
      namespace,
      workers: 1,
      logLevel: 'warn',
      models: ['tiny'],
      flags: { gateway: flag, worker: [...flag, '--models', 'tiny'], batcher: [...flag, '--models', 'tiny'] },
    });
    const spec = { url: mesh.url, model: 'tiny', levels: PLAN.tiny.levels, label: 'mesh-durable', withStats: true };
    const results = await meteredSweep(spec, 'mesh tiny, durable', meshProcs(mesh));
    data.sweeps.push({ model: 'tiny', setup: SETUP.meshDurable, results });
  } catch (err) {
    const reason = (err as Error).message.split('\n')[0] ?? 'failed';
    log(`mesh durable: not measured (${reason})`);
    data.sweeps.push({ model: 'tiny', setup: SETUP.meshDurable, results: [], notMeasured: reason });
  } finally {
    await mesh?.teardown();
  }
}

/** (d) The messaging limit for tiny, in both queue modes: a bare round trip of a tiny-request-sized body. */
async function messaging(mode: QueueMode): Promise<void> {
  const echo = await startEcho(RABBITMQ_URL, uniqueNamespace(`bench-echo-${mode}`), mode);
  const call = echoSend(echo);
  await warmServer(call, PLAN.tiny.levels, `messaging ${mode}`);
  const c = counted(call);
  const meter = new ScenarioMeter(`messaging ${mode}`, BROKERS);
  try {
    const results = await sweep({
      send: c.send,
      mode: 'concurrency',
      levels: PLAN.tiny.levels,
      windowMs: WINDOW_MS,
      maxTrials: MAX_TRIALS,
      log: (l) => log(`messaging ${mode}: ${l.trim()}`),
    });
    data.sweeps.push({ model: 'tiny', setup: mode === 'fast' ? SETUP.echoFast : SETUP.echoDurable, results });
  } finally {
    data.usage.push(...meter.finish(c.answered()));
    await echo.close();
  }
}

/** (e) The shape's floor for each model, and tiny at the fixed rate, metered as the mesh is. */
async function shapeFloor(): Promise<void> {
  for (const [name, p] of Object.entries(PLAN)) {
    const floor = await startShapeFloor(name);
    const procs = [...floor.procs, ...BROKERS];
    try {
      const spec = { url: floor.url, model: name, levels: p.levels, label: 'floor', withStats: false };
      data.sweeps.push({ model: name, setup: SETUP.floor, results: await meteredSweep(spec, `floor ${name}`, procs) });
      if (name !== RATE.model) continue;
      data.floorRate = await rateRun(
        { ...spec, levels: [RATE.perSec] },
        `floor ${RATE.model} at ${RATE.perSec} req/s`,
        procs,
      );
    } finally {
      await floor.stop();
    }
  }
}

/** The mesh (one CPU worker) serving `model` alone. */
function oneModelMesh(model: string, extra: { grpcPort?: number } = {}): Promise<TestMesh> {
  return startTestMesh({
    ...extra,
    workers: 1,
    logLevel: 'warn',
    models: [model],
    flags: { worker: ['--models', model], batcher: ['--models', model] },
  });
}

/**
 * Runs a comparison that starts servers: each pushes its stop, and every stop
 * runs afterwards, the last started first. A comparison that fails is logged
 * as not measured; the rest of the run goes on.
 */
async function withStops(what: string, body: (stops: Array<() => Promise<void>>) => Promise<void>): Promise<void> {
  const stops: Array<() => Promise<void>> = [];
  try {
    await body(stops);
  } catch (err) {
    log(`${what}: not measured (${(err as Error).message.split('\n')[0]})`);
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  }
}

/**
 * tiny at c=1, 16 and 64: the mesh, the bare round trip, the shape's floor and
 * the naive server all running, their windows interleaved. The tiny targets
 * are ratios between these setups (the c=1 one of latencies a millisecond or
 * two apart); read from sweeps minutes apart they would carry the shared
 * host's drift in between.
 */
async function tinySideBySide(): Promise<void> {
  await withStops('tiny side by side', async (stops) => {
    log('tiny side by side: starting the mesh, the echo, the floor and the naive server');
    const mesh = await oneModelMesh('tiny');
    stops.push(() => mesh.teardown());
    const echo = await startEcho(RABBITMQ_URL, uniqueNamespace('bench-echo-sides'), 'fast');
    stops.push(() => echo.close());
    const floor = await startShapeFloor('tiny');
    stops.push(() => floor.stop());
    const naive = await startNaive(DEMO_REPOSITORY, 'tiny', 'ort');
    stops.push(() => naive.stop());
    const sides: Side[] = [
      meshSide(SETUP.mesh, mesh, 'tiny'),
      { label: SETUP.echoFast, pids: [], open: async () => ({ send: echoSend(echo), close: async () => undefined }) },
      httpSide(
        SETUP.floor,
        floor.url,
        'tiny',
        floor.procs.map((p) => p.pid),
      ),
      httpSide(SETUP.naive, naive.url, 'tiny', [naive.proc.pid]),
    ];
    const loads = (QUICK ? [1, 16] : [1, 16, 64]).map((c) => ({
      name: `c=${c}`,
      load: { kind: 'concurrency' as const, concurrency: c },
    }));
    data.tinySidesRounds = QUICK ? 1 : 4;
    data.tinySides = await sideBySide(sides, loads, {
      rounds: data.tinySidesRounds,
      windowMs: WINDOW_MS,
      warmupMs: QUICK ? 1500 : 6000,
      log: (l) => log(`tiny side by side: ${l}`),
    });
  });
}

/**
 * resnet18's peak ratios from interleaved windows: the mesh and the naive
 * server, each at the concurrency its sweep peaked at, and the engine alone
 * in its best setup (sessions and tier), take turns window by window, so the
 * host's drift between the sweeps and the engine run stays out of the ratios.
 */
async function resnetSideBySide(): Promise<void> {
  const name = 'resnet18';
  // Without the sweeps (`--only resnet-sides`) both run at the plan's highest level.
  const top = Math.max(...PLAN.resnet18.levels);
  const meshC = peak(data, name, SETUP.mesh)?.level ?? top;
  const naiveC = peak(data, name, SETUP.naive)?.level ?? top;
  const engine = engineBest(data, name);
  if (!engine) {
    log('resnet18 side by side: not measured (the engine alone has no result)');
    return;
  }
  await withStops('resnet18 side by side', async (stops) => {
    log(
      `resnet18 side by side: mesh at c=${meshC}, naive at c=${naiveC}, engine tier ${engine.tier} × ${engine.sessions}`,
    );
    const mesh = await oneModelMesh(name);
    stops.push(() => mesh.teardown());
    const naive = await startNaive(DEMO_REPOSITORY, name, 'ort');
    stops.push(() => naive.stop());
    const alone = await engineSide(SETUP.engine, name, engine.sessions, engine.tier);
    stops.push(() => alone.close());
    const concurrency = (c: number) => ({ kind: 'concurrency' as const, concurrency: c });
    const sides: Side[] = [
      { ...meshSide(SETUP.mesh, mesh, name), load: concurrency(meshC) },
      { ...httpSide(SETUP.naive, naive.url, name, [naive.proc.pid]), load: concurrency(naiveC) },
      alone.side,
    ];
    data.resnetSidesRounds = QUICK ? 1 : 4;
    data.resnetSidesWindowMs = RESNET_SIDES_WINDOW_MS;
    data.resnetSidesEngine = { tier: engine.tier, sessions: engine.sessions, threads: engine.threadsPerSession };
    data.resnetSides = await sideBySide(sides, [{ name: 'best', load: concurrency(meshC) }], {
      rounds: data.resnetSidesRounds,
      windowMs: RESNET_SIDES_WINDOW_MS,
      warmupMs: QUICK ? 2000 : 10_000,
      log: (l) => log(`resnet18 side by side: ${l}`),
    });
  });
}

/** The simulated CN-CLIP-shaped NPU: a naive server on one device's 8 streams, then the mesh on 1 (and 2) devices. */
async function clipSim(): Promise<void> {
  const repo = await writeSimRepository(CLIP_SIM);
  const name = CLIP_SIM.name;
  try {
    const naive = await startNaive(repo, name, 'ge', { GEMESH_SIM_DEVICES: '1' });
    try {
      const spec = {
        url: naive.url,
        model: name,
        levels: QUICK ? [16] : [1, 16, 64],
        label: 'naive-npu',
        withStats: false,
      };
      const results = await meteredSweep(spec, 'naive 1 simulated NPU', [naive.proc]);
      data.sweeps.push({ model: name, setup: SETUP.naiveSim, results });
      data.clip.rows.push({ setup: 'naive server (8 lanes)', devices: 1, ...bestRow(results) });
    } finally {
      await naive.stop();
    }
    for (const devices of QUICK ? [1] : [1, 2]) {
      const mesh = await startSimMesh(repo, name, devices);
      try {
        const label = `mesh-npu×${devices}`;
        const spec = { url: mesh.url, model: name, levels: QUICK ? [64] : [16, 64, 128, 256], label, withStats: true };
        const results = await meteredSweep(spec, `mesh ${devices} simulated NPU ${name}`, meshProcs(mesh));
        data.sweeps.push({ model: name, setup: `GE Mesh, ${devices} simulated NPU${devices > 1 ? 's' : ''}`, results });
        data.clip.rows.push({ setup: 'GE Mesh', devices, ...bestRow(results) });
      } finally {
        await mesh.teardown();
      }
    }
  } finally {
    await rm(repo, { recursive: true, force: true });
  }
}

const bestRow = (results: LevelResult[]) => {
  const best = bestOf(results);
  return best ? { best } : {};
};

function startSimMesh(repo: string, model: string, devices: number): Promise<TestMesh> {
  log(`mesh: starting on ${devices} simulated NPU(s) for ${model}`);
  return startTestMesh({
    workers: devices,
    modelRepository: repo,
    models: [model],
    logLevel: 'warn',
    env: { GEMESH_SIM_DEVICES: String(devices), GEMESH_SIM_AICORES: String(SIM_AICORES) },
    flags: { worker: ['--runtime', 'ge'] },
  });
}

/** The mesh on 1, 2 and 4 simulated NPUs of a slow model, each saturated: how throughput scales with devices. */
async function scaling(): Promise<void> {
  const repo = await writeSimRepository(SCALE_SIM);
  const name = SCALE_SIM.name;
  try {
    for (const devices of SCALE_DEVICES) {
      // Twice the rows the devices' streams hold at once, so every stream always has a full batch waiting.
      const concurrency = SCALE_SIM.streams * SCALE_SIM.maxBatch * 2 * devices;
      try {
        const mesh = await startSimMesh(repo, name, devices);
        try {
          const spec = { url: mesh.url, model: name, levels: [concurrency], label: `scale×${devices}` };
          const [result] = await meteredSweep(
            { ...spec, withStats: true, windowMs: SCALE_WINDOW_MS },
            `mesh ${devices} simulated NPU ${name}`,
            meshProcs(mesh),
          );
          data.scaling.rows.push({ devices, concurrency, ...(result ? { result } : { notMeasured: 'no result' }) });
        } finally {
          await mesh.teardown();
        }
      } catch (err) {
        log(`scaling ×${devices}: not measured (${(err as Error).message})`);
        data.scaling.rows.push({ devices, concurrency, notMeasured: (err as Error).message.split('\n')[0] ?? '' });
      }
    }
  } finally {
    await rm(repo, { recursive: true, force: true });
  }
  const one = data.scaling.rows.find((r) => r.devices === 1)?.result?.inferPerSec;
  for (const r of data.scaling.rows) {
    if (one && r.result) r.efficiency = r.result.inferPerSec / (r.devices * one);
    log(
      `scaling ×${r.devices}: ${r.result?.inferPerSec.toFixed(1) ?? '–'} infer/s, efficiency ${r.efficiency?.toFixed(2) ?? '–'}`,
    );
  }
}

interface TimingRow {
  model: SimModel;
  concurrency: number;
  result?: LevelResult;
}

/**
 * clip_sim and scale_sim on 1 simulated NPU under both timing models: the independent one (each
 * stream sleeps on its own) and the contended one (the device's AI cores shared by its streams, each
 * stream alone as fast as under the independent one). Reuses the independent runs of this bench run
 * when there are any. Returns the report section.
 */
async function timingModels(): Promise<string[]> {
  const rows: TimingRow[] = [];
  for (const base of [CLIP_SIM, SCALE_SIM]) {
    const concurrency = base === CLIP_SIM ? 64 : base.streams * base.maxBatch * 2;
    const earlier =
      base === CLIP_SIM
        ? data.sweeps
            .find((s) => s.model === base.name && s.setup === 'GE Mesh, 1 simulated NPU')
            ?.results.find((r) => r.level === concurrency)
        : data.scaling.rows.find((r) => r.devices === 1)?.result;
    for (const m of [base, contendedOf(base)]) {
      if (m === base && earlier) {
        rows.push({ model: m, concurrency, result: earlier });
        continue;
      }
      const repo = await writeSimRepository(m);
      try {
        const mesh = await startSimMesh(repo, m.name, 1);
        try {
          const spec = { url: mesh.url, model: m.name, levels: [concurrency], label: m.name, withStats: true };
          const windowMs = base === CLIP_SIM ? WINDOW_MS : SCALE_WINDOW_MS;
          const [result] = await meteredSweep({ ...spec, windowMs }, `mesh 1 simulated NPU ${m.name}`, meshProcs(mesh));
          rows.push({ model: m, concurrency, ...(result ? { result } : {}) });
        } finally {
          await mesh.teardown();
        }
      } finally {
        await rm(repo, { recursive: true, force: true });
      }
    }
  }
  const lines = [
    '## Timing models: independent streams vs AI cores shared per device',
    '',
    `GE Mesh on 1 simulated NPU, ${CLIP_SIM.streams} streams. Contended: ${SIM_AICORES} AI cores per device shared by the ` +
      'streams (native/README.md), each stream alone as fast as under the independent spec; ceilings computed from the spec.',
    '',
    '| model | latency spec (µs) | concurrency | infer/s | modelled ceiling | of ceiling | p50 ms | p99 ms |',
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const r of rows) {
    const ceiling = modelledCeiling(r.model);
    const v = r.result;
    lines.push(
      `| ${r.model.name} | \`${latencySpec(r.model)}\` | ${r.concurrency} | ${v?.inferPerSec.toFixed(1) ?? '–'} | ` +
        `${ceiling.toFixed(1)} | ${v ? (v.inferPerSec / ceiling).toFixed(2) : '–'} | ` +
        `${v ? (v.p50Us / 1000).toFixed(1) : '–'} | ${v ? (v.p99Us / 1000).toFixed(1) : '–'} |`,
    );
  }
  return lines;
}

if (values.only === 'contended') {
  process.stdout.write(`${(await timingModels()).join('\n')}\n`);
  process.exit(0);
}

if (values.only === 'grpc') {
  const grpcPort = await freePort();
  const mesh = await oneModelMesh('tiny', { grpcPort });
  // HTTP then gRPC on the same mesh at the same levels: the two ingresses side by side.
  const levels = QUICK ? [4] : [1, 16, 64];
  try {
    const spec = { url: mesh.url, model: 'tiny', levels, label: 'mesh', withStats: true };
    data.sweeps.push({
      model: 'tiny',
      setup: SETUP.mesh,
      results: await meteredSweep(spec, 'mesh tiny', meshProcs(mesh)),
    });
    await meshGrpc(mesh, `127.0.0.1:${grpcPort}`, levels);
  } finally {
    await mesh.teardown();
  }
  const lines = [
    '| ingress | concurrency | infer/s | p50 ms | p99 ms | CPU ms per request, all processes |',
    '|---|---|---|---|---|---|',
  ];
  for (const [sweepOf, scenario] of [
    [data.sweeps.at(-2), 'mesh tiny'],
    [data.sweeps.at(-1), 'mesh tiny, gRPC'],
  ] as const) {
    for (const r of sweepOf?.results ?? []) {
      lines.push(
        `| ${sweepOf?.setup} | ${r.level} | ${r.inferPerSec.toFixed(0)} | ${(r.p50Us / 1000).toFixed(2)} | ${(r.p99Us / 1000).toFixed(2)} | ${cpuOf(scenario).cpuMsPerRequest?.toFixed(3) ?? '–'} |`,
      );
    }
  }
  process.stdout.write(`${lines.join('\n')}\n`);
  process.exit(0);
}

const tracingLevels = QUICK ? [16] : [1, 16, 64];
if (values.only === 'tracing') {
  const rows = await measureTracingOverhead({ levels: tracingLevels, log });
  process.stdout.write(`${tracingSection(rows).join('\n')}\n`);
  process.exit(0);
}

if (values.only === 'resnet-sides') {
  data.engine.push(...(await measureEngine('resnet18', QUICK ? 400 : 2000, log)));
  await resnetSideBySide();
  process.stdout.write(
    `${resnetSidesSection(data).join('\n')}\n\n${targets(data)
      .slice(2, 4)
      .map((t) => `${t.what}: ${t.ratio?.toFixed(2)}× (${t.measured})`)
      .join('\n')}\n`,
  );
  process.exit(0);
}

if (values.only === 'sides') {
  data.wakeup = measureWakeup();
  await tinySideBySide();
  const tinyTargets = targets(data).slice(0, 2);
  process.stdout.write(
    `${wakeupSentence(data.wakeup)}\n\n${tinySidesSection(data).join('\n')}\n\n${tinyTargets
      .map((t) => `${t.what}: ${t.ratio?.toFixed(2)}× (${t.measured}), floor ${t.floor}`)
      .join('\n')}\n`,
  );
  process.exit(0);
}

log(`benchmark${QUICK ? ' (quick)' : ''}: writing to ${OUT}`);
data.wakeup = measureWakeup();
await engineAlone();
await naiveServers();
await meshDefault();
await meshDurable();
data.tracing = await measureTracingOverhead({ levels: tracingLevels, rounds: QUICK ? 1 : 3, windowMs: WINDOW_MS, log });
for (const mode of ['fast', 'durable'] as const) await messaging(mode);
await shapeFloor();
await tinySideBySide();
await resnetSideBySide();
await clipSim();
await scaling();
const timingSection = await timingModels();

await mkdir(OUT, { recursive: true });
const report = `${renderReport(data, (Date.now() - started) / 1000)}\n${timingSection.join('\n')}\n`;
await writeFile(join(OUT, 'REPORT.md'), report);
await writePlots(data, OUT);
await writeFile(join(OUT, 'results.json'), `${JSON.stringify({ ...data, targets: targets(data) }, null, 2)}\n`);
const top = report.split('\n## Ratios')[0] ?? '';
process.stdout.write(`${top}\nreport: ${join(OUT, 'REPORT.md')}\n`);
