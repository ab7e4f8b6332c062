import { type DataType, MeshError, packBytesElements } from '@ge-mesh/protocol';
import { isNanToken, type NumberSource, NumberTooBig } from './lenient-json.js';
import { JSON_TYPE, MAX_JSON_NESTING_DEPTH, MSG } from './messages.js';

/**
 * JSON `data` (flat or nested, row-major) → the little-endian bytes of one
 * tensor. Values go straight from the parsed arrays into a typed array of the
 * declared datatype, with no intermediate array and no allocation per element.
 * Nesting is not checked against the shape (as in Triton); only the element
 * count is. Written by hand: it is Triton's JSON tensor layout, which no
 * library implements.
 */

// Typed arrays write in host byte order; the wire is little-endian.
if (new Uint8Array(new Uint16Array([1]).buffer)[0] !== 1) {
  throw new Error('GE Mesh needs a little-endian host to encode tensors');
}

const TWO_32 = 4294967296;

interface IntRange {
  readonly lo: number;
  readonly hi: number;
}

const INT_RANGES: Partial<Record<DataType, IntRange>> = {
  INT8: { lo: -128, hi: 127 },
  INT16: { lo: -32768, hi: 32767 },
  INT32: { lo: -2147483648, hi: 2147483647 },
  UINT8: { lo: 0, hi: 255 },
  UINT16: { lo: 0, hi: 65535 },
  UINT32: { lo: 0, hi: 4294967295 },
  // JSON numbers are doubles: beyond 2^53 they no longer hold every integer.
  INT64: { lo: -Number.MAX_SAFE_INTEGER, hi: Number.MAX_SAFE_INTEGER },
  UINT64: { lo: 0, hi: Number.MAX_SAFE_INTEGER },
};

/**
 * Converts the JSON `data` of a fixed-size datatype (not BYTES, FP16, BF16).
 * `count` is the element count of the declared shape; `maxLeaves` bounds what
 * the JSON text could possibly hold, so a lying shape cannot make us allocate;
 * `numbers` says what a non-finite float is.
 */
export function jsonToFixed(
  dt: DataType,
  data: unknown[],
  count: number,
  input: string,
  maxLeaves: number,
  numbers: NumberSource,
): Uint8Array {
  const n = count > maxLeaves ? 0 : count;
  let out: Float32Array | Float64Array | Int8Array | Int16Array | Int32Array | Uint8Array | Uint16Array | Uint32Array;
  let got: number;
  switch (dt) {
    case 'FP32':
      out = new Float32Array(n);
      got = fillFloat(data, out, 0, 0, numbers);
      break;
    case 'FP64':
      out = new Float64Array(n);
      got = fillFloat(data, out, 0, 0, numbers);
      break;
    case 'BOOL':
      out = new Uint8Array(n);
      got = fillBool(data, out, 0, 0);
      break;
    case 'INT8':
      out = new Int8Array(n);
      got = fillInt(data, out, 0, 0, dt, input);
      break;
    case 'INT16':
      out = new Int16Array(n);
      got = fillInt(data, out, 0, 0, dt, input);
      break;
    case 'INT32':
      out = new Int32Array(n);
      got = fillInt(data, out, 0, 0, dt, input);
      break;
    case 'UINT8':
      out = new Uint8Array(n);
      got = fillInt(data, out, 0, 0, dt, input);
      break;
    case 'UINT16':
      out = new Uint16Array(n);
      got = fillInt(data, out, 0, 0, dt, input);
      break;
    case 'UINT32':
      out = new Uint32Array(n);
      got = fillInt(data, out, 0, 0, dt, input);
      break;
    case 'INT64':
    case 'UINT64':
      // Two int32 halves per element (low word first): no BigInt per element.
      out = new Int32Array(n * 2);
      got = fillInt64(data, out, 0, 0, dt, input);
      break;
    default:
      throw new Error(`jsonToFixed: ${dt} has no fixed-size JSON form`);
  }
  if (got > count) throw new MeshError('DATA_SIZE_MISMATCH', MSG.jsonTooManyElements());
  if (got < count) throw new MeshError('DATA_SIZE_MISMATCH', MSG.jsonTooFewElements());
  return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
}

// Triton counts the `data` array as depth 0 and refuses an element at depth 100.
function checkDepth(node: unknown[], depth: number): void {
  if (depth + 1 >= MAX_JSON_NESTING_DEPTH && node.length > 0) {
    throw new MeshError('BAD_JSON', MSG.unableToParse('data', MSG.nestingDepth()));
  }
}

// Writes past the end of a typed array are no-ops, so these count every leaf
// and the caller compares the count; no bounds check in the loop.
// Other element types refuse a non-finite number anyway; a float would take it.
function fillFloat(
  node: unknown[],
  out: Float32Array | Float64Array,
  pos: number,
  depth: number,
  numbers: NumberSource,
): number {
  checkDepth(node, depth);
  // v - v is 0 for every finite number and NaN for ±Infinity: summed without a branch per element,
  // read once at the end.
  let infinite = 0;
  for (let i = 0, len = node.length; i < len; i++) {
    const v = node[i];
    if (typeof v === 'number') {
      infinite += v - v;
      out[pos++] = v;
    } else if (Array.isArray(v)) pos = fillFloat(v, out, pos, depth + 1, numbers);
    else if (isNanToken(v, numbers)) out[pos++] = Number.NaN;
    else throw new MeshError('BAD_JSON', MSG.unableToParse('data', JSON_TYPE.number));
  }
  if (infinite !== 0 && numbers === 'text') throw new NumberTooBig();
  return pos;
}

function fillBool(node: unknown[], out: Uint8Array, pos: number, depth: number): number {
  checkDepth(node, depth);
  for (let i = 0, len = node.length; i < len; i++) {
    const v = node[i];
    if (v === true) out[pos++] = 1;
    else if (v === false) out[pos++] = 0;
    else if (Array.isArray(v)) pos = fillBool(v, out, pos, depth + 1);
    else throw new MeshError('BAD_JSON', MSG.unableToParse('data', JSON_TYPE.bool));
  }
  return pos;
}

function fillInt(
  node: unknown[],
  out: Int8Array | Int16Array | Int32Array | Uint8Array | Uint16Array | Uint32Array,
  pos: number,
  depth: number,
  dt: DataType,
  input: string,
): number {
  checkDepth(node, depth);
  const { lo, hi } = INT_RANGES[dt] as IntRange;
  for (let i = 0, len = node.length; i < len; i++) {
    const v = node[i];
    if (typeof v === 'number' && v >= lo && v <= hi && Math.trunc(v) === v) out[pos++] = v;
    else if (Array.isArray(v)) pos = fillInt(v, out, pos, depth + 1, dt, input);
    else throw intError(v, dt, input);
  }
  return pos;
}

function fillInt64(node: unknown[], out: Int32Array, pos: number, depth: number, dt: DataType, input: string): number {
  checkDepth(node, depth);
  const { lo, hi } = INT_RANGES[dt] as IntRange;
  for (let i = 0, len = node.length; i < len; i++) {
    const v = node[i];
    if (typeof v === 'number' && v >= lo && v <= hi && Math.trunc(v) === v) {
      const high = Math.floor(v / TWO_32);
      // The low word is in [0, 2^32); the store wraps it to the same 32 bits.
      out[2 * pos] = v - high * TWO_32;
      out[2 * pos + 1] = high;
      pos++;
    } else if (Array.isArray(v)) {
      pos = fillInt64(v, out, pos, depth + 1, dt, input);
    } else {
      throw intError(v, dt, input);
    }
  }
  return pos;
}

function intError(v: unknown, dt: DataType, input: string): MeshError {
  const unsigned = dt.startsWith('U');
  if (typeof v !== 'number' || !Number.isInteger(v) || (unsigned && v < 0)) {
    return new MeshError('BAD_JSON', MSG.unableToParse('data', unsigned ? JSON_TYPE.uint : JSON_TYPE.int));
  }
  if (dt === 'INT64' || dt === 'UINT64') return new MeshError('INVALID_ARGUMENT', MSG.intInexact(v, dt, input));
  return new MeshError('INVALID_ARGUMENT', MSG.intOutOfRange(v, dt, input));
}

/**
 * Converts the JSON `data` of a BYTES tensor: each string becomes a uint32 LE
 * length and its UTF-8 bytes. The element count is checked later against the
 * model (as Triton does), where the message can name it.
 */
export function jsonToBytes(data: unknown[], numbers: NumberSource): Uint8Array {
  const strings: string[] = [];
  flattenStrings(data, 0, strings, numbers);
  return packBytesElements(strings);
}

function flattenStrings(node: unknown[], depth: number, out: string[], numbers: NumberSource): void {
  if (depth + 1 >= MAX_JSON_NESTING_DEPTH && node.length > 0) throw new MeshError('BAD_JSON', MSG.nestingDepth());
  for (let i = 0, len = node.length; i < len; i++) {
    const v = node[i];
    // A bare NaN is a number, not the string that stands for it.
    if (typeof v === 'string' && !isNanToken(v, numbers)) out.push(v);
    else if (Array.isArray(v)) flattenStrings(v, depth + 1, out, numbers);
    else throw new MeshError('BAD_JSON', MSG.jsonBytesArray(JSON_TYPE.string));
  }
}
