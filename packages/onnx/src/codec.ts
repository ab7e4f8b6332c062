import { ModelType, TO_PLAIN } from './onnx-proto.js';
import type { ModelProto } from './types.js';

/**
 * Decodes a serialised ModelProto into plain objects. Fields outside the
 * subset in onnx-proto.ts are dropped, so re-encoding is lossless only for
 * models that use the subset (the demo models do); use fixLeadingDim and
 * freeLeadingDim to edit arbitrary models.
 */
export function decodeModel(bytes: Uint8Array): ModelProto {
  return ModelType.toObject(ModelType.decode(bytes), TO_PLAIN) as ModelProto;
}

export function encodeModel(model: ModelProto): Uint8Array {
  return ModelType.encode(ModelType.fromObject(model)).finish();
}
