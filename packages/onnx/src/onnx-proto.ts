import protobuf from 'protobufjs';

/**
 * The part of ONNX's `onnx.proto` (proto2) that GE Mesh reads and writes:
 * models, graphs, nodes, attributes, dense tensors and tensor types. Field
 * numbers match the upstream schema; fields left out here are skipped on
 * decode, so code that must keep them splices bytes instead (see
 * graph-splice.ts). No maintained npm package ships this schema for
 * protobufjs 7, hence the inline copy.
 */
const ONNX_SUBSET = `
syntax = "proto2";
package onnx;

message StringStringEntryProto {
  optional string key = 1;
  optional string value = 2;
}

message OperatorSetIdProto {
  optional string domain = 1;
  optional int64 version = 2;
}

message TensorShapeProto {
  message Dimension {
    oneof value {
      int64 dim_value = 1;
      string dim_param = 2;
    }
    optional string denotation = 3;
  }
  repeated Dimension dim = 1;
}

message TypeProto {
  message Tensor {
    optional int32 elem_type = 1;
    optional TensorShapeProto shape = 2;
  }
  oneof value {
    Tensor tensor_type = 1;
  }
  optional string denotation = 6;
}

message ValueInfoProto {
  optional string name = 1;
  optional TypeProto type = 2;
  optional string doc_string = 3;
  repeated StringStringEntryProto metadata_props = 4;
}

message TensorProto {
  repeated int64 dims = 1;
  optional int32 data_type = 2;
  repeated float float_data = 4 [packed = true];
  repeated int32 int32_data = 5 [packed = true];
  repeated bytes string_data = 6;
  repeated int64 int64_data = 7 [packed = true];
  optional string name = 8;
  optional bytes raw_data = 9;
  repeated double double_data = 10 [packed = true];
  repeated uint64 uint64_data = 11 [packed = true];
  optional string doc_string = 12;
  repeated StringStringEntryProto external_data = 13;
  optional int32 data_location = 14;
}

message AttributeProto {
  optional string name = 1;
  optional float f = 2;
  optional int64 i = 3;
  optional bytes s = 4;
  optional TensorProto t = 5;
  optional GraphProto g = 6;
  repeated float floats = 7;
  repeated int64 ints = 8;
  repeated bytes strings = 9;
  repeated TensorProto tensors = 10;
  repeated GraphProto graphs = 11;
  optional string doc_string = 13;
  optional int32 type = 20;
  optional string ref_attr_name = 21;
}

message NodeProto {
  repeated string input = 1;
  repeated string output = 2;
  optional string name = 3;
  optional string op_type = 4;
  repeated AttributeProto attribute = 5;
  optional string doc_string = 6;
  optional string domain = 7;
}

message GraphProto {
  repeated NodeProto node = 1;
  optional string name = 2;
  repeated TensorProto initializer = 5;
  optional string doc_string = 10;
  repeated ValueInfoProto input = 11;
  repeated ValueInfoProto output = 12;
  repeated ValueInfoProto value_info = 13;
}

message ModelProto {
  optional int64 ir_version = 1;
  optional string producer_name = 2;
  optional string producer_version = 3;
  optional string domain = 4;
  optional int64 model_version = 5;
  optional string doc_string = 6;
  optional GraphProto graph = 7;
  repeated OperatorSetIdProto opset_import = 8;
  repeated StringStringEntryProto metadata_props = 14;
}

// A read-only view for listing a graph's inputs and outputs: initializers are
// declared by name only, so their (possibly huge) payloads are skipped, not copied.
message SparseTensorNameView {
  optional TensorNameView values = 1;
}
message TensorNameView {
  optional string name = 8;
}
message GraphIOView {
  repeated TensorNameView initializer = 5;
  repeated ValueInfoProto input = 11;
  repeated ValueInfoProto output = 12;
  repeated SparseTensorNameView sparse_initializer = 15;
}
message ModelIOView {
  optional GraphIOView graph = 7;
}
`;

const root = protobuf.parse(ONNX_SUBSET, { keepCase: false }).root;

export const ModelType = root.lookupType('onnx.ModelProto');
export const ValueInfoType = root.lookupType('onnx.ValueInfoProto');
export const ModelIOViewType = root.lookupType('onnx.ModelIOView');

/** How decoded messages become plain objects: int64 as number, absent fields omitted. */
export const TO_PLAIN: protobuf.IConversionOptions = { longs: Number, defaults: false, arrays: false };

/** Field numbers used when splicing encoded models without decoding them. */
export const FIELD = {
  model: { graph: 7 },
  graph: { input: 11, output: 12, valueInfo: 13 },
} as const;
