import type { Broker } from '@ge-mesh/broker';
import { describeGears, gearFor, rowDimsOf } from '@ge-mesh/model-repository';
import {
  type BatchMessage,
  decode,
  encode,
  encodeOwned,
  errorResponse,
  type InferRequestMessage,
  type InferResponseMessage,
  MeshError,
  PROTOCOL_VERSION,
  TRITON_MESSAGES,
  tensorBytes,
  versionMismatch,
  type WireError,
} from '@ge-mesh/protocol';
import {
  assembleBatch,
  assembleGearBatch,
  type BufferPool,
  type Engine,
  type EngineModelSpec,
  sliceGearOutputs,
  sliceOutputs,
} from '@ge-mesh/runtime';

/**
 * Every response of a batch for one reply queue, encoded as one message
 * (decodeResponses reads it). `body` owns its memory, so it can be
 * transferred from the lane to the main thread without a copy.
 */
export interface ReplyGroup {
  replyTo: string;
  count: number;
  body: Uint8Array;
}

/**
 * The requests of a batch that travelled beside it (BatchMember.stored), by
 * request id, as the gateway encoded them; null for one Redis no longer had.
 */
export type StoredRequests = Map<string, Uint8Array | null>;

/** What a member whose stored request is gone is answered. */
export const STORED_REQUEST_LOST =
  "the request's tensors were no longer in Redis (it restarted, or evicted them); send the request again";

const nsSince = (t0: bigint) => Number(process.hrtime.bigint() - t0);

/**
 * What a lane ran and when each stage began (ms since the epoch, comparable
 * across threads), for the worker's trace spans and metrics. Stages the run
 * did not reach stay 0 (every member expired, or the run failed).
 */
export interface LaneStages {
  tier: number;
  rows: number;
  assembleAt: number;
  runAt: number;
  sliceAt: number;
  encodeAt: number;
  doneAt: number;
}

export const newLaneStages = (): LaneStages => ({
  tier: 0,
  rows: 0,
  assembleAt: 0,
  runAt: 0,
  sliceAt: 0,
  encodeAt: 0,
  doneAt: 0,
});

/**
 * The wall clock to the microsecond (Date.now() counts whole milliseconds, as long as a tiny
 * request's whole queue time); here rather than from the tracing package, which the lanes do not load.
 */
export const epochMs = () => performance.timeOrigin + performance.now();

/**
 * Run one batch on a lane: drop expired members, assemble the rest into the
 * tier's pooled buffers, run, slice the outputs per request and encode the
 * responses, one message per reply queue. Every member gets exactly one
 * response, outputs or error.
 */
export async function executeBatch(
  spec: EngineModelSpec,
  engine: Engine,
  pool: BufferPool,
  batchBody: Uint8Array,
  now = epochMs(),
  stages = newLaneStages(),
  stored?: StoredRequests,
): Promise<ReplyGroup[]> {
  const responses = await runBatch(spec, engine, pool, batchBody, now, stages, stored);
  stages.encodeAt = epochMs();
  const groups = groupByReplyQueue(responses);
  stages.doneAt = epochMs();
  return groups;
}

type Response = { replyTo: string; msg: InferResponseMessage };

async function runBatch(
  spec: EngineModelSpec,
  engine: Engine,
  pool: BufferPool,
  batchBody: Uint8Array,
  now: number,
  stages: LaneStages,
  stored: StoredRequests | undefined,
): Promise<Response[]> {
  const batch = decode<BatchMessage>(batchBody);
  const replies: Response[] = [];
  const live: InferRequestMessage[] = [];
  for (const m of batch.members) {
    const whole = m.stored ? stored?.get(m.id) : m.body;
    const r = decode<InferRequestMessage>(whole ?? m.body);
    const mismatch = versionMismatch(r.v, 'request');
    if (mismatch) replies.push(response(r, { error: mismatch }));
    else if (!whole) replies.push(response(r, { error: { code: 'UNAVAILABLE', message: STORED_REQUEST_LOST } }));
    else if (r.deadline <= now)
      replies.push(response(r, { error: { code: 'TIMEOUT', message: TRITON_MESSAGES.timeout } }));
    else live.push(r);
  }
  if (live.length === 0) return replies;
  for (const chunk of chunksWithin(spec, live)) {
    replies.push(...(await runChunk(spec, engine, pool, batch.batchId, batch.tier, chunk, now, stages)));
  }
  return replies;
}

/**
 * The live members in runs the model's largest tier holds: one run, unless
 * the batch was formed under another config of the model (a reload: the
 * batcher switches only once this version is ready, but batches it formed
 * before may still be queued). A member larger than the largest tier runs
 * alone and is answered with an error.
 */
function chunksWithin(spec: EngineModelSpec, live: InferRequestMessage[]): InferRequestMessage[][] {
  const largest = spec.tiers[spec.tiers.length - 1] ?? 1;
  if (!spec.batched || live.reduce((n, r) => n + r.batch, 0) <= largest) return [live];
  const chunks: InferRequestMessage[][] = [];
  let current: InferRequestMessage[] = [];
  let rows = 0;
  for (const r of live) {
    if (current.length > 0 && rows + r.batch > largest) {
      chunks.push(current);
      current = [];
      rows = 0;
    }
    current.push(r);
    rows += r.batch;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

async function runChunk(
  spec: EngineModelSpec,
  engine: Engine,
  pool: BufferPool,
  batchId: string,
  formedTier: number,
  live: InferRequestMessage[],
  now: number,
  stages: LaneStages,
): Promise<Response[]> {
  const replies: Response[] = [];
  const rows = live.map((r) => (spec.batched ? r.batch : 1));
  const realRows = rows.reduce((a, b) => a + b, 0);
  const largest = spec.tiers[spec.tiers.length - 1] ?? 1;
  if (spec.batched && realRows > largest) {
    const message = `the request's ${realRows} rows exceed the largest batch tier (${largest}) of ${spec.name} version ${spec.version}; send at most ${largest}`;
    return live.map((r) => response(r, { error: { code: 'EXECUTION_FAILED', message } }));
  }
  // Expired members leave the batch; a smaller tier (or gear) may now fit.
  const members = live.map((r, i) => ({ inputs: r.inputs, rows: rows[i] ?? 1 }));
  const gears = spec.gears;
  const gear = gears
    ? gearFor(
        gears,
        live.map((r, i) => ({ rows: rows[i] ?? 1, dims: rowDimsOf(gears, r.inputs) })),
      )
    : undefined;
  if (gears && !gear) {
    const message = `the batch's ${realRows} rows and input shapes fit no gear of ${spec.name} version ${spec.version} (gears: ${describeGears(gears)})`;
    return live.map((r) => response(r, { error: { code: 'EXECUTION_FAILED', message } }));
  }
  const tier = gear ? gear.batch : spec.batched ? (spec.tiers.find((t) => t >= realRows) ?? formedTier) : 1;
  stages.tier = tier;
  stages.rows = realRows;
  stages.assembleAt = epochMs();
  const started = process.hrtime.bigint();
  try {
    const inputs =
      gears && gear
        ? assembleGearBatch(spec.inputs, members, gear, gears, pool)
        : assembleBatch(spec.inputs, members, tier, spec.batched, pool);
    const computeInputNs = nsSince(started);
    stages.runAt = epochMs();
    const t1 = process.hrtime.bigint();
    const outputs = await engine.run(tier, inputs, gear?.index);
    const computeInferNs = nsSince(t1);
    stages.sliceAt = epochMs();
    const t2 = process.hrtime.bigint();
    const sliced = gear
      ? sliceGearOutputs(spec.outputs, outputs, members, spec.outputLinks ?? {}, spec.batched)
      : sliceOutputs(spec.outputs, outputs, rows, spec.batched);
    const computeOutputNs = nsSince(t2);
    live.forEach((r, i) => {
      const wanted = r.outputs.length > 0 ? new Set(r.outputs) : null;
      replies.push(
        response(r, {
          outputs: (sliced[i] ?? []).filter((t) => !wanted || wanted.has(t.name)),
          timings: {
            queueNs: Math.round(Math.max(0, now - r.acceptedAt) * 1e6),
            computeInputNs,
            computeInferNs,
            computeOutputNs,
            batchRows: realRows,
            tier,
            batchId,
            member: i,
            members: live.length,
          },
        }),
      );
    });
  } catch (err) {
    const e = err instanceof MeshError ? err : new MeshError('EXECUTION_FAILED', (err as Error).message);
    for (const r of live) replies.push(response(r, { error: e.toWire() }));
  }
  return replies;
}

/** One message per reply queue, in member order; each body a fresh copy (the encoder reuses its buffer). */
function groupByReplyQueue(responses: readonly Response[]): ReplyGroup[] {
  const groups = new Map<string, InferResponseMessage[]>();
  for (const { replyTo, msg } of responses) {
    const g = groups.get(replyTo);
    if (g) g.push(msg);
    else groups.set(replyTo, [msg]);
  }
  return [...groups].map(([replyTo, msgs]) => ({
    replyTo,
    count: msgs.length,
    // Owns its memory: the lane transfers it to the main thread.
    body: encodeOwned(
      msgs,
      msgs.reduce((n, m) => n + tensorBytes(m.outputs), 0),
    ),
  }));
}

/** Answer one request with an error outside a batch (dead letters, an unload), unconfirmed as every reply. */
export function sendErrorReply(
  broker: Pick<Broker, 'sendUnconfirmed'>,
  r: InferRequestMessage,
  error: WireError,
): void {
  broker.sendUnconfirmed(r.replyTo, Buffer.from(encode(errorResponse(r, error))), { correlationId: r.correlationId });
}

/** The one answer to a request: its outputs and timings, or an error. */
function response(
  r: InferRequestMessage,
  result: Pick<InferResponseMessage, 'outputs' | 'timings' | 'error'>,
): Response {
  const msg: InferResponseMessage = {
    v: PROTOCOL_VERSION,
    id: r.id,
    correlationId: r.correlationId,
    model: r.model,
    version: r.version,
    ...result,
  };
  return { replyTo: r.replyTo, msg };
}
