import { Packr } from 'msgpackr';
import type { DataType } from './datatypes.js';
import type { ParameterValue } from './messages.js';

/**
 * GE Mesh's public AMQP ingress: the names, and the msgpack messages producers
 * send and receive. This is a public contract (documented in the README under
 * "HTTP and AMQP API"); the gateway implements it, @ge-mesh/client uses it.
 *
 *   producer ──publish──► exchange `<ns>.infer` (fanout; routing key: the model name, informative)
 *                            └─► queue `<ns>.infer.requests` (quorum, durable) ──► gateway
 *   gateway ──reply──► the request's `reply_to` (a queue name, or RabbitMQ's
 *                      direct reply-to `amq.rabbitmq.reply-to`), with its `correlation_id`
 *
 * The request body holds the same fields as a KServe v2 REST request, with the
 * model (and version) in the body instead of the URL and tensors as raw bytes.
 */
export const INGRESS_PROTOCOL = 1;

/** RabbitMQ's pseudo-queue for replies without a reply queue. */
export const DIRECT_REPLY_TO = 'amq.rabbitmq.reply-to';

/** Content type of requests and replies. */
export const MSGPACK_CONTENT_TYPE = 'application/msgpack';

/** AMQP message header carrying the API key, as `Bearer <key>` (the HTTP Authorization value). */
export const AUTHORIZATION_HEADER = 'authorization';

export interface IngressNames {
  /** Where producers publish. */
  readonly exchange: string;
  /** The queue the gateways consume. Producers may also publish straight to it. */
  readonly queue: string;
}

export function ingressNames(namespace: string): IngressNames {
  return { exchange: `${namespace}.infer`, queue: `${namespace}.infer.requests` };
}

/** One input tensor. */
export interface IngressTensor {
  name: string;
  datatype: DataType;
  shape: number[];
  /**
   * Raw little-endian bytes, row-major (msgpack bin). BYTES: each element is a
   * uint32 little-endian length followed by its bytes. BOOL: one byte, 0 or 1.
   */
  data: Uint8Array;
  parameters?: Record<string, ParameterValue>;
}

/** An output to return; without `outputs`, every output is returned. */
export interface IngressOutputRequest {
  name: string;
  /** `classification: K` returns the top K classes as BYTES "value:index[:label]". */
  parameters?: { classification?: number };
}

/** A request (msgpack map). */
export interface IngressRequest {
  model: string;
  /** A version number as a string; absent = the latest ready version. */
  version?: string;
  /** Echoed in the reply. */
  id?: string;
  /** As in REST: `priority`, `timeout` (µs), `sequence_*`, and the model's own. */
  parameters?: Record<string, ParameterValue>;
  inputs: IngressTensor[];
  outputs?: IngressOutputRequest[];
}

export interface IngressOutput {
  name: string;
  datatype: DataType;
  shape: number[];
  data: Uint8Array;
}

/** A successful reply (msgpack map). */
export interface IngressReplyOk {
  model_name: string;
  model_version: string;
  id?: string;
  outputs: IngressOutput[];
}

/** A failed reply: the REST error body plus its stable code and HTTP status. */
export interface IngressReplyError {
  error: string;
  code: string;
  status: number;
  id?: string;
}

export type IngressReply = IngressReplyOk | IngressReplyError;

export function isErrorReply(r: IngressReply): r is IngressReplyError {
  return typeof (r as IngressReplyError).error === 'string';
}

// Plain maps (no msgpackr records), bin for bytes, int64 as numbers: readable from any language.
const packr = new Packr({ useRecords: false, moreTypes: false, int64AsType: 'number', mapsAsObjects: true });

export function encodeMessage(msg: IngressRequest | IngressReply): Buffer {
  return packr.pack(msg);
}

/** Decodes msgpack; the caller checks the shape (bodies come from outside). */
export function decodeMessage(bytes: Uint8Array): unknown {
  return packr.unpack(bytes);
}
