import {
  type DataType,
  isDataType,
  MeshError,
  type ParameterValue,
  packBytesElements,
  type WireTensor,
} from '@ge-mesh/protocol';
import type { ParsedInfer, ParsedOutput } from '../infer/index.js';
import { MSG, requestPrefix } from '../infer/messages.js';

/** inference.InferParameter as proto-loader hands it over (`oneofs: true`). */
export interface InferParameterMsg {
  parameter_choice?: 'bool_param' | 'int64_param' | 'string_param' | 'double_param' | 'uint64_param';
  bool_param?: boolean;
  int64_param?: number;
  string_param?: string;
  double_param?: number;
  uint64_param?: number;
}

export interface TensorContentsMsg {
  bool_contents?: boolean[];
  int_contents?: number[];
  int64_contents?: number[];
  uint_contents?: number[];
  uint64_contents?: number[];
  fp32_contents?: number[];
  fp64_contents?: number[];
  bytes_contents?: Buffer[];
}

export interface ModelInferRequestMsg {
  model_name: string;
  model_version: string;
  id: string;
  parameters: Record<string, InferParameterMsg>;
  inputs: Array<{
    name: string;
    datatype: string;
    shape: number[];
    parameters: Record<string, InferParameterMsg>;
    contents?: TensorContentsMsg | null;
  }>;
  outputs: Array<{ name: string; parameters: Record<string, InferParameterMsg> }>;
  raw_input_contents: Buffer[];
}

export interface ModelInferResponseMsg {
  model_name: string;
  model_version: string;
  id?: string;
  outputs: Array<{ name: string; datatype: string; shape: number[] }>;
  raw_output_contents: Buffer[];
}

// Triton's element-count limit (int64 max).
const MAX_ELEMENTS = 2 ** 63 - 1;

/** The value of an InferParameter, whichever member is set; undefined when none is. */
export function parameterValue(p: InferParameterMsg | undefined): ParameterValue | undefined {
  const choice = p?.parameter_choice;
  return choice === undefined ? undefined : (p?.[choice] as ParameterValue | undefined);
}

/** Triton's type check of a request parameter: `expected int64_param or uint64_param.` */
function requireChoice(key: string, p: InferParameterMsg, choices: readonly string[]): ParameterValue {
  const v = parameterValue(p);
  if (p.parameter_choice !== undefined && choices.includes(p.parameter_choice) && v !== undefined) return v;
  throw new MeshError(
    'INVALID_ARGUMENT',
    `invalid value type for '${key}' parameter, expected ${choices.join(' or ')}.`,
  );
}

// Triton's gRPC front end reads `priority` from either integer type and `timeout` from int64 only.
function priorityParameter(p: InferParameterMsg): number {
  const v = requireChoice('priority', p, ['int64_param', 'uint64_param']) as number;
  if (v < 0) throw new MeshError('INVALID_ARGUMENT', "invalid value for 'priority', expected value >= 0.");
  return v;
}

function timeoutParameter(p: InferParameterMsg): number {
  const v = requireChoice('timeout', p, ['int64_param']) as number;
  // Triton stores it as an unsigned count, so a negative one is a timeout too long to matter.
  return Math.max(v, 0);
}

function classificationParameter(p: InferParameterMsg): number {
  const v = parameterValue(p);
  if (p.parameter_choice !== 'int64_param' || typeof v !== 'number')
    throw new MeshError('INVALID_ARGUMENT', "invalid value type for 'classification' parameter, expected int64_param");
  if (v <= 0) throw new MeshError('INVALID_ARGUMENT', "invalid value for 'classification' parameter, expected >= 0");
  return v;
}

/** The sequence parameters Triton's gRPC front end reads, with the value types it takes (passed on as given). */
const SEQUENCE_PARAMETERS: Record<string, readonly NonNullable<InferParameterMsg['parameter_choice']>[]> = {
  sequence_id: ['int64_param', 'string_param'],
  sequence_start: ['bool_param'],
  sequence_end: ['bool_param'],
};

/** The `triton_` keys a gRPC request may carry (Triton's TRITON_RESERVED_REQUEST_PARAMS). */
const ALLOWED_TRITON_KEYS = ['triton_enable_empty_final_response'];

/**
 * A ModelInferRequest as the pipeline's ParsedInfer, with the checks
 * Triton's gRPC front end makes before its core: raw contents for all inputs
 * or none, never both raw and typed contents for one input, parameter types,
 * shared memory (refused here: the mesh cannot map a client's memory).
 * Typed `contents` are turned into the datatype's little-endian bytes (BYTES
 * length-prefixed); raw contents are used as they are, never copied.
 */
export function decodeInferRequest(req: ModelInferRequestMsg, model: string, maxElements: number): ParsedInfer {
  const id = req.id === '' ? undefined : req.id;
  const prefix = requestPrefix(id);
  let priority = 0;
  let timeoutUs = 0;
  const parameters: Record<string, ParameterValue> = {};
  for (const [key, p] of Object.entries(req.parameters ?? {})) {
    if (key === 'priority') priority = priorityParameter(p);
    else if (key === 'timeout') timeoutUs = timeoutParameter(p);
    else if (key === 'binary_data_output') continue;
    else if (key.startsWith('triton_')) {
      // A mesh model answers each request once, and that answer is already final: the flag asks nothing more.
      if (!ALLOWED_TRITON_KEYS.includes(key))
        throw new MeshError('INVALID_ARGUMENT', MSG.reservedGrpcParameter(ALLOWED_TRITON_KEYS));
      requireChoice(key, p, ['bool_param']);
    } else {
      const typed = SEQUENCE_PARAMETERS[key];
      if (typed) requireChoice(key, p, typed);
      const v = parameterValue(p);
      if (v === undefined) throw new MeshError('INVALID_ARGUMENT', MSG.parameterType(key));
      Object.defineProperty(parameters, key, { value: v, enumerable: true, writable: true, configurable: true });
    }
  }

  const raw = req.raw_input_contents ?? [];
  if (raw.length !== 0 && raw.length !== req.inputs.length) {
    throw new MeshError(
      'INVALID_ARGUMENT',
      `${prefix}expected ${req.inputs.length} inputs but got ${raw.length} raw input contents`,
    );
  }
  const seen = new Set<string>();
  const inputs: WireTensor[] = req.inputs.map((io, i) => {
    const { name, datatype } = io;
    if (seen.has(name)) throw new MeshError('INVALID_ARGUMENT', prefix + MSG.duplicateInput(name));
    seen.add(name);
    if (!isDataType(datatype)) throw new MeshError('DATATYPE_MISMATCH', MSG.invalidDatatype(name));
    if (io.parameters && Object.hasOwn(io.parameters, 'shared_memory_region')) {
      throw new MeshError('UNSUPPORTED', MSG.sharedMemory('input', name));
    }
    const shape = io.shape.map(Number);
    let count = 1;
    for (const d of shape) count *= d;
    if (count > maxElements && count <= MAX_ELEMENTS) {
      throw new MeshError('TENSOR_TOO_LARGE', prefix + MSG.tooManyElements(name, shape, count, maxElements));
    }
    if (raw.length > 0) {
      if (io.contents && hasContents(io.contents)) {
        throw new MeshError(
          'INVALID_ARGUMENT',
          `${prefix}contents field must not be specified when using raw_input_contents for '${name}' for model '${model}'`,
        );
      }
      return { name, datatype, shape, data: raw[i] as Buffer };
    }
    if (!io.contents) throw new MeshError('INVALID_ARGUMENT', MSG.noInputData(name, model));
    checkTypedContents(name, model, datatype, io.contents);
    return { name, datatype, shape, data: contentsToBytes(datatype, io.contents) };
  });

  const outputNames = new Set<string>();
  const outputs: ParsedOutput[] = req.outputs.map((o) => {
    if (outputNames.has(o.name)) throw new MeshError('INVALID_ARGUMENT', prefix + MSG.duplicateOutput(o.name));
    outputNames.add(o.name);
    const params = o.parameters ?? {};
    const shm = Object.hasOwn(params, 'shared_memory_region');
    if (shm && Object.hasOwn(params, 'classification')) {
      throw new MeshError('INVALID_ARGUMENT', MSG.sharedMemoryOutputClassification());
    }
    if (shm) throw new MeshError('UNSUPPORTED', MSG.sharedMemory('output', o.name));
    const k = params.classification;
    const classification = k === undefined ? 0 : classificationParameter(k);
    // gRPC outputs always travel as raw bytes.
    return { name: o.name, classification, binary: true };
  });
  return {
    ...(id !== undefined ? { id } : {}),
    inputs,
    outputs,
    priority,
    timeoutUs,
    binaryDataOutput: true,
    parameters,
  };
}

function hasContents(c: TensorContentsMsg): boolean {
  return Object.values(c).some((v) => Array.isArray(v) && v.length > 0);
}

/** The datatype each typed field carries; int_contents and uint_contents also carry the narrower types. */
const CONTENTS_TYPE: Record<keyof TensorContentsMsg, (dt: DataType) => DataType> = {
  bool_contents: () => 'BOOL',
  int_contents: (dt) => (dt === 'INT8' || dt === 'INT16' ? dt : 'INT32'),
  int64_contents: () => 'INT64',
  uint_contents: (dt) => (dt === 'UINT8' || dt === 'UINT16' ? dt : 'UINT32'),
  uint64_contents: () => 'UINT64',
  fp32_contents: () => 'FP32',
  fp64_contents: () => 'FP64',
  bytes_contents: () => 'BYTES',
};

/** Triton's checks of typed contents: one field, and the one of the input's datatype. */
function checkTypedContents(name: string, model: string, dt: DataType, c: TensorContentsMsg): void {
  let supplied = false;
  for (const [field, typeOf] of Object.entries(CONTENTS_TYPE) as [
    keyof TensorContentsMsg,
    (dt: DataType) => DataType,
  ][]) {
    if ((c[field]?.length ?? 0) === 0) continue;
    if (supplied) throw new MeshError('INVALID_ARGUMENT', MSG.contentsAlreadySupplied(name, model));
    const sent = typeOf(dt);
    if (sent !== dt) throw new MeshError('INVALID_ARGUMENT', MSG.contentsDatatype(name, model, sent, dt));
    supplied = true;
  }
}

/** Typed contents as the datatype's little-endian bytes; FP16/BF16 have no typed field (left empty). */
export function contentsToBytes(dt: DataType, c: TensorContentsMsg): Uint8Array {
  switch (dt) {
    case 'BOOL':
      return Uint8Array.from(c.bool_contents ?? [], (b) => (b ? 1 : 0));
    case 'UINT8':
      return bytesOf(Uint8Array.from(c.uint_contents ?? []));
    case 'UINT16':
      return bytesOf(Uint16Array.from(c.uint_contents ?? []));
    case 'UINT32':
      return bytesOf(Uint32Array.from(c.uint_contents ?? []));
    case 'INT8':
      return bytesOf(Int8Array.from(c.int_contents ?? []));
    case 'INT16':
      return bytesOf(Int16Array.from(c.int_contents ?? []));
    case 'INT32':
      return bytesOf(Int32Array.from(c.int_contents ?? []));
    case 'INT64':
      return bytesOf(BigInt64Array.from(c.int64_contents ?? [], (v) => BigInt(v)));
    case 'UINT64':
      return bytesOf(BigUint64Array.from(c.uint64_contents ?? [], (v) => BigInt(v)));
    case 'FP32':
      return bytesOf(Float32Array.from(c.fp32_contents ?? []));
    case 'FP64':
      return bytesOf(Float64Array.from(c.fp64_contents ?? []));
    case 'BYTES':
      return packBytesElements(c.bytes_contents ?? []);
    case 'FP16':
    case 'BF16':
      return new Uint8Array(0);
  }
}

// Typed arrays are host-endian; every supported host is little-endian, as the mesh's tensors are.
function bytesOf(v: ArrayBufferView): Uint8Array {
  return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
}

/** The worker's (selected, classified) outputs as a ModelInferResponse: Triton always answers in raw contents. */
export function encodeInferResponse(
  model: string,
  version: string,
  id: string | undefined,
  outputs: readonly WireTensor[],
): ModelInferResponseMsg {
  return {
    model_name: model,
    model_version: version,
    ...(id !== undefined ? { id } : {}),
    outputs: outputs.map((t) => ({ name: t.name, datatype: t.datatype, shape: [...t.shape] })),
    raw_output_contents: outputs.map((t) => Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength)),
  };
}
