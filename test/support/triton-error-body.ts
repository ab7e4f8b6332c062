import { MeshError } from '@ge-mesh/protocol';

/** Triton's error body (the gateway answers through pipeline/error-answer.ts; this is the baseline servers'): `{"error":"<message>"}`. */
export function errorBody(err: unknown): Buffer {
  const message = err instanceof Error ? err.message : String(err);
  return Buffer.from(JSON.stringify({ error: message }), 'utf8');
}

/** The HTTP status for an error: from the ERRORS table, 500 for anything else. */
export function errorStatus(err: unknown): number {
  return err instanceof MeshError ? err.status : 500;
}
