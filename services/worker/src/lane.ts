import { parentPort, workerData } from 'node:worker_threads';
import { type BatchMessage, decode, type InferRequestMessage } from '@ge-mesh/protocol';
import { BufferPool, type Engine, type EngineModelSpec } from '@ge-mesh/runtime';
import { createEngine } from './engines.js';
import { epochMs, executeBatch, newLaneStages } from './execute-batch.js';
import type { LaneRequest, LaneResponse } from './lane-messages.js';
import { TEST_CRASH_ON_REQUEST } from './test-faults.js';

/**
 * One lane = one worker_thread = one device stream. It owns its engine (one
 * static graph per tier) and its pooled buffers, and runs one batch at a time,
 * so a long run never blocks the main thread's broker traffic.
 */
const spec = workerData as EngineModelSpec;
const port = parentPort;
if (!port) throw new Error('lane.ts must run in a worker_thread');

const pool = new BufferPool();
let engine: Engine | undefined;

try {
  engine = await createEngine(spec);
  port.postMessage({ type: 'ready' } satisfies LaneResponse);
} catch (err) {
  port.postMessage({ type: 'failed', message: (err as Error).message } satisfies LaneResponse);
}

/** Test fault injection (test-faults.ts): a marked request crashes the whole process. */
function crashIfMarked(body: Uint8Array): void {
  const batch = decode<BatchMessage>(body);
  for (const m of batch.members) {
    if (decode<InferRequestMessage>(m.body).clientId === TEST_CRASH_ON_REQUEST) process.kill(process.pid, 'SIGKILL');
  }
}

port.on('message', async (msg: LaneRequest) => {
  if (msg.type === 'close') {
    await engine?.close();
    port.close();
    return;
  }
  if (!engine) return;
  if (TEST_CRASH_ON_REQUEST) crashIfMarked(msg.batch);
  const stages = newLaneStages();
  const replies = await executeBatch(spec, engine, pool, msg.batch, epochMs(), stages, msg.stored);
  // Each group's body owns its memory (see executeBatch): moved to the main thread, not copied.
  port.postMessage(
    { type: 'done', seq: msg.seq, replies, stages } satisfies LaneResponse,
    replies.map((r) => r.body.buffer as ArrayBuffer),
  );
});
