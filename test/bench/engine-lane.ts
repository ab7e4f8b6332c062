import { parentPort, workerData } from 'node:worker_threads';
import { MeshError } from '@ge-mesh/protocol';
import type { Engine, EngineTensor } from '@ge-mesh/runtime';
import { createOrtEngine } from '@ge-mesh/runtime-ort';
import type { LaneData, LaneIn, LaneOut, WireTensor } from './engine-lane-messages.js';

/**
 * One benchmark lane: a worker_thread owning one engine. Engines block the
 * thread they run on (onnxruntime-node and the GE bridge both run
 * synchronously), so parallel runs need one thread each, exactly as the
 * mesh's worker gives each stream its own lane.
 */
const { spec, runtime } = workerData as LaneData;
const port = parentPort;
if (!port) throw new Error('engine-lane.ts must run in a worker_thread');

async function create(): Promise<Engine> {
  if (runtime === 'ge') {
    // Loaded only where used: it loads the native bridge.
    const { createGeEngine } = await import('@ge-mesh/runtime-ge');
    return createGeEngine(spec);
  }
  return createOrtEngine(spec);
}

const toMap = (inputs: WireTensor[]) =>
  new Map<string, EngineTensor>(inputs.map((t) => [t.name, { data: t.data, shape: t.shape }]));

let engine: Engine | undefined;
try {
  engine = await create();
  port.postMessage({ type: 'ready' } satisfies LaneOut);
} catch (err) {
  port.postMessage({ type: 'failed', message: (err as Error).message } satisfies LaneOut);
}

async function loop(e: Engine, tier: number, inputs: Map<string, EngineTensor>, ms: number): Promise<number> {
  // At least one run, so a budget shorter than a run still measures (and `ms` 0 is a warm-up).
  let runs = 0;
  const until = performance.now() + ms;
  do {
    await e.run(tier, inputs);
    runs++;
  } while (performance.now() < until);
  return runs;
}

port.on('message', async (msg: LaneIn) => {
  if (msg.type === 'close') {
    await engine?.close();
    port.close();
    return;
  }
  if (!engine) return;
  try {
    if (msg.type === 'loop') {
      const runs = await loop(engine, msg.tier, toMap(msg.inputs), msg.ms);
      port.postMessage({ type: 'looped', seq: msg.seq, runs } satisfies LaneOut);
      return;
    }
    const out = await engine.run(msg.tier, toMap(msg.inputs));
    // Copied by postMessage: engines reuse their output buffers on the next run.
    const outputs = [...out].map(([name, t]) => ({ name, data: t.data, shape: [...t.shape] }));
    port.postMessage({ type: 'done', seq: msg.seq, outputs } satisfies LaneOut);
  } catch (err) {
    const e = err instanceof MeshError ? err : new MeshError('INTERNAL', (err as Error).message);
    port.postMessage({ type: 'error', seq: msg.seq, ...e.toWire() } satisfies LaneOut);
  }
});
