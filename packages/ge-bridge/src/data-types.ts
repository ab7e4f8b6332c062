import type { DataType } from '@ge-mesh/protocol';

/** Wire datatype → ge::DataType value (the bridge's gemesh_dtype). */
const GE_DTYPE: Partial<Record<DataType, number>> = {
  FP32: 0,
  FP16: 1,
  INT8: 2,
  INT32: 3,
  UINT8: 4,
  INT16: 6,
  UINT16: 7,
  UINT32: 8,
  INT64: 9,
  UINT64: 10,
  FP64: 11,
  BOOL: 12,
  BF16: 27,
};

const BY_GE = new Map<number, DataType>(Object.entries(GE_DTYPE).map(([dt, ge]) => [ge as number, dt as DataType]));

export function geDtypeOf(dt: DataType): number {
  const v = GE_DTYPE[dt];
  if (v === undefined) throw new TypeError(`datatype ${dt} has no GE equivalent`);
  return v;
}

export function dataTypeOfGe(ge: number): DataType {
  const dt = BY_GE.get(ge);
  if (!dt) throw new TypeError(`GE dtype ${ge} is not a wire datatype`);
  return dt;
}
