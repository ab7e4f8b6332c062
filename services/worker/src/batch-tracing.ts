import type { BatchMessage } from '@ge-mesh/protocol';
import {
  type Context,
  clockedEnding,
  contextFromHeaders,
  epochMs,
  meshTracer,
  type SpanEnding,
  SpanKind,
  startClockedSpan,
  trace,
  tracingActive,
} from '@ge-mesh/telemetry/tracing';
import type { LaneStages } from './execute-batch.js';

/** The worker's span of one batch, child of the batcher's (its context came in the batch's headers). */
export interface WorkerBatchTrace extends SpanEnding {
  /** The lane's stages as child spans: lane wait, assemble, device run, slice, encode. */
  ran(acquiredAt: number, stages: LaneStages | undefined): void;
  /** A `reply publish` span; its context goes with the replies to the gateways. */
  publishing(): { readonly context: Context; end(): void };
}

/** Undefined when tracing is off. */
export function traceWorkerBatch(
  model: string,
  device: number,
  batch: BatchMessage,
  headers: Readonly<Record<string, unknown>> | undefined,
): WorkerBatchTrace | undefined {
  if (!tracingActive()) return undefined;
  const tracer = meshTracer();
  const startedAt = epochMs();
  const span = tracer.startSpan(
    'worker batch',
    {
      kind: SpanKind.CONSUMER,
      startTime: startedAt,
      attributes: {
        'gemesh.model': model,
        'gemesh.device': device,
        'gemesh.batch.id': batch.batchId,
        'gemesh.batch.tier': batch.tier,
        'gemesh.batch.rows': batch.rows,
        'gemesh.batch.requests': batch.members.length,
      },
    },
    contextFromHeaders(headers),
  );
  const ctx = trace.setSpan(contextFromHeaders(headers), span);
  const child = (name: string, from: number, to: number, attributes: Record<string, number> = {}) => {
    if (from > 0 && to >= from) tracer.startSpan(name, { startTime: from, attributes }, ctx).end(to);
  };
  return {
    ran(acquiredAt, stages) {
      child('lane wait', startedAt, acquiredAt);
      if (!stages) return;
      // What the lane ran: expired members may have left the batch and a smaller tier fit.
      span.setAttributes({ 'gemesh.lane.tier': stages.tier, 'gemesh.lane.rows': stages.rows });
      child('assemble', stages.assembleAt, stages.runAt);
      child('device run', stages.runAt, stages.sliceAt, { 'gemesh.batch.tier': stages.tier });
      child('slice', stages.sliceAt, stages.encodeAt);
      child('encode', stages.encodeAt, stages.doneAt);
    },
    publishing() {
      const p = startClockedSpan('reply publish', { kind: SpanKind.PRODUCER }, ctx);
      return { context: trace.setSpan(ctx, p), end: clockedEnding(p).end };
    },
    ...clockedEnding(span),
  };
}
