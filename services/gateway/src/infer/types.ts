import type { ParameterValue, WireTensor } from '@ge-mesh/protocol';

/** One output the client listed in `outputs[]`, as written in the request. */
export interface ParsedOutput {
  readonly name: string;
  /** `parameters.binary_data`; undefined when the client did not say. */
  readonly binary?: boolean;
  /** `parameters.classification`: top-K classes instead of the tensor; 0 = off. */
  readonly classification: number;
}

/**
 * A KServe v2 inference request after the body was read, before it was
 * checked against a model. Tensor data is already little-endian bytes of the
 * declared datatype (BYTES: uint32 LE length + bytes per element).
 */
export interface ParsedInfer {
  /** The client's `id`; absent when not given or empty. */
  readonly id?: string;
  /** Inputs in request order; `data` of a binary input is a view into the body. */
  readonly inputs: readonly WireTensor[];
  /** Outputs the client listed, in request order; empty means all. */
  readonly outputs: readonly ParsedOutput[];
  /** The `priority` parameter as sent (uint; 0 = the model's default level). */
  readonly priority: number;
  /** The `timeout` parameter as sent, µs; 0 = none. */
  readonly timeoutUs: number;
  /** The `binary_data_output` parameter; undefined when not sent. */
  readonly binaryDataOutput?: boolean;
  /** Other request parameters (reserved ones removed; `sequence_*` kept). */
  readonly parameters: Readonly<Record<string, ParameterValue>>;
  /**
   * Set for a raw-binary request (`Inference-Header-Content-Length: 0`): the
   * whole body is the bytes of the model's single input.
   */
  readonly raw?: Uint8Array;
}

/** Top-K classification asked for an output. */
export interface ClassificationRequest {
  /** K. */
  readonly count: number;
  /** True when the output's first dim is the batch dim (the model has `max_batch_size > 0`). */
  readonly batched: boolean;
}

/** An output to return, with how to return it. */
export interface RequestedOutput {
  readonly name: string;
  /** Binary tensor extension (true) or JSON `data` (false). */
  readonly binary: boolean;
  readonly classification?: ClassificationRequest;
}

/** A request that passed every check against its model's config. */
export interface ValidatedInfer {
  /** Inputs in request order; shapes include the batch dim when the model batches. */
  readonly inputs: WireTensor[];
  /**
   * The outputs to return, resolved: what the client listed, or every output
   * of the model (config order) when it listed none.
   */
  readonly outputs: RequestedOutput[];
  /** True when the client listed no outputs (all are returned). */
  readonly allOutputs: boolean;
  /** The request-level `binary_data_output` (true for raw-binary requests). */
  readonly binaryDataOutput: boolean;
  /** Rows: the leading dim of every input, or 1 when `max_batch_size` is 0. */
  readonly batch: number;
  readonly clientId?: string;
  /** Effective priority level, mapped as Triton does (0 when the model has no levels). */
  readonly priority: number;
  /** Queue timeout asked by the client, µs; 0 = none. */
  readonly timeoutUs: number;
  readonly parameters: Record<string, ParameterValue>;
}

/** What the gateway hands to `encodeInferResponse`. */
export interface InferResult {
  readonly model: string;
  readonly version: string;
  readonly id?: string;
  readonly outputs: readonly WireTensor[];
  /** Response-level parameters, if any. */
  readonly parameters?: Readonly<Record<string, ParameterValue>>;
  /** Class labels per output name (from `label_filename`), for classification. */
  readonly labels?: ReadonlyMap<string, readonly string[]>;
}

export interface EncodedResponse {
  readonly body: Buffer;
  /** `application/json`, or `application/octet-stream` when binary blobs follow the JSON. */
  readonly contentType: string;
  /** Value of `Inference-Header-Content-Length`; set only with binary blobs. */
  readonly headerLength?: number;
}
