/**
 * Plain-object shapes of the ONNX messages in onnx-proto.ts, as decodeModel
 * returns them and encodeModel accepts them: camelCase fields, int64 as
 * number, absent fields left out.
 */

/** TensorProto.DataType values. */
export const ElemType = {
  UNDEFINED: 0,
  FLOAT: 1,
  UINT8: 2,
  INT8: 3,
  UINT16: 4,
  INT16: 5,
  INT32: 6,
  INT64: 7,
  STRING: 8,
  BOOL: 9,
  FLOAT16: 10,
  DOUBLE: 11,
  UINT32: 12,
  UINT64: 13,
  COMPLEX64: 14,
  COMPLEX128: 15,
  BFLOAT16: 16,
} as const;
export type ElemType = (typeof ElemType)[keyof typeof ElemType];

/** AttributeProto.AttributeType values. */
export const AttributeType = {
  UNDEFINED: 0,
  FLOAT: 1,
  INT: 2,
  STRING: 3,
  TENSOR: 4,
  GRAPH: 5,
  FLOATS: 6,
  INTS: 7,
  STRINGS: 8,
  TENSORS: 9,
  GRAPHS: 10,
} as const;

export interface StringStringEntryProto {
  key?: string;
  value?: string;
}

export interface OperatorSetIdProto {
  domain?: string;
  version?: number;
}

export interface DimensionProto {
  dimValue?: number;
  dimParam?: string;
  denotation?: string;
}

export interface TensorShapeProto {
  dim?: DimensionProto[];
}

export interface TypeProto {
  tensorType?: { elemType?: number; shape?: TensorShapeProto };
  denotation?: string;
}

export interface ValueInfoProto {
  name?: string;
  type?: TypeProto;
  docString?: string;
  metadataProps?: StringStringEntryProto[];
}

export interface TensorProto {
  dims?: number[];
  dataType?: number;
  floatData?: number[];
  int32Data?: number[];
  stringData?: Uint8Array[];
  int64Data?: number[];
  name?: string;
  rawData?: Uint8Array;
  doubleData?: number[];
  uint64Data?: number[];
  docString?: string;
  externalData?: StringStringEntryProto[];
  dataLocation?: number;
}

export interface AttributeProto {
  name?: string;
  f?: number;
  i?: number;
  s?: Uint8Array;
  t?: TensorProto;
  g?: GraphProto;
  floats?: number[];
  ints?: number[];
  strings?: Uint8Array[];
  tensors?: TensorProto[];
  graphs?: GraphProto[];
  docString?: string;
  type?: number;
  refAttrName?: string;
}

export interface NodeProto {
  input?: string[];
  output?: string[];
  name?: string;
  opType?: string;
  attribute?: AttributeProto[];
  docString?: string;
  domain?: string;
}

export interface GraphProto {
  node?: NodeProto[];
  name?: string;
  initializer?: TensorProto[];
  docString?: string;
  input?: ValueInfoProto[];
  output?: ValueInfoProto[];
  valueInfo?: ValueInfoProto[];
}

export interface ModelProto {
  irVersion?: number;
  producerName?: string;
  producerVersion?: string;
  domain?: string;
  modelVersion?: number;
  docString?: string;
  graph?: GraphProto;
  opsetImport?: OperatorSetIdProto[];
  metadataProps?: StringStringEntryProto[];
}
