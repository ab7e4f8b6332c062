import type { ConsumeMessage } from '@ge-mesh/broker';
import {
  type Context,
  clockedEnding,
  contextFromHeaders,
  epochMs,
  meshTracer,
  type SpanEnding,
  SpanKind,
  trace,
  tracingActive,
} from '@ge-mesh/telemetry/tracing';

/** A batch's span while it is published; its context travels in the batch message's headers. */
export interface BatchTrace extends SpanEnding {
  readonly context: Context;
}

/** A pending request of the batch (the batcher's own queue entry). */
export interface TracedMember {
  readonly item: { readonly msg: ConsumeMessage; readonly receivedAt: number };
  /** When its request was accepted (ms since the epoch): its queue wait starts there. */
  readonly enqueuedAt: number;
}

/**
 * The batcher's spans for one batch (undefined when tracing is off): each
 * member's `batcher queue wait` in its own trace, ended now; and the
 * `batcher batch` span with the tier and padding, linked to every member's
 * request span and parented by the first member's (so a one-request batch
 * is one trace from the gateway to the worker).
 */
export function traceBatch(
  model: string,
  batchId: string,
  members: readonly TracedMember[],
  tier: number,
  rows: number,
): BatchTrace | undefined {
  if (!tracingActive()) return undefined;
  const tracer = meshTracer();
  const now = epochMs();
  const parents = members.map((m) => contextFromHeaders(m.item.msg.properties.headers));
  for (const [i, m] of members.entries()) {
    const wait = tracer.startSpan(
      'batcher queue wait',
      { startTime: m.enqueuedAt, attributes: { 'gemesh.model': model, 'gemesh.batch.id': batchId } },
      parents[i],
    );
    // The wait began at the gateway (Triton's queue time); this marks where the batcher took over.
    wait.addEvent('received by the batcher', m.item.receivedAt);
    wait.end(now);
  }
  const links = parents.flatMap((p) => {
    const sc = trace.getSpanContext(p);
    return sc ? [{ context: sc }] : [];
  });
  const parent = parents[0] as Context;
  const span = tracer.startSpan(
    'batcher batch',
    {
      kind: SpanKind.PRODUCER,
      startTime: now,
      links,
      attributes: {
        'gemesh.model': model,
        'gemesh.batch.id': batchId,
        'gemesh.batch.tier': tier,
        'gemesh.batch.rows': rows,
        'gemesh.batch.padding': tier - rows,
        'gemesh.batch.requests': members.length,
      },
    },
    parent,
  );
  return {
    context: trace.setSpan(parent, span),
    ...clockedEnding(span),
  };
}
