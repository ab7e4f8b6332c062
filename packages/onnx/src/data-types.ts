import type { DataType } from '@ge-mesh/protocol';
import { ElemType } from './types.js';

// ONNX element type → KServe v2 wire datatype. Types with no wire form
// (complex, float8, 4-bit) are absent and read as undefined.
const WIRE_BY_ELEM = new Map<number, DataType>([
  [ElemType.BOOL, 'BOOL'],
  [ElemType.UINT8, 'UINT8'],
  [ElemType.UINT16, 'UINT16'],
  [ElemType.UINT32, 'UINT32'],
  [ElemType.UINT64, 'UINT64'],
  [ElemType.INT8, 'INT8'],
  [ElemType.INT16, 'INT16'],
  [ElemType.INT32, 'INT32'],
  [ElemType.INT64, 'INT64'],
  [ElemType.FLOAT16, 'FP16'],
  [ElemType.BFLOAT16, 'BF16'],
  [ElemType.FLOAT, 'FP32'],
  [ElemType.DOUBLE, 'FP64'],
  [ElemType.STRING, 'BYTES'],
]);

const ELEM_BY_WIRE = new Map<DataType, number>([...WIRE_BY_ELEM].map(([e, w]) => [w, e]));

export function dataTypeFromElemType(elemType: number | undefined): DataType | undefined {
  return elemType === undefined ? undefined : WIRE_BY_ELEM.get(elemType);
}

export function elemTypeFromDataType(dataType: DataType): number {
  const e = ELEM_BY_WIRE.get(dataType);
  if (e === undefined) throw new Error(`no ONNX element type for datatype ${dataType}`);
  return e;
}
