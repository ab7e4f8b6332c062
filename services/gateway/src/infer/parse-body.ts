import { type DataType, isDataType, MeshError, type ParameterValue, type WireTensor } from '@ge-mesh/protocol';
import { badJson, overflowOffset } from './json-syntax-error.js';
import { jsonToBytes, jsonToFixed } from './json-to-tensor.js';
import { isNanToken, type LenientJson, type NumberSource, NumberTooBig, parseLenientJson } from './lenient-json.js';
import { JSON_TYPE, MSG, requestPrefix } from './messages.js';
import type { ParsedInfer, ParsedOutput } from './types.js';

type JsonObject = Record<string, unknown>;

const EMPTY = new Uint8Array(0);
// Triton's element-count limit (int64 max); larger shapes are refused outright.
const MAX_ELEMENTS = 2 ** 63 - 1;

/**
 * Reads a KServe v2 inference body: the JSON request and, with the binary
 * tensor extension, the blobs that follow it.
 *
 * - `headerLength` is the `Inference-Header-Content-Length` header: absent →
 *   the whole body is JSON; 0 → the whole body is the raw bytes of the model's
 *   single input (see `ParsedInfer.raw`); N → the first N bytes are JSON and the
 *   rest are the blobs of the inputs that carry `parameters.binary_data_size`,
 *   in input order.
 * - `model` only names the model in the blob-size messages.
 *
 * Checks are those Triton's HTTP front end makes, in its order; everything that
 * needs the model config is left to `validateInfer`. Throws MeshError.
 * INT64/UINT64 values in JSON must lie within ±(2^53-1): JSON numbers are read
 * as doubles, so larger ones are refused rather than altered.
 */
export function parseInferBody(
  body: Uint8Array,
  headerLength?: number,
  model?: string,
  options: ParseOptions = {},
): ParsedInfer {
  if (headerLength !== undefined) {
    if (!Number.isInteger(headerLength) || headerLength < 0 || headerLength > body.length) {
      throw new MeshError('INVALID_ARGUMENT', MSG.headerLengthRange(body.length, headerLength));
    }
    if (headerLength === 0) {
      return { inputs: [], outputs: [], priority: 0, timeoutUs: 0, binaryDataOutput: true, parameters: {}, raw: body };
    }
  }
  const jsonLength = headerLength ?? body.length;
  const text = Buffer.from(body.buffer, body.byteOffset, jsonLength).toString('utf8');
  let doc: LenientJson;
  try {
    doc = parseLenientJson(text);
  } catch (err) {
    if (err instanceof MeshError) throw err;
    throw badJson(body.subarray(0, jsonLength), err);
  }
  if (!isObject(doc.value)) throw new MeshError('BAD_JSON', MSG.badJson('the request is not a JSON object'));

  try {
    return readRequest(doc.value, {
      body,
      offset: jsonLength,
      binary: headerLength !== undefined,
      bytesData: false,
      numbers: doc.numbers,
      prefix: '',
      model,
      // Each JSON element takes at least one character.
      maxLeaves: text.length,
      maxElements: options.maxElements ?? MAX_ELEMENTS,
    });
  } catch (err) {
    // JSON.parse read a literal too large for a double as ±Infinity; Triton's parser refuses the
    // request there, before any field is read. Looked for only once a field was refused.
    if (doc.numbers === 'text' && err instanceof MeshError) {
      const at = overflowOffset(body.subarray(0, jsonLength));
      if (at >= 0) throw new NumberTooBig(at);
    }
    throw err;
  }
}

export interface ParseOptions {
  /**
   * Most elements one tensor may declare (the gateway's --max-tensor-elements);
   * a larger shape is refused with TENSOR_TOO_LARGE before any data is read.
   */
  readonly maxElements?: number;
}

/**
 * The same request as an already-decoded document (the AMQP ingress's msgpack
 * map): the fields and checks of `parseInferBody`, except that an input's
 * `data` may be raw bytes (a Uint8Array of the datatype's little-endian
 * elements, BYTES length-prefixed), which is then used as is. `size` is the
 * encoded message's length, bounding what arrays it can hold.
 */
export function parseInferObject(doc: unknown, size: number, model?: string, options: ParseOptions = {}): ParsedInfer {
  if (!isObject(doc)) throw new MeshError('INVALID_ARGUMENT', MSG.notAMap());
  return readRequest(doc, {
    body: EMPTY,
    offset: 0,
    binary: false,
    bytesData: true,
    numbers: 'decoded',
    prefix: '',
    model,
    maxLeaves: size,
    maxElements: options.maxElements ?? MAX_ELEMENTS,
  });
}

function readRequest(doc: JsonObject, cur: BlobCursor): ParsedInfer {
  const id = readId(doc);
  const params = readParameters(doc, cur.numbers);
  cur.prefix = requestPrefix(id);
  const inputs = readInputs(doc, cur);
  const outputs = readOutputs(doc, cur.prefix);
  if (cur.bytesData) {
    // Over AMQP every output travels as bytes; there is no JSON form to choose.
    const binaryOutputs = outputs.map((o) => ({ ...o, binary: true }));
    return { ...(id !== undefined ? { id } : {}), inputs, outputs: binaryOutputs, ...params, binaryDataOutput: true };
  }
  return { ...(id !== undefined ? { id } : {}), inputs, outputs, ...params };
}

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

// rapidjson's IsUint64: a non-negative integer below 2^64.
function isUint(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v < 2 ** 64;
}

function has(obj: JsonObject | undefined, key: string): boolean {
  return obj !== undefined && Object.hasOwn(obj, key);
}

function bad(field: string, detail: string): MeshError {
  return new MeshError('BAD_JSON', MSG.unableToParse(field, detail));
}

function readId(doc: JsonObject): string | undefined {
  if (!has(doc, 'id')) return undefined;
  const id = doc.id;
  if (typeof id !== 'string') throw bad('id', JSON_TYPE.string);
  // Triton treats an empty id as none: not echoed, not in messages.
  return id === '' ? undefined : id;
}

type RequestParams = Pick<ParsedInfer, 'priority' | 'timeoutUs' | 'binaryDataOutput' | 'parameters'>;

function readParameters(doc: JsonObject, numbers: NumberSource): RequestParams {
  const parameters: Record<string, ParameterValue> = {};
  const out: { priority: number; timeoutUs: number; binaryDataOutput?: boolean } = { priority: 0, timeoutUs: 0 };
  if (!has(doc, 'parameters')) return { ...out, parameters };
  const p = doc.parameters;
  if (!isObject(p)) throw new MeshError('BAD_JSON', MSG.badParams(JSON_TYPE.members));
  for (const [key, v] of Object.entries(p)) {
    switch (key) {
      case 'sequence_id':
        if (!isUint(v) && typeof v !== 'string') throw bad(key, JSON_TYPE.string);
        setOwn(parameters, key, v);
        break;
      case 'sequence_start':
      case 'sequence_end':
        if (typeof v !== 'boolean') throw bad(key, JSON_TYPE.bool);
        setOwn(parameters, key, v);
        break;
      case 'priority':
        if (!isUint(v)) throw bad(key, JSON_TYPE.uint);
        out.priority = v;
        break;
      case 'timeout':
        if (!isUint(v)) throw bad(key, JSON_TYPE.uint);
        out.timeoutUs = v;
        break;
      case 'binary_data_output':
        if (typeof v !== 'boolean') throw bad(key, JSON_TYPE.bool);
        out.binaryDataOutput = v;
        break;
      default:
        if (key.startsWith('triton_')) throw new MeshError('INVALID_ARGUMENT', MSG.reservedParameter());
        if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean') {
          throw new MeshError('INVALID_ARGUMENT', MSG.parameterType(key));
        }
        // A double parameter would take a literal too large for one as Infinity.
        if (typeof v === 'number' && v - v !== 0 && numbers === 'text') throw new NumberTooBig();
        setOwn(parameters, key, isNanToken(v, numbers) ? Number.NaN : v);
    }
  }
  return { ...out, parameters };
}

// A key such as "__proto__" must stay data, not reach the prototype.
function setOwn(obj: Record<string, ParameterValue>, key: string, value: ParameterValue): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

interface BlobCursor {
  readonly body: Uint8Array;
  /** Where the next blob starts. */
  offset: number;
  /** Whether the body has a binary part (a header length was given). */
  readonly binary: boolean;
  /** Whether `data` may itself be bytes (decoded msgpack). */
  readonly bytesData: boolean;
  /** What the document's non-finite numbers are. */
  readonly numbers: NumberSource;
  prefix: string;
  readonly model: string | undefined;
  readonly maxLeaves: number;
  readonly maxElements: number;
}

function readInputs(doc: JsonObject, cur: BlobCursor): WireTensor[] {
  if (!has(doc, 'inputs')) throw bad('inputs', JSON_TYPE.missing('inputs'));
  const list = doc.inputs;
  if (!Array.isArray(list)) throw bad('inputs', JSON_TYPE.array);
  const inputs: WireTensor[] = [];
  const seen = new Set<string>();
  for (const item of list) {
    if (!isObject(item)) throw bad('inputs', JSON_TYPE.object);
    inputs.push(readInput(item, cur, seen));
  }
  if (cur.binary && cur.offset !== cur.body.length) {
    throw new MeshError('DATA_SIZE_MISMATCH', MSG.blobExtra(cur.model));
  }
  return inputs;
}

function readInput(item: JsonObject, cur: BlobCursor, seen: Set<string>): WireTensor {
  let params: JsonObject | undefined;
  if (has(item, 'parameters')) {
    if (!isObject(item.parameters)) throw bad('parameters', JSON_TYPE.object);
    params = item.parameters;
  }
  const set: string[] = [];
  if (has(item, 'data')) set.push("'data'");
  if (has(params, 'binary_data_size')) set.push("'binary_data_size'");
  if (has(params, 'shared_memory_region')) set.push("'shared_memory_region'");
  if (set.length !== 1) throw new MeshError('INVALID_ARGUMENT', MSG.inputContent(set));

  const name = readString(item, 'name');
  const datatype = readString(item, 'datatype');
  const shape = readShape(item);
  if (seen.has(name)) throw new MeshError('INVALID_ARGUMENT', cur.prefix + MSG.duplicateInput(name));
  seen.add(name);
  if (!isDataType(datatype)) throw new MeshError('DATATYPE_MISMATCH', MSG.invalidDatatype(name));
  if (params !== undefined && has(params, 'shared_memory_region')) {
    throw new MeshError('UNSUPPORTED', MSG.sharedMemory('input', name));
  }
  let count = 1;
  for (const d of shape) count *= d;
  if (count > cur.maxElements && count <= MAX_ELEMENTS) {
    throw new MeshError('TENSOR_TOO_LARGE', cur.prefix + MSG.tooManyElements(name, shape, count, cur.maxElements));
  }
  if (params !== undefined && has(params, 'binary_data_size')) {
    return { name, datatype, shape, data: readBlob(name, params.binary_data_size, cur) };
  }
  if (cur.bytesData && item.data instanceof Uint8Array) return { name, datatype, shape, data: item.data };
  return { name, datatype, shape, data: readJsonData(name, datatype, shape, item.data, cur) };
}

function readString(obj: JsonObject, key: string): string {
  if (!has(obj, key)) throw bad(key, JSON_TYPE.missing(key));
  const v = obj[key];
  if (typeof v !== 'string') throw bad(key, JSON_TYPE.string);
  return v;
}

function readShape(item: JsonObject): number[] {
  if (!has(item, 'shape')) throw bad('shape', JSON_TYPE.missing('shape'));
  const shape = item.shape;
  if (!Array.isArray(shape)) throw bad('shape', JSON_TYPE.array);
  for (const d of shape) {
    if (!isUint(d)) {
      // A -1 (or any negative dim) is refused here, as Triton's HTTP front end does.
      const negative = typeof d === 'number' && Number.isInteger(d) && d < 0;
      throw new MeshError(negative ? 'SHAPE_MISMATCH' : 'BAD_JSON', MSG.unableToParse('shape', JSON_TYPE.uint));
    }
  }
  return shape as number[];
}

function readBlob(name: string, size: unknown, cur: BlobCursor): Uint8Array {
  if (!isUint(size)) throw bad('binary_data_size', JSON_TYPE.uint);
  if (size === 0) return EMPTY;
  if (!cur.binary) throw new MeshError('INVALID_ARGUMENT', MSG.binaryNeedsHeader());
  const available = cur.body.length - cur.offset;
  if (size > available) {
    throw new MeshError('DATA_SIZE_MISMATCH', MSG.blobShort(name, size - available, cur.model));
  }
  // A view into the body: binary tensors are never copied here.
  const data = cur.body.subarray(cur.offset, cur.offset + size);
  cur.offset += size;
  return data;
}

function readJsonData(name: string, dt: DataType, shape: number[], data: unknown, cur: BlobCursor): Uint8Array {
  let count = 1;
  for (const d of shape) count *= d;
  if (count > MAX_ELEMENTS) throw new MeshError('INVALID_ARGUMENT', MSG.shapeTooLarge(name, shape));
  // Triton reads no data at all for an empty tensor.
  if (count === 0) return EMPTY;
  if (!Array.isArray(data)) throw bad('data', JSON_TYPE.array);
  if (dt === 'FP16' || dt === 'BF16') throw new MeshError('INVALID_ARGUMENT', MSG.jsonHalf(dt, name));
  if (dt === 'BYTES') return jsonToBytes(data, cur.numbers);
  return jsonToFixed(dt, data, count, name, cur.maxLeaves, cur.numbers);
}

function readOutputs(doc: JsonObject, prefix: string): ParsedOutput[] {
  if (!has(doc, 'outputs')) return [];
  const list = doc.outputs;
  if (!Array.isArray(list)) throw bad('outputs', JSON_TYPE.array);
  const outputs: ParsedOutput[] = [];
  const seen = new Set<string>();
  for (const item of list) {
    if (!isObject(item)) throw bad('outputs', JSON_TYPE.object);
    let params: JsonObject | undefined;
    if (has(item, 'parameters')) {
      if (!isObject(item.parameters)) throw bad('parameters', JSON_TYPE.object);
      params = item.parameters;
    }
    const shm = has(params, 'shared_memory_region');
    if (shm && has(params, 'classification')) {
      throw new MeshError('INVALID_ARGUMENT', MSG.sharedMemoryOutputClassification());
    }
    if (shm && has(params, 'binary_data')) {
      if (typeof params?.binary_data !== 'boolean') {
        throw new MeshError('BAD_JSON', MSG.unableToSet('binary_data', JSON_TYPE.bool));
      }
      if (params.binary_data) throw new MeshError('INVALID_ARGUMENT', MSG.sharedMemoryOutputBinary());
    }
    const name = readString(item, 'name');
    if (seen.has(name)) throw new MeshError('INVALID_ARGUMENT', prefix + MSG.duplicateOutput(name));
    seen.add(name);
    let classification = 0;
    if (params !== undefined && has(params, 'classification')) {
      const k = params.classification;
      if (!isUint(k)) throw new MeshError('BAD_JSON', MSG.unableToSet('classification', JSON_TYPE.uint));
      classification = k;
    }
    if (shm) throw new MeshError('UNSUPPORTED', MSG.sharedMemory('output', name));
    let binary: boolean | undefined;
    if (params !== undefined && has(params, 'binary_data')) {
      const b = params.binary_data;
      if (typeof b !== 'boolean') throw bad('binary_data', JSON_TYPE.bool);
      binary = b;
    }
    outputs.push({ name, classification, ...(binary !== undefined ? { binary } : {}) });
  }
  return outputs;
}
