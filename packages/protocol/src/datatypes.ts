/**
 * KServe v2 / Triton tensor datatypes: the wire string, its element size and
 * the `config.pbtxt` enum that names it.
 */
export const DATATYPES = {
  BOOL: { bytes: 1, configType: 'TYPE_BOOL' },
  UINT8: { bytes: 1, configType: 'TYPE_UINT8' },
  UINT16: { bytes: 2, configType: 'TYPE_UINT16' },
  UINT32: { bytes: 4, configType: 'TYPE_UINT32' },
  UINT64: { bytes: 8, configType: 'TYPE_UINT64' },
  INT8: { bytes: 1, configType: 'TYPE_INT8' },
  INT16: { bytes: 2, configType: 'TYPE_INT16' },
  INT32: { bytes: 4, configType: 'TYPE_INT32' },
  INT64: { bytes: 8, configType: 'TYPE_INT64' },
  FP16: { bytes: 2, configType: 'TYPE_FP16' },
  BF16: { bytes: 2, configType: 'TYPE_BF16' },
  FP32: { bytes: 4, configType: 'TYPE_FP32' },
  FP64: { bytes: 8, configType: 'TYPE_FP64' },
  // Variable length: each element is a uint32 LE length followed by its bytes.
  BYTES: { bytes: 0, configType: 'TYPE_STRING' },
} as const;

export type DataType = keyof typeof DATATYPES;
export type ConfigDataType = (typeof DATATYPES)[DataType]['configType'];

const byConfigType = new Map<string, DataType>(
  Object.entries(DATATYPES).map(([wire, d]) => [d.configType, wire as DataType]),
);

export function isDataType(s: unknown): s is DataType {
  return typeof s === 'string' && Object.hasOwn(DATATYPES, s);
}

/** `TYPE_FP32` → `FP32`; undefined for an unknown enum name. */
export function dataTypeFromConfig(configType: string): DataType | undefined {
  return byConfigType.get(configType);
}

export function configTypeOf(dt: DataType): ConfigDataType {
  return DATATYPES[dt].configType;
}

/** Size of one element in bytes; 0 for BYTES, whose elements vary. */
export function elementSize(dt: DataType): number {
  return DATATYPES[dt].bytes;
}

export function elementCount(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}
