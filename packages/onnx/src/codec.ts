import { ModelType, TO_PLAIN } from './onnx-proto.js';
import type { ModelProto } from './types.js';

/**
 * Decodes a serialised ModelProto into plain objects. Bytes fields (raw_data)
 * are Buffers that view `bytes` rather than copies of it. Fields outside the
 * subset in onnx-proto.ts are dropped, so re-encoding is lossless only for
 * models that use the subset (the demo models do); use fixLeadingDim and
 * freeLeadingDim to edit arbitrary models.
 */
export function decodeModel(bytes: Uint8Array): ModelProto {
  // A Buffer makes protobufjs slice views, not copies, and gives the same types whatever the caller passed.
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return ModelType.toObject(ModelType.decode(buffer), TO_PLAIN) as ModelProto;
}

export function encodeModel(model: ModelProto): Uint8Array {
  return ModelType.encode(ModelType.fromObject(model)).finish();
}
