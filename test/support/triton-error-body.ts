import { MeshError } from '@ge-mesh/protocol';

/** Triton's error body, `{"error":"<message>"}`, for the baseline servers (the gateway answers through pipeline/error-answer.ts). */
export function errorBody(err: unknown): Buffer {
  const message = err instanceof Error ? err.message : String(err);
  return Buffer.from(JSON.stringify({ error: message }), 'utf8');
}

/** The HTTP status for an error: from the ERRORS table, 500 for anything else. */
export function errorStatus(err: unknown): number {
  return err instanceof MeshError ? err.status : 500;
}
