import { parentPort, workerData } from 'node:worker_threads';
import { GeModel } from '@ge-mesh/ge-bridge';

/**
 * A lane as the worker service runs one: its own thread, its own stream,
 * synchronous bridge calls. Runs each input batch on (stream, tier) and posts
 * the outputs and the wall-clock span of the runs back. With a gate, it waits
 * for the gate to open after reporting ready, so several lanes start together.
 */
interface LaneJob {
  handle: number;
  stream: number;
  tier: number;
  batches: Float32Array[];
  gate?: SharedArrayBuffer;
}

const job = workerData as LaneJob;
const model = GeModel.attach(job.handle);
const outputs: Float32Array[] = [];
parentPort?.postMessage({ kind: 'ready' });
if (job.gate) Atomics.wait(new Int32Array(job.gate), 0, 0);
const start = performance.timeOrigin + performance.now();
try {
  for (const batch of job.batches) {
    const out = model.allocateOutputs(job.tier).map((b) => new Float32Array(b.buffer));
    model.run(job.stream, job.tier, [batch], out);
    outputs.push(...out);
  }
  const end = performance.timeOrigin + performance.now();
  parentPort?.postMessage({ kind: 'done', outputs, start, end });
} catch (err) {
  parentPort?.postMessage({ kind: 'error', message: (err as Error).message });
}
