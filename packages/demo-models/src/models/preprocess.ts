import { attr, encodeModel, GraphBuilder, makeModel } from '@ge-mesh/onnx';

export const PREPROCESS_SIZE = 224;

/** ONNX TensorProto.DataType FLOAT, Cast's `to`. */
const ONNX_FLOAT = 1;

/**
 * Image preprocessing for resnet18: image [N,224,224,3] uint8 RGB (HWC, as
 * decoded) → Cast → Transpose to NCHW → ÷255 → pixels [N,3,224,224] FP32 in
 * [0, 1], the input resnet18 takes. The first step of the demo ensemble
 * `preprocess_resnet18`.
 */
export function buildPreprocess(): Uint8Array {
  const g = new GraphBuilder('preprocess');
  const image = g.input('image', 'UINT8', ['batch', PREPROCESS_SIZE, PREPROCESS_SIZE, 3]);
  const asFloat = g.op('Cast', [image], { to: attr.int(ONNX_FLOAT) }, 'cast');
  const nchw = g.op('Transpose', [asFloat], { perm: attr.ints(0, 3, 1, 2) }, 'to_nchw');
  const scale = g.floats('scale', [1], [255]);
  g.op('Div', [nchw, scale], {}, 'pixels');
  g.output('pixels', 'FP32', ['batch', 3, PREPROCESS_SIZE, PREPROCESS_SIZE]);
  return encodeModel(
    makeModel(g.build(), {
      producerName: 'ge-mesh-demo-models',
      docString: 'preprocess: uint8 HWC image to FP32 NCHW in [0, 1] (pixels = transpose(image) / 255).',
    }),
  );
}
