import {
  type BatchMessage,
  decode,
  encode,
  type InferRequestMessage,
  type InferResponseMessage,
  MeshError,
  PROTOCOL_VERSION,
  TRITON_MESSAGES,
  type WireError,
} from '@ge-mesh/protocol';
import { assembleBatch, type BufferPool, type Engine, type EngineModelSpec, sliceOutputs } from '@ge-mesh/runtime';

/** A response ready to publish to its request's reply route. */
export interface Reply {
  replyTo: string;
  correlationId: string;
  body: Uint8Array;
}

const nsSince = (t0: bigint) => Number(process.hrtime.bigint() - t0);

/**
 * Run one batch on a lane: drop expired members, assemble the rest into the
 * tier's pooled buffers, run, slice the outputs per request and encode one
 * response each. Every member gets exactly one reply, outputs or error.
 */
export async function executeBatch(
  spec: EngineModelSpec,
  engine: Engine,
  pool: BufferPool,
  batchBody: Uint8Array,
  now = Date.now(),
): Promise<Reply[]> {
  const batch = decode<BatchMessage>(batchBody);
  const requests = batch.members.map((m) => decode<InferRequestMessage>(m.body));
  const replies: Reply[] = [];
  const live: InferRequestMessage[] = [];
  for (const r of requests) {
    if (r.deadline <= now) replies.push(errorReply(r, { code: 'TIMEOUT', message: TRITON_MESSAGES.timeout }));
    else live.push(r);
  }
  if (live.length === 0) return replies;

  const rows = live.map((r) => (spec.batched ? r.batch : 1));
  const realRows = rows.reduce((a, b) => a + b, 0);
  // Expired members leave the batch; a smaller tier may now fit.
  const tier = spec.batched ? (spec.tiers.find((t) => t >= realRows) ?? batch.tier) : 1;
  const started = process.hrtime.bigint();
  try {
    const inputs = assembleBatch(
      spec.inputs,
      live.map((r, i) => ({ inputs: r.inputs, rows: rows[i] ?? 1 })),
      tier,
      spec.batched,
      pool,
    );
    const computeInputNs = nsSince(started);
    const t1 = process.hrtime.bigint();
    const outputs = await engine.run(tier, inputs);
    const computeInferNs = nsSince(t1);
    const t2 = process.hrtime.bigint();
    const sliced = sliceOutputs(spec.outputs, outputs, rows, spec.batched);
    const computeOutputNs = nsSince(t2);
    live.forEach((r, i) => {
      const wanted = r.outputs.length > 0 ? new Set(r.outputs) : null;
      replies.push(
        replyTo(r, {
          outputs: (sliced[i] ?? []).filter((t) => !wanted || wanted.has(t.name)),
          timings: {
            queueNs: Math.max(0, now - r.acceptedAt) * 1e6,
            computeInputNs,
            computeInferNs,
            computeOutputNs,
            batchRows: realRows,
            tier,
            batchId: batch.batchId,
            member: i,
            members: live.length,
          },
        }),
      );
    });
  } catch (err) {
    const e = err instanceof MeshError ? err : new MeshError('EXECUTION_FAILED', (err as Error).message);
    for (const r of live) replies.push(errorReply(r, e.toWire()));
  }
  return replies;
}

export function errorReply(r: InferRequestMessage, error: WireError): Reply {
  return replyTo(r, { error });
}

/** The one answer to a request: its outputs and timings, or an error. */
function replyTo(r: InferRequestMessage, result: Pick<InferResponseMessage, 'outputs' | 'timings' | 'error'>): Reply {
  const msg: InferResponseMessage = {
    v: PROTOCOL_VERSION,
    id: r.id,
    correlationId: r.correlationId,
    model: r.model,
    version: r.version,
    ...result,
  };
  return { replyTo: r.replyTo, correlationId: r.correlationId, body: encode(msg) };
}
