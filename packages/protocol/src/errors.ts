/**
 * Every error GE Mesh can answer with, in one table: a stable code, the HTTP
 * status a KServe v2 client sees, and whether retrying the same request may
 * succeed. Messages that Triton clients match on are Triton's own text.
 */
export const ERRORS = {
  // 400: the request is wrong; the message says what to fix.
  INVALID_ARGUMENT: { status: 400, retryable: false, grpc: 'INVALID_ARGUMENT' },
  BAD_JSON: { status: 400, retryable: false, grpc: 'INVALID_ARGUMENT' },
  UNKNOWN_INPUT: { status: 400, retryable: false, grpc: 'INVALID_ARGUMENT' },
  MISSING_INPUT: { status: 400, retryable: false, grpc: 'INVALID_ARGUMENT' },
  UNKNOWN_OUTPUT: { status: 400, retryable: false, grpc: 'INVALID_ARGUMENT' },
  DATATYPE_MISMATCH: { status: 400, retryable: false, grpc: 'INVALID_ARGUMENT' },
  SHAPE_MISMATCH: { status: 400, retryable: false, grpc: 'INVALID_ARGUMENT' },
  BATCH_TOO_LARGE: { status: 400, retryable: false, grpc: 'INVALID_ARGUMENT' },
  DATA_SIZE_MISMATCH: { status: 400, retryable: false, grpc: 'INVALID_ARGUMENT' },
  /** Input shapes that no gear of the model holds (gears over non-batch dims), padding included where allowed. */
  GEAR_MISMATCH: { status: 400, retryable: false, grpc: 'INVALID_ARGUMENT' },
  /** A tensor with more elements than the gateway's --max-tensor-elements. */
  TENSOR_TOO_LARGE: { status: 400, retryable: false, grpc: 'INVALID_ARGUMENT' },
  MODEL_NOT_READY: { status: 400, retryable: true, grpc: 'UNAVAILABLE' },
  // 401 / 403: authentication.
  UNAUTHENTICATED: { status: 401, retryable: false, grpc: 'UNAUTHENTICATED' },
  FORBIDDEN: { status: 403, retryable: false, grpc: 'PERMISSION_DENIED' },
  // 404 / 405: routing.
  NOT_FOUND: { status: 404, retryable: false, grpc: 'NOT_FOUND' },
  MODEL_NOT_FOUND: { status: 404, retryable: false, grpc: 'NOT_FOUND' },
  MODEL_VERSION_NOT_FOUND: { status: 404, retryable: false, grpc: 'NOT_FOUND' },
  METHOD_NOT_ALLOWED: { status: 405, retryable: false, grpc: 'UNIMPLEMENTED' },
  // 413: limits.
  PAYLOAD_TOO_LARGE: { status: 413, retryable: false, grpc: 'RESOURCE_EXHAUSTED' },
  // 415: a Content-Encoding other than gzip, deflate or identity (Triton answers 501 here).
  UNSUPPORTED_ENCODING: { status: 415, retryable: false, grpc: 'UNIMPLEMENTED' },
  // 501: a feature GE Mesh does not offer.
  UNSUPPORTED: { status: 501, retryable: false, grpc: 'UNIMPLEMENTED' },
  // 503: overload and shutdown; the same request may succeed later.
  QUEUE_FULL: { status: 503, retryable: true, grpc: 'UNAVAILABLE' },
  TIMEOUT: { status: 503, retryable: true, grpc: 'UNAVAILABLE' },
  UNAVAILABLE: { status: 503, retryable: true, grpc: 'UNAVAILABLE' },
  SERVER_STOPPING: { status: 503, retryable: true, grpc: 'UNAVAILABLE' },
  // 500: a fault inside the mesh.
  EXECUTION_FAILED: { status: 500, retryable: false, grpc: 'INTERNAL' },
  /** The batch carrying the request crashed every worker that ran it and was dead-lettered. */
  POISON_INPUT: { status: 500, retryable: false, grpc: 'INTERNAL' },
  /** A message from a service of another protocol version (a mesh half-way through an upgrade). */
  PROTOCOL_MISMATCH: { status: 500, retryable: true, grpc: 'INTERNAL' },
  INTERNAL: { status: 500, retryable: false, grpc: 'INTERNAL' },
  // 499 (nginx's "client closed request"): the caller went away; nobody reads the answer.
  CANCELLED: { status: 499, retryable: false, grpc: 'CANCELLED' },
} as const satisfies Record<string, { status: number; retryable: boolean; grpc: GrpcStatusName }>;

/**
 * gRPC status names (their numbers are fixed by the gRPC spec). Each error's
 * `grpc` is the status Triton's gRPC front end gives its core error of the same
 * kind: bad input INVALID_ARGUMENT, unknown model NOT_FOUND, overload, timeout
 * and not-ready UNAVAILABLE, unsupported features UNIMPLEMENTED.
 */
export const GRPC_STATUS = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;
export type GrpcStatusName = keyof typeof GRPC_STATUS;

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
  /** The gRPC status number of this error. */
  get grpcStatus(): number {
    return GRPC_STATUS[ERRORS[this.code].grpc];
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
