import { Worker } from 'node:worker_threads';

export interface LaneResult {
  outputs: Float32Array[];
  /** Epoch milliseconds of the first run's start and the last run's end. */
  start: number;
  end: number;
}

export interface LaneJob {
  handle: number;
  stream: number;
  tier: number;
  batches: Float32Array[];
  /** Shared Int32 gate: the lane waits after `onReady` until gate[0] becomes non-zero. */
  gate?: SharedArrayBuffer;
}

/** Runs lane-worker.ts on a worker_thread (through lane-entry.mjs). */
export function runLane(job: LaneJob, onReady?: () => void): Promise<LaneResult> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./lane-entry.mjs', import.meta.url), { workerData: job });
    worker.on('message', (msg: { kind: string; message?: string } & LaneResult) => {
      if (msg.kind === 'ready') onReady?.();
      if (msg.kind === 'error') reject(new Error(msg.message));
      if (msg.kind === 'done') resolve({ outputs: msg.outputs, start: msg.start, end: msg.end });
    });
    worker.on('error', reject);
    worker.on('exit', (code) => {
      if (code !== 0) reject(new Error(`lane worker exited with ${code}`));
    });
  });
}

/** Starts the lanes, opens their shared gate once all are ready, and waits for all. */
export function runLanesTogether(jobs: Omit<LaneJob, 'gate'>[]): Promise<LaneResult[]> {
  const gate = new SharedArrayBuffer(4);
  let ready = 0;
  const open = () => {
    if (++ready < jobs.length) return;
    Atomics.store(new Int32Array(gate), 0, 1);
    Atomics.notify(new Int32Array(gate), 0);
  };
  return Promise.all(jobs.map((job) => runLane({ ...job, gate }, open)));
}
