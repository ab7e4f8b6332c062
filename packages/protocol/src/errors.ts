/**
 * Every error GE Mesh can answer with, in one table: a stable code, the HTTP
 * status a KServe v2 client sees, and whether retrying the same request may
 * succeed. Messages that Triton clients match on are Triton's own text.
 */
export const ERRORS = {
  // 400: the request is wrong; the message says what to fix.
  INVALID_ARGUMENT: { status: 400, retryable: false },
  BAD_JSON: { status: 400, retryable: false },
  UNKNOWN_INPUT: { status: 400, retryable: false },
  MISSING_INPUT: { status: 400, retryable: false },
  UNKNOWN_OUTPUT: { status: 400, retryable: false },
  DATATYPE_MISMATCH: { status: 400, retryable: false },
  SHAPE_MISMATCH: { status: 400, retryable: false },
  BATCH_TOO_LARGE: { status: 400, retryable: false },
  DATA_SIZE_MISMATCH: { status: 400, retryable: false },
  /** A tensor with more elements than the gateway's --max-tensor-elements. */
  TENSOR_TOO_LARGE: { status: 400, retryable: false },
  MODEL_NOT_READY: { status: 400, retryable: true },
  // 401 / 403: authentication.
  UNAUTHENTICATED: { status: 401, retryable: false },
  FORBIDDEN: { status: 403, retryable: false },
  // 404 / 405: routing.
  NOT_FOUND: { status: 404, retryable: false },
  MODEL_NOT_FOUND: { status: 404, retryable: false },
  MODEL_VERSION_NOT_FOUND: { status: 404, retryable: false },
  METHOD_NOT_ALLOWED: { status: 405, retryable: false },
  // 413: limits.
  PAYLOAD_TOO_LARGE: { status: 413, retryable: false },
  // 415: a Content-Encoding other than gzip, deflate or identity (Triton answers 501 here).
  UNSUPPORTED_ENCODING: { status: 415, retryable: false },
  // 501: a feature GE Mesh does not offer.
  UNSUPPORTED: { status: 501, retryable: false },
  // 503: overload and shutdown; the same request may succeed later.
  QUEUE_FULL: { status: 503, retryable: true },
  TIMEOUT: { status: 503, retryable: true },
  UNAVAILABLE: { status: 503, retryable: true },
  SERVER_STOPPING: { status: 503, retryable: true },
  // 500: a fault inside the mesh.
  EXECUTION_FAILED: { status: 500, retryable: false },
  /** The batch carrying the request crashed every worker that ran it and was dead-lettered. */
  POISON_INPUT: { status: 500, retryable: false },
  /** A message from a service of another protocol version (a mesh half-way through an upgrade). */
  PROTOCOL_MISMATCH: { status: 500, retryable: true },
  INTERNAL: { status: 500, retryable: false },
} as const satisfies Record<string, { status: number; retryable: boolean }>;

export type ErrorCode = keyof typeof ERRORS;

/** Triton's exact texts for the cases clients and tools match on. */
export const TRITON_MESSAGES = {
  queueFull: 'Exceeds maximum queue size',
  timeout: 'Request timeout expired',
  stopping: 'Server is stopping',
  notFound: 'Not Found',
  methodNotAllowed: 'Method Not Allowed',
  unknownModel: (model: string) => `Request for unknown model: '${model}' is not found`,
  unknownVersion: (model: string, version: string) =>
    `Request for unknown model: '${model}' version ${version} is not found`,
  batchTooLarge: (model: string, max: number) => `inference request batch-size must be <= ${max} for '${model}'`,
} as const;

export function isErrorCode(s: unknown): s is ErrorCode {
  return typeof s === 'string' && Object.hasOwn(ERRORS, s);
}

/** An error that crosses service boundaries as `{ code, message }`. */
export class MeshError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string) {
    super(message);
    this.name = 'MeshError';
    this.code = code;
  }
  get status(): number {
    return ERRORS[this.code].status;
  }
  get retryable(): boolean {
    return ERRORS[this.code].retryable;
  }
  toWire(): WireError {
    return { code: this.code, message: this.message };
  }
  static fromWire(e: WireError): MeshError {
    return new MeshError(isErrorCode(e.code) ? e.code : 'INTERNAL', e.message);
  }
}

export interface WireError {
  code: string;
  message: string;
}
