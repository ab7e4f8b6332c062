import { ERRORS, MeshError } from '@ge-mesh/protocol';
import type { Logger } from '@ge-mesh/telemetry';
import type { InferenceMetrics, Ingress } from '@ge-mesh/telemetry/metrics';

export interface ErrorAnswer {
  readonly status: number;
  /** The gRPC status number (Triton's mapping of the same error). */
  readonly grpcStatus: number;
  readonly code: string;
  /** Triton's error body: `{"error": "<message>"}`. */
  readonly body: { error: string };
  readonly headers: Readonly<Record<string, string>>;
}

// Absolute paths with two or more segments, as runtimes print model files.
const PATH = /(?:\/[\w.@+-]+){2,}/g;

/**
 * What a client is told about an error, on every ingress: the message of a
 * MeshError (Triton's text where Triton has one), with its HTTP and gRPC
 * status from the ERRORS table. Anything else is an internal error whose
 * detail stays in the log. Messages of 5xx errors that came from another hop
 * lose absolute paths; no hop puts host or queue names in a MeshError.
 */
export function errorAnswer(err: unknown): ErrorAnswer {
  if (!(err instanceof MeshError)) {
    return { status: 500, grpcStatus: 13, code: 'INTERNAL', body: { error: 'internal error' }, headers: {} };
  }
  const status = ERRORS[err.code].status;
  const message = status >= 500 ? err.message.replace(PATH, '<path>') : err.message;
  const headers: Record<string, string> = { ...((err as { headers?: Record<string, string> }).headers ?? {}) };
  if (err.code === 'UNAUTHENTICATED') headers['www-authenticate'] = 'Bearer realm="ge-mesh"';
  if (ERRORS[err.code].retryable && status === 503) headers['retry-after'] = '1';
  return { status, grpcStatus: err.grpcStatus, code: err.code, body: { error: message }, headers };
}

/** Where answered errors are reported: internal ones logged, every one counted per ingress. */
export interface ErrorSink {
  readonly log?: Logger;
  readonly metrics?: InferenceMetrics;
}

/** `errorAnswer`, logged and counted: what every ingress calls before encoding an error. */
export function answerError(err: unknown, ingress: Ingress, sink: ErrorSink): ErrorAnswer {
  const a = errorAnswer(err);
  if (a.code === 'INTERNAL' && !(err instanceof MeshError)) sink.log?.error({ err }, 'internal error');
  sink.metrics?.errorAnswered(a.code, ingress);
  return a;
}
