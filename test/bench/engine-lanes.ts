import { Worker } from 'node:worker_threads';
import { MeshError } from '@ge-mesh/protocol';
import type { EngineModelSpec, EngineTensor } from '@ge-mesh/runtime';
import type { LaneIn, LaneOut, LaneRuntime, WireTensor } from './engine-lane-messages.js';

const ENTRY = new URL('./engine-lane-entry.mjs', import.meta.url);

type Lane = Worker;

type Settle = { resolve: (m: LaneOut) => void; reject: (e: Error) => void };

/**
 * Engines on worker_threads, one per lane, fed the way a mesh worker feeds
 * its lanes: each request goes to an idle lane, or waits (FIFO) for the
 * first lane to free up.
 */
export class EngineLanes {
  private readonly idle: Lane[] = [];
  private readonly queue: Array<(lane: Lane) => void> = [];
  private readonly pending = new Map<number, Settle>();
  private seq = 0;

  private constructor(private readonly lanes: Lane[]) {
    this.idle.push(...lanes);
  }

  get size(): number {
    return this.lanes.length;
  }

  static async start(specs: readonly EngineModelSpec[], runtime: LaneRuntime): Promise<EngineLanes> {
    const started = await Promise.allSettled(specs.map((spec) => startLane(spec, runtime)));
    const lanes = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) {
      await Promise.all(lanes.map((l) => l.terminate()));
      throw failed.reason;
    }
    const pool = new EngineLanes(lanes);
    for (const lane of lanes) lane.on('message', (m: LaneOut) => pool.settle(m));
    return pool;
  }

  private settle(m: LaneOut): void {
    if (m.type !== 'done' && m.type !== 'looped' && m.type !== 'error') return;
    const p = this.pending.get(m.seq);
    this.pending.delete(m.seq);
    if (m.type === 'error') p?.reject(MeshError.fromWire(m));
    else p?.resolve(m);
  }

  private acquire(): Promise<Lane> {
    const lane = this.idle.shift();
    if (lane) return Promise.resolve(lane);
    return new Promise((resolve) => this.queue.push(resolve));
  }

  private release(lane: Lane): void {
    const next = this.queue.shift();
    if (next) next(lane);
    else this.idle.push(lane);
  }

  private send(lane: Lane, msg: LaneIn & { seq: number }): Promise<LaneOut> {
    return new Promise((resolve, reject) => {
      this.pending.set(msg.seq, { resolve, reject });
      lane.postMessage(msg);
    });
  }

  /** One run on the first idle lane. */
  async run(tier: number, inputs: ReadonlyMap<string, EngineTensor>): Promise<Map<string, EngineTensor>> {
    const lane = await this.acquire();
    try {
      const m = await this.send(lane, { type: 'run', seq: this.seq++, tier, inputs: wire(inputs) });
      const out = new Map<string, EngineTensor>();
      if (m.type === 'done') for (const t of m.outputs) out.set(t.name, { data: t.data, shape: t.shape });
      return out;
    } finally {
      this.release(lane);
    }
  }

  /** Every lane runs `tier` back to back for `ms`; resolves with the runs of all lanes and the wall time. */
  async loopAll(tier: number, inputs: ReadonlyMap<string, EngineTensor>, ms: number) {
    const t0 = performance.now();
    const done = await Promise.all(
      this.lanes.map((lane) => this.send(lane, { type: 'loop', seq: this.seq++, tier, inputs: wire(inputs), ms })),
    );
    // The wall time includes each lane's last run past the budget: its rows count, so must its time.
    const seconds = (performance.now() - t0) / 1000;
    const runs = done.reduce((a, m) => a + (m.type === 'looped' ? m.runs : 0), 0);
    return { runs, seconds };
  }

  async close(): Promise<void> {
    await Promise.all(
      this.lanes.map(async (l) => {
        const exited = new Promise((r) => l.once('exit', r));
        l.postMessage({ type: 'close' } satisfies LaneIn);
        // A lane stuck in a run must not hold the process: give it a moment, then end it.
        const t = setTimeout(() => void l.terminate(), 5000);
        await exited;
        clearTimeout(t);
      }),
    );
  }
}

function wire(inputs: ReadonlyMap<string, EngineTensor>): WireTensor[] {
  return [...inputs].map(([name, t]) => ({ name, data: t.data, shape: [...t.shape] }));
}

function startLane(spec: EngineModelSpec, runtime: LaneRuntime): Promise<Lane> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(ENTRY, { workerData: { spec, runtime }, name: `bench-lane-${spec.name}-${spec.stream}` });
    const onMessage = (m: LaneOut) => {
      if (m.type === 'ready') {
        worker.off('message', onMessage);
        resolve(worker);
      } else if (m.type === 'failed') {
        void worker.terminate();
        reject(new Error(`lane ${spec.stream} of '${spec.name}': ${m.message}`));
      }
    };
    worker.on('message', onMessage);
    worker.once('error', reject);
  });
}
