import { Worker } from 'node:worker_threads';
import type { EngineModelSpec } from '@ge-mesh/runtime';
import type { Logger } from '@ge-mesh/telemetry';
import type { LaneStages, ReplyGroup, StoredRequests } from './execute-batch.js';
import { type LaneRequest, type LaneResponse, runRequest } from './lane-messages.js';

const LANE_ENTRY = new URL('./lane-entry.mjs', import.meta.url);

/** What a lane ran: its replies, how long it held the lane, when it got it (ms since the epoch), its stages. */
export interface LaneRun {
  groups: ReplyGroup[];
  laneMs: number;
  acquiredAt: number;
  stages?: LaneStages;
}

interface Lane {
  readonly index: number;
  readonly spec: EngineModelSpec;
  worker: Worker;
  busy: boolean;
}

interface Pending {
  readonly lane: number;
  resolve: (r: ReplyGroup[], stages?: LaneStages) => void;
  reject: (e: Error) => void;
}

/**
 * The lanes of one model version on one device: one worker_thread per
 * stream. Batches go to an idle lane; the broker's prefetch (= lanes)
 * guarantees one is idle when a batch arrives. A lane whose thread dies is
 * started again; the batch it held fails back to the caller, which returns
 * it to the broker for redelivery.
 */
export class LanePool {
  private readonly lanes: Lane[] = [];
  private readonly waiting: Array<(lane: Lane) => void> = [];
  private readonly pending = new Map<number, Pending>();
  private seq = 0;
  private closing = false;

  private constructor(
    readonly model: string,
    private readonly log: Logger,
  ) {}

  get size(): number {
    return this.lanes.length;
  }

  /** Lanes running a batch now. */
  get busy(): number {
    return this.lanes.filter((l) => l.busy).length;
  }

  static async start(specs: EngineModelSpec[], log: Logger): Promise<LanePool> {
    const pool = new LanePool(specs[0]?.name ?? '?', log);
    const started = await Promise.allSettled(specs.map((spec, index) => pool.spawn(spec, index)));
    const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) {
      await pool.close();
      throw failed.reason;
    }
    pool.lanes.sort((a, b) => a.index - b.index);
    return pool;
  }

  private spawn(spec: EngineModelSpec, index: number): Promise<Lane> {
    return new Promise((resolve, reject) => {
      const worker = new Worker(LANE_ENTRY, { workerData: spec, name: `lane-${spec.name}-${spec.deviceId}-${index}` });
      const existing = this.lanes.find((l) => l.index === index);
      const lane: Lane = existing ?? { index, spec, worker, busy: false };
      let ready = false;
      worker.on('message', (msg: LaneResponse) => {
        if (msg.type === 'ready') {
          ready = true;
          lane.worker = worker;
          if (!existing) this.lanes.push(lane);
          resolve(lane);
        } else if (msg.type === 'failed') {
          reject(new Error(msg.message));
          void worker.terminate();
        } else {
          const p = this.pending.get(msg.seq);
          this.pending.delete(msg.seq);
          this.release(lane);
          p?.resolve(msg.replies, msg.stages);
        }
      });
      worker.on('error', (err) => {
        this.log.error({ err, model: spec.name, device: spec.deviceId, lane: index }, 'lane crashed');
        if (!ready) reject(err);
      });
      worker.on('exit', (code) => {
        if (!ready || lane.worker !== worker) return;
        for (const [seq, p] of this.pending) {
          if (p.lane === index) {
            this.pending.delete(seq);
            p.reject(new Error(`lane ${index} of '${spec.name}' exited with code ${code}`));
          }
        }
        if (this.closing) return;
        this.log.warn({ model: spec.name, device: spec.deviceId, lane: index, code }, 'lane exited; starting it again');
        lane.busy = true;
        this.spawn(spec, index).then(
          (l) => this.release(l),
          (err: Error) => {
            // A lane that cannot start again leaves the worker unable to honour its prefetch.
            this.log.fatal({ err: err.message, model: spec.name, lane: index }, 'lane did not restart');
            process.exit(1);
          },
        );
      });
    });
  }

  /** An idle lane, marked busy, at once; else the next one released. */
  private acquire(): Lane | Promise<Lane> {
    const idle = this.lanes.find((l) => !l.busy);
    if (idle) {
      idle.busy = true;
      return idle;
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private release(lane: Lane): void {
    const next = this.waiting.shift();
    if (next) next(lane);
    else lane.busy = false;
  }

  private post(
    lane: Lane,
    batch: Uint8Array,
    onStages?: (s: LaneStages) => void,
    stored?: StoredRequests,
  ): Promise<ReplyGroup[]> {
    const seq = ++this.seq;
    return new Promise<ReplyGroup[]>((resolve, reject) => {
      const done = (r: ReplyGroup[], stages?: LaneStages) => {
        if (stages) onStages?.(stages);
        resolve(r);
      };
      this.pending.set(seq, { lane: lane.index, resolve: done, reject });
      // Copied once and moved, not cloned (runRequest says why); no buffer the broker or the
      // Redis client may still hold is handed away.
      lane.worker.postMessage(...runRequest(seq, batch, stored));
    });
  }

  /**
   * Run a batch on the next idle lane; `laneMs` is how long it held the lane,
   * `acquiredAt` when it got one (ms since the epoch) and `stages` what the lane ran when.
   * `stored`: the bodies of members that travelled beside the batch (BatchMember.stored).
   */
  run(batch: Uint8Array, stored?: StoredRequests): Promise<LaneRun> {
    // An idle lane gets the batch in this tick, before the caller's next write (start-batch).
    const lane = this.acquire();
    return lane instanceof Promise ? lane.then((l) => this.runOn(l, batch, stored)) : this.runOn(lane, batch, stored);
  }

  private async runOn(lane: Lane, batch: Uint8Array, stored?: StoredRequests): Promise<LaneRun> {
    // Timed from the moment a lane is free: the wait for one is queueing, not the tier's cost.
    const t0 = performance.now();
    let stages: LaneStages | undefined;
    const groups = await this.post(
      lane,
      batch,
      (s) => {
        stages = s;
      },
      stored,
    );
    return {
      groups,
      laneMs: performance.now() - t0,
      acquiredAt: performance.timeOrigin + t0,
      ...(stages ? { stages } : {}),
    };
  }

  /** Run each batch on every lane in turn (warmup: every lane compiles and touches every tier). */
  async runOnEveryLane(batches: readonly Uint8Array[]): Promise<ReplyGroup[][]> {
    const out: ReplyGroup[][] = [];
    await Promise.all(
      this.lanes.map(async (lane) => {
        lane.busy = true;
        try {
          for (const b of batches) out.push(await this.post(lane, b));
        } finally {
          this.release(lane);
        }
      }),
    );
    return out;
  }

  async close(): Promise<void> {
    this.closing = true;
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
