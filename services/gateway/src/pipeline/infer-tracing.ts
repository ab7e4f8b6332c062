import {
  type Context,
  clockedEnding,
  contextFromHeaders,
  type Span,
  type SpanEnding,
  SpanKind,
  startClockedSpan,
  trace,
  traceparentOf,
  tracingActive,
} from '@ge-mesh/telemetry/tracing';

/** One step of a request at the gateway (validate, publish, wait), a child span of its infer span. */
export interface TraceStep extends SpanEnding {
  readonly context: Context;
}

/** An inference request's span at the gateway, the root of its trace (or a child of the caller's). */
export interface InferTrace {
  /** The W3C traceparent of this span: responses return it as `traceresponse`. */
  readonly traceparent: string;
  step(name: string, kind?: SpanKind): TraceStep;
  end(attributes?: Record<string, string | number>): void;
  fail(err: unknown): void;
}

function stepOf(span: Span, ctx: Context): TraceStep {
  return { context: trace.setSpan(ctx, span), ...clockedEnding(span) };
}

/**
 * Starts the `infer <model>` span (undefined when tracing is off). A caller's
 * traceparent (HTTP header, AMQP header, gRPC metadata) makes it that trace's child.
 */
export function traceInfer(
  model: string,
  ingress: string,
  carrier: Readonly<Record<string, unknown>> | undefined,
): InferTrace | undefined {
  if (!tracingActive()) return undefined;
  const parent = contextFromHeaders(carrier);
  const span = startClockedSpan(
    `infer ${model}`,
    { kind: SpanKind.SERVER, attributes: { 'gemesh.model': model, 'gemesh.ingress': ingress } },
    parent,
  );
  const ctx = trace.setSpan(parent, span);
  const ending = clockedEnding(span);
  return {
    traceparent: traceparentOf(span.spanContext()),
    step: (name, kind = SpanKind.INTERNAL) => stepOf(startClockedSpan(name, { kind }, ctx), ctx),
    end(attributes) {
      if (attributes) span.setAttributes(attributes);
      ending.end();
    },
    fail: ending.fail,
  };
}
