import { Packr } from 'msgpackr';
import type { DataType } from './datatypes.js';
import type { WireError } from './errors.js';

/**
 * Messages between the services. Tensors travel as raw little-endian bytes
 * (msgpack bin), never as number arrays.
 */
export const PROTOCOL_VERSION = 4;

export interface WireTensor {
  name: string;
  datatype: DataType;
  shape: number[];
  data: Uint8Array;
}

export type ParameterValue = string | number | boolean;

/** gateway → batcher, one per inference request. */
export interface InferRequestMessage {
  v: typeof PROTOCOL_VERSION;
  /** Mesh-wide unique id (the dedupe key). */
  id: string;
  /** The client's own `id`, echoed in the response when given. */
  clientId?: string;
  model: string;
  version: string;
  inputs: WireTensor[];
  /** Requested outputs; empty means all. */
  outputs: string[];
  /** Rows this request contributes to a batch (its leading dim, or 1). */
  batch: number;
  priority: number;
  /** Queue timeout in µs asked by the client (`timeout` parameter); 0 = none. */
  timeoutUs: number;
  /** Absolute deadline, ms since the epoch. */
  deadline: number;
  /** When the gateway accepted it, ms since the epoch, with a fraction (to the microsecond). */
  acceptedAt: number;
  replyTo: string;
  correlationId: string;
  parameters?: Record<string, ParameterValue>;
  /**
   * The tensors' bytes travel beside this message: the whole request, as
   * encoded, is in Redis (BatchStore.requestBodyKey) and `inputs[].data` are
   * empty here, so the broker and the batcher carry only the envelope.
   */
  stored?: true;
}

/**
 * gateway → batcher: several requests of one model, published in the same
 * turn of the gateway's event loop, in one broker message. Each request is
 * carried as the gateway encoded it, so the batcher slices it out and batches
 * it untouched. The bundle reads as a request of its own (id, replyTo,
 * correlationId): a service of another version refuses it as one, and the
 * gateway fans that answer out to the members (bundledIds).
 */
export interface RequestBundleMessage {
  v: typeof PROTOCOL_VERSION;
  /** bundleCorrelationId of the members. */
  id: string;
  correlationId: string;
  model: string;
  /** Members may ask for different versions: none is named here. */
  version: '';
  replyTo: string;
  /** Each member's InferRequestMessage, encoded. */
  requests: Uint8Array[];
}

const BUNDLE_PREFIX = 'bundle:';

/** The correlation id of a bundle: its members' ids, so an answer to the bundle reaches each without any state. */
export function bundleCorrelationId(ids: readonly string[]): string {
  return `${BUNDLE_PREFIX}${ids.join(',')}`;
}

/** The member ids of a bundle's correlation id, or undefined for a request's own. */
export function bundledIds(correlationId: string): string[] | undefined {
  return correlationId.startsWith(BUNDLE_PREFIX) ? correlationId.slice(BUNDLE_PREFIX.length).split(',') : undefined;
}

/** A message off a request queue: a bundle when it carries `requests`. */
export function isRequestBundle(msg: unknown): msg is RequestBundleMessage {
  return Array.isArray((msg as Partial<RequestBundleMessage> | null)?.requests);
}

/** One member of a batch: the request as the gateway encoded it, untouched. */
export interface BatchMember {
  id: string;
  rows: number;
  body: Uint8Array;
  /** `body` is the envelope of a stored request (InferRequestMessage.stored): the worker fetches the rest. */
  stored?: true;
}

const NO_BYTES = new Uint8Array(0);

/** What travels through the broker for a stored request (see InferRequestMessage.stored): the request without its tensor bytes. */
export function storedEnvelope(msg: InferRequestMessage): InferRequestMessage {
  return { ...msg, stored: true, inputs: msg.inputs.map((t) => ({ ...t, data: NO_BYTES })) };
}

/** batcher → worker. */
export interface BatchMessage {
  v: typeof PROTOCOL_VERSION;
  batchId: string;
  model: string;
  version: string;
  /** The static batch size the graph was compiled for. */
  tier: number;
  /** Real rows; tier − rows rows are padding. */
  rows: number;
  members: BatchMember[];
  formedAt: number;
}

/** A batch message as it comes off the broker; throws when the bytes are not one. */
export function decodeBatch(bytes: Uint8Array): BatchMessage {
  const batch = decode<BatchMessage>(bytes);
  if (!Array.isArray(batch?.members) || typeof batch.batchId !== 'string') throw new Error('not a batch');
  return batch;
}

/** The requests of a batch's members at `positions` (0-based), each decoded from its body. */
export function memberRequests(batch: BatchMessage, positions: readonly number[]): InferRequestMessage[] {
  return positions.flatMap((i) => {
    const m = batch.members[i];
    return m ? [decode<InferRequestMessage>(m.body)] : [];
  });
}

/**
 * Refusal of a message from another protocol version, or null when it is
 * ours. Services of different versions never mix silently: the receiver
 * answers (or dead-letters) the message with this error and logs it.
 * v2: responses travel grouped per batch and reply queue (an array).
 * v3: a large request's tensors may travel beside its message, in Redis.
 * v4: small requests to one model may travel several to a message (RequestBundleMessage).
 */
export function versionMismatch(v: unknown, what: string): WireError | null {
  if (v === PROTOCOL_VERSION) return null;
  return {
    code: 'PROTOCOL_MISMATCH',
    message: `a ${what} of protocol version ${String(v)} reached a service of version ${PROTOCOL_VERSION}: run one version of GE Mesh per namespace (finish the upgrade, or give the new version its own --namespace)`,
  };
}

/** Time spent per stage, as Triton's statistics count it (ns). */
export interface StageTimings {
  queueNs: number;
  computeInputNs: number;
  computeInferNs: number;
  computeOutputNs: number;
  /** Rows of the execution this request was part of (padding excluded). */
  batchRows: number;
  tier: number;
  /**
   * The execution this request was part of, and its place in it: each batch's
   * members come back as separate replies, so whoever counts executions
   * (Triton's execution_count, batch_stats) counts the one with member 0.
   */
  batchId?: string;
  member?: number;
  members?: number;
}

/** worker (or any hop that fails a request) → the request's reply route. */
export interface InferResponseMessage {
  v: typeof PROTOCOL_VERSION;
  id: string;
  correlationId: string;
  model: string;
  version: string;
  outputs?: WireTensor[];
  error?: WireError;
  timings?: StageTimings;
}

/** The one answer to a request that fails before a lane runs it (refused, expired, dead-lettered, unloaded). */
export function errorResponse(req: InferRequestMessage, error: WireError): InferResponseMessage {
  return {
    v: PROTOCOL_VERSION,
    id: req.id,
    correlationId: req.correlationId,
    model: req.model,
    version: req.version,
    error,
  };
}

/**
 * A message on a reply queue: one response (errors answered outside a
 * batch), or every response of one batch for that queue, as an array (one
 * broker message per batch and gateway instead of one per request).
 */
export function decodeResponses(bytes: Uint8Array): InferResponseMessage[] {
  const d = decode<InferResponseMessage | InferResponseMessage[]>(bytes);
  return Array.isArray(d) ? d : [d];
}

// Records off: Redis' cmsgpack and non-JS producers read these bodies too.
const packr = new Packr({ useRecords: false, moreTypes: false, int64AsType: 'number' });

/** Tensor bytes from which a message gets a buffer of its own (see encode). */
const OWN_BUFFER_BYTES = 64 * 1024;
/** Room for everything but the tensor bytes: names, shapes, ids, msgpack headers. */
const ENVELOPE_BYTES = 16 * 1024;

/**
 * `tensorBytes`: the tensor (or member body) bytes the message carries, when
 * the caller knows them. msgpackr packs into one shared buffer that it grows to
 * four times a message that does not fit, and keeps: every large message then
 * costs a fresh multi-megabyte allocation, and V8 answers that external memory
 * with a full GC every few messages (half the batcher's CPU on resnet18). A
 * large message gets a buffer of its own size instead.
 */
export function encode(msg: unknown, tensorBytes = 0): Buffer {
  if (tensorBytes < OWN_BUFFER_BYTES) return packr.pack(msg);
  return packInto(Buffer.allocUnsafeSlow(tensorBytes + ENVELOPE_BYTES), msg);
}

/** Pack one message at the start of `buffer` (msgpackr grows past it if it must). */
function packInto(buffer: Buffer, msg: unknown): Buffer {
  packr.useBuffer(buffer);
  try {
    return packr.pack(msg);
  } finally {
    // Small messages go on in a small shared buffer, not in what is left of this one.
    packr.useBuffer(Buffer.allocUnsafeSlow(8192));
  }
}

/** The buffer withEncoded packs large messages into, kept from one message to the next. */
let kept: Buffer | undefined;
/** Messages above this get a buffer of their own (encode) rather than one kept that large. */
const KEPT_BUFFER_MAX_BYTES = 32 * 1024 * 1024;

/**
 * Encode for a caller that is done with the bytes when `use` returns: a
 * publish (amqplib copies a message into its frames at once). A large message
 * is packed into one buffer kept from message to message: a fresh 600 KB
 * buffer costs 0.1–0.5 ms to allocate and touch for the first time, a copy into
 * one already mapped ~15 µs. `use` must not keep the bytes.
 */
export function withEncoded<T>(msg: unknown, tensorBytes: number, use: (bytes: Buffer) => T): T {
  const need = tensorBytes + ENVELOPE_BYTES;
  if (tensorBytes < OWN_BUFFER_BYTES || need > KEPT_BUFFER_MAX_BYTES) return use(encode(msg, tensorBytes));
  const buffer = kept && kept.byteLength >= need ? kept : Buffer.allocUnsafeSlow(need);
  kept = undefined; // taken: a withEncoded inside `use` packs into a buffer of its own
  try {
    return use(packInto(buffer, msg));
  } finally {
    kept = buffer;
  }
}

/**
 * Like encode, but the bytes own their ArrayBuffer (from offset 0), so they can
 * be transferred to another thread without detaching a buffer others share.
 */
export function encodeOwned(msg: unknown, tensorBytes = 0): Uint8Array {
  const b = encode(msg, tensorBytes);
  return tensorBytes >= OWN_BUFFER_BYTES
    ? new Uint8Array(b.buffer, b.byteOffset, b.byteLength)
    : Uint8Array.prototype.slice.call(b);
}

/** The bytes of the tensors in a list (a size hint for encode). */
export function tensorBytes(tensors: readonly { data: Uint8Array }[] | undefined): number {
  let n = 0;
  for (const t of tensors ?? []) n += t.data.byteLength;
  return n;
}

export function decode<T>(bytes: Uint8Array): T {
  return packr.unpack(bytes) as T;
}
