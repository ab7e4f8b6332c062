import type { DataType } from '@ge-mesh/protocol';
import { dataTypeFromElemType, elemTypeFromDataType } from './data-types.js';
import { ElemType, type TensorProto, type ValueInfoProto } from './types.js';

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** A dense initializer; raw_data holds the values little-endian, as ONNX requires. */
export function floatTensor(name: string, dims: readonly number[], values: ArrayLike<number>): TensorProto {
  checkCount(name, dims, values.length);
  const data = values instanceof Float32Array ? values : Float32Array.from(values);
  return { name, dims: [...dims], dataType: ElemType.FLOAT, rawData: littleEndianBytes(data, 4) };
}

export function int64Tensor(name: string, dims: readonly number[], values: ArrayLike<number>): TensorProto {
  checkCount(name, dims, values.length);
  const data = BigInt64Array.from(Array.from(values, (v) => BigInt(v)));
  return { name, dims: [...dims], dataType: ElemType.INT64, rawData: littleEndianBytes(data, 8) };
}

/** Reads an FP32 initializer's values, from raw_data or float_data. */
export function floatTensorData(t: TensorProto): Float32Array {
  if (t.dataType !== ElemType.FLOAT) throw new Error(`tensor ${t.name} is not FLOAT`);
  if (!t.rawData) return Float32Array.from(t.floatData ?? []);
  const view = new DataView(t.rawData.buffer, t.rawData.byteOffset, t.rawData.byteLength);
  const out = new Float32Array(t.rawData.byteLength / 4);
  for (let i = 0; i < out.length; i++) out[i] = view.getFloat32(i * 4, true);
  return out;
}

/**
 * A tensor-typed value info. A string dim is symbolic (`dim_param`), null
 * leaves the dim unknown.
 */
export function tensorValueInfo(
  name: string,
  dataType: DataType,
  dims: readonly (number | string | null)[],
): ValueInfoProto {
  const dim = dims.map((d) => (d === null ? {} : typeof d === 'string' ? { dimParam: d } : { dimValue: d }));
  return { name, type: { tensorType: { elemType: elemTypeFromDataType(dataType), shape: { dim } } } };
}

export function tensorDataType(t: TensorProto): DataType | undefined {
  return dataTypeFromElemType(t.dataType);
}

function checkCount(name: string, dims: readonly number[], count: number): void {
  const expected = dims.reduce((a, b) => a * b, 1);
  if (expected !== count) throw new Error(`tensor ${name}: dims [${dims}] need ${expected} values, got ${count}`);
}

function littleEndianBytes(data: Float32Array | BigInt64Array, width: 4 | 8): Uint8Array {
  const bytes = new Uint8Array(data.length * width);
  if (LITTLE_ENDIAN) {
    bytes.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    return bytes;
  }
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < data.length; i++) {
    if (data instanceof Float32Array) view.setFloat32(i * 4, data[i] as number, true);
    else view.setBigInt64(i * 8, data[i] as bigint, true);
  }
  return bytes;
}
