import { Worker } from 'node:worker_threads';
import type { EngineModelSpec } from '@ge-mesh/runtime';
import type { Logger } from '@ge-mesh/telemetry';
import type { Reply } from './execute-batch.js';
import type { LaneRequest, LaneResponse } from './lane-messages.js';

const LANE_ENTRY = new URL('./lane-entry.mjs', import.meta.url);

interface Lane {
  index: number;
  worker: Worker;
  busy: boolean;
}

interface Pending {
  resolve: (r: Reply[]) => void;
  reject: (e: Error) => void;
}

/**
 * The lanes of one model on one device. Batches go to an idle lane; the
 * broker's prefetch (= lane count) guarantees one is idle when a batch arrives.
 */
export class LanePool {
  private readonly lanes: Lane[] = [];
  private readonly waiting: Array<(lane: Lane) => void> = [];
  private readonly pending = new Map<number, Pending>();
  private seq = 0;

  private constructor(
    readonly model: string,
    private readonly log: Logger,
  ) {}

  get size(): number {
    return this.lanes.length;
  }

  static async start(specs: EngineModelSpec[], log: Logger): Promise<LanePool> {
    const pool = new LanePool(specs[0]?.name ?? '?', log);
    try {
      await Promise.all(specs.map((spec, index) => pool.spawn(spec, index)));
    } catch (err) {
      await pool.close();
      throw err;
    }
    return pool;
  }

  private spawn(spec: EngineModelSpec, index: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const worker = new Worker(LANE_ENTRY, { workerData: spec, name: `lane-${spec.name}-${index}` });
      const lane: Lane = { index, worker, busy: false };
      worker.on('message', (msg: LaneResponse) => {
        if (msg.type === 'ready') {
          this.lanes.push(lane);
          resolve();
        } else if (msg.type === 'failed') {
          reject(new Error(msg.message));
          void worker.terminate();
        } else {
          const p = this.pending.get(msg.seq);
          this.pending.delete(msg.seq);
          this.release(lane);
          p?.resolve(msg.replies);
        }
      });
      worker.on('error', (err) => {
        this.log.error({ err, lane: index }, 'lane crashed');
        reject(err);
      });
      worker.on('exit', (code) => {
        if (code !== 0) this.log.warn({ lane: index, code }, 'lane exited');
        // Any batch it held is failed back to the caller, which nacks it for redelivery.
        for (const [seq, p] of this.pending) {
          if ((p as Pending & { lane?: number }).lane === index) {
            this.pending.delete(seq);
            p.reject(new Error(`lane ${index} exited with code ${code}`));
          }
        }
        const i = this.lanes.indexOf(lane);
        if (i >= 0) this.lanes.splice(i, 1);
      });
    });
  }

  private acquire(): Promise<Lane> {
    const idle = this.lanes.find((l) => !l.busy);
    if (idle) {
      idle.busy = true;
      return Promise.resolve(idle);
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private release(lane: Lane): void {
    const next = this.waiting.shift();
    if (next) next(lane);
    else lane.busy = false;
  }

  async run(batch: Uint8Array): Promise<Reply[]> {
    const lane = await this.acquire();
    const seq = ++this.seq;
    return new Promise<Reply[]>((resolve, reject) => {
      this.pending.set(seq, Object.assign({ resolve, reject }, { lane: lane.index }));
      lane.worker.postMessage({ type: 'run', seq, batch } satisfies LaneRequest);
    });
  }

  async close(): Promise<void> {
    await Promise.all(
      this.lanes.map(async (l) => {
        l.worker.postMessage({ type: 'close' } satisfies LaneRequest);
        await new Promise((r) => setTimeout(r, 50));
        await l.worker.terminate();
      }),
    );
    this.lanes.length = 0;
  }
}
