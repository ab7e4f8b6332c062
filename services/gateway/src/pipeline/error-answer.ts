import { ERRORS, MeshError } from '@ge-mesh/protocol';

export interface ErrorAnswer {
  readonly status: number;
  readonly code: string;
  /** Triton's error body: `{"error": "<message>"}`. */
  readonly body: { error: string };
  readonly headers: Readonly<Record<string, string>>;
}

// Absolute paths with two or more segments, as runtimes print model files.
const PATH = /(?:\/[\w.@+-]+){2,}/g;

/**
 * What a client is told about an error, on HTTP and AMQP alike: the
 * message of a MeshError (Triton's text where Triton has one), with its
 * status from the ERRORS table. Anything else is an internal error whose
 * detail stays in the log. Messages of 5xx errors that came from another hop
 * lose absolute paths; no hop puts host or queue names in a MeshError.
 */
export function errorAnswer(err: unknown): ErrorAnswer {
  if (!(err instanceof MeshError)) {
    return { status: 500, code: 'INTERNAL', body: { error: 'internal error' }, headers: {} };
  }
  const status = ERRORS[err.code].status;
  const message = status >= 500 ? err.message.replace(PATH, '<path>') : err.message;
  const headers: Record<string, string> = { ...((err as { headers?: Record<string, string> }).headers ?? {}) };
  if (err.code === 'UNAUTHENTICATED') headers['www-authenticate'] = 'Bearer realm="ge-mesh"';
  if (ERRORS[err.code].retryable && status === 503) headers['retry-after'] = '1';
  return { status, code: err.code, body: { error: message }, headers };
}
