import {
  type DataType,
  decodeBytesElements,
  elementSize,
  type IngressOutput,
  type IngressTensor,
  packBytesElements,
  splitBytesElements,
} from '@ge-mesh/protocol';

type Numeric =
  | Float32Array
  | Float64Array
  | Int8Array
  | Int16Array
  | Int32Array
  | BigInt64Array
  | Uint8Array
  | Uint16Array
  | Uint32Array
  | BigUint64Array;

/** Values a tensor can be built from: a typed array of the datatype, strings for BYTES, booleans for BOOL. */
export type TensorValues = Numeric | readonly string[] | readonly Uint8Array[] | readonly boolean[];

/**
 * Builds an input tensor. Typed arrays are sent as their bytes (FP16/BF16:
 * pass a Uint16Array of the raw half-precision bits); BYTES takes strings or
 * byte arrays and gets its length prefixes here; BOOL takes booleans or a
 * Uint8Array of 0/1.
 */
export function tensor(name: string, datatype: DataType, shape: number[], values: TensorValues): IngressTensor {
  return { name, datatype, shape, data: toBytes(datatype, values) };
}

function toBytes(datatype: DataType, values: TensorValues): Uint8Array {
  if (datatype === 'BYTES') {
    return packBytesElements(values as readonly (string | Uint8Array)[]);
  }
  if (Array.isArray(values)) {
    if (datatype !== 'BOOL') throw new TypeError(`${datatype} values must be a typed array`);
    return Uint8Array.from(values as boolean[], (b) => (b ? 1 : 0));
  }
  const v = values as Numeric;
  if (v.BYTES_PER_ELEMENT !== elementSize(datatype)) {
    throw new TypeError(`${datatype} takes ${elementSize(datatype)}-byte elements, got a ${v.constructor.name}`);
  }
  return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
}

/**
 * An output's values as a typed array of its datatype (BOOL and UINT8 as
 * Uint8Array, FP16/BF16 as the raw Uint16Array bits). Copies once when the
 * bytes are not aligned for the type.
 */
export function valuesOf(output: IngressOutput): Numeric {
  const d = output.data;
  switch (output.datatype) {
    case 'FP32':
      return view(Float32Array, d);
    case 'FP64':
      return view(Float64Array, d);
    case 'INT8':
      return view(Int8Array, d);
    case 'INT16':
      return view(Int16Array, d);
    case 'INT32':
      return view(Int32Array, d);
    case 'INT64':
      return view(BigInt64Array, d);
    case 'UINT16':
    case 'FP16':
    case 'BF16':
      return view(Uint16Array, d);
    case 'UINT32':
      return view(Uint32Array, d);
    case 'UINT64':
      return view(BigUint64Array, d);
    case 'BOOL':
    case 'UINT8':
      return d;
    case 'BYTES':
      throw new TypeError('BYTES outputs are read with stringsOf or bytesOf');
  }
}

/** The elements of a BYTES output. */
export function bytesOf(output: IngressOutput): Uint8Array[] {
  return splitBytesElements(output.data);
}

/** The elements of a BYTES output, read as UTF-8. */
export function stringsOf(output: IngressOutput): string[] {
  return decodeBytesElements(output.data);
}

type Ctor<T> = { new (b: ArrayBufferLike, o: number, n: number): T; readonly BYTES_PER_ELEMENT: number };

function view<T>(C: Ctor<T>, d: Uint8Array): T {
  const n = Math.floor(d.byteLength / C.BYTES_PER_ELEMENT);
  if (d.byteOffset % C.BYTES_PER_ELEMENT === 0) return new C(d.buffer, d.byteOffset, n);
  const copy = new Uint8Array(n * C.BYTES_PER_ELEMENT);
  copy.set(d.subarray(0, copy.length));
  return new C(copy.buffer, 0, n);
}
