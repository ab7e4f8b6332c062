import { availableParallelism } from 'node:os';
import { demoModel, sampleInputs } from '@ge-mesh/demo-models';
import { loadModel } from '@ge-mesh/model-repository';
import type { EngineModelSpec, EngineTensor } from '@ge-mesh/runtime';
import { engineSpecOf } from '../support/engine-spec.js';
import { DEMO_REPOSITORY } from '../support/mesh-harness.js';
import { EngineLanes } from './engine-lanes.js';
import type { Side } from './side-by-side.js';

/**
 * The engine alone (the compute limit): onnxruntime with no server around
 * it, at each tier, at its best parallelism on every core. onnxruntime-node
 * runs a session on the calling thread, so N runs in flight means N sessions
 * on N worker_threads, the cores split between them (as the mesh's lanes
 * do); the best of N = 1, 2, 4 is kept and named.
 */
export interface EngineVariant {
  /** Sessions (one worker_thread each), each with one run in flight. */
  sessions: number;
  threadsPerSession: number;
  inferPerSec: number;
  msPerRun: number;
  /** CPU of this process (every thread) per inference while the sessions looped. */
  cpuMsPerInfer: number;
}

export interface EngineRow extends EngineVariant {
  model: string;
  tier: number;
  /** Every variant measured, the best one included. */
  variants: EngineVariant[];
}

export const ENGINE_SESSIONS = [1, 2, 4];

async function specOf(name: string): Promise<EngineModelSpec & { allTiers: readonly number[] }> {
  const m = await loadModel(DEMO_REPOSITORY, name);
  return { ...engineSpecOf(m, { batched: true, parameters: {} }), allTiers: m.config.tiers };
}

function inputsOf(name: string, tier: number): Map<string, EngineTensor> {
  return new Map(
    sampleInputs(demoModel(name), tier, 7).map((t) => [
      t.name,
      { data: new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength), shape: t.dims },
    ]),
  );
}

/** Every tier of `name` with N sessions, each looping for `budgetMs` after one warm-up run. */
async function measureSessions(name: string, sessions: number, budgetMs: number): Promise<Map<number, EngineVariant>> {
  const spec = await specOf(name);
  const threadsPerSession = Math.max(1, Math.floor(availableParallelism() / sessions));
  const lanes = await EngineLanes.start(
    Array.from({ length: sessions }, (_, stream) => ({ ...spec, stream, threads: threadsPerSession })),
    'ort',
  );
  const out = new Map<number, EngineVariant>();
  try {
    for (const tier of spec.allTiers) {
      const inputs = inputsOf(name, tier);
      await lanes.loopAll(tier, inputs, 0);
      const cpu0 = process.cpuUsage();
      const { runs, seconds } = await lanes.loopAll(tier, inputs, budgetMs);
      const cpu = process.cpuUsage(cpu0);
      out.set(tier, {
        sessions,
        threadsPerSession,
        inferPerSec: (runs * tier) / seconds,
        msPerRun: (seconds * 1000 * sessions) / Math.max(1, runs),
        cpuMsPerInfer: (cpu.user + cpu.system) / 1000 / Math.max(1, runs * tier),
      });
    }
  } finally {
    await lanes.close();
  }
  return out;
}

/** The best variant of each tier of `name`; `log` hears every variant. */
export async function measureEngine(name: string, budgetMs: number, log: (s: string) => void): Promise<EngineRow[]> {
  const byTier = new Map<number, EngineVariant[]>();
  for (const sessions of ENGINE_SESSIONS) {
    for (const [tier, v] of await measureSessions(name, sessions, budgetMs)) {
      byTier.set(tier, [...(byTier.get(tier) ?? []), v]);
      log(
        `engine ${name} tier ${tier}, ${sessions} session(s) × ${v.threadsPerSession} thread(s): ${v.inferPerSec.toFixed(1)} infer/s`,
      );
    }
  }
  return [...byTier].map(([tier, variants]) => {
    const best = variants.reduce((a, b) => (b.inferPerSec > a.inferPerSec ? b : a));
    return { model: name, tier, ...best, variants };
  });
}

/**
 * The engine alone as one side of an interleaved comparison (side-by-side.ts):
 * `sessions` sessions on every core, each call one run of `tier`, as many
 * calls in flight as sessions. Its CPU is this process's, so it is not metered.
 */
export async function engineSide(label: string, name: string, sessions: number, tier: number) {
  const spec = await specOf(name);
  const threads = Math.max(1, Math.floor(availableParallelism() / sessions));
  const lanes = await EngineLanes.start(
    Array.from({ length: sessions }, (_, stream) => ({ ...spec, stream, threads })),
    'ort',
  );
  const inputs = inputsOf(name, tier);
  const side: Side = {
    label,
    pids: [],
    load: { kind: 'concurrency', concurrency: sessions },
    rowsPerRequest: tier,
    open: async () => ({
      send: async () => (await lanes.run(tier, inputs)).size > 0,
      close: async () => undefined,
    }),
  };
  return { side, close: () => lanes.close() };
}
