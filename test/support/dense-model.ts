import { encodeModel, GraphBuilder, makeModel } from '@ge-mesh/onnx';

/**
 * An ONNX model `y = Relu(x · wᵀ + b)`: x FP32 [batch, k], w [n, k] (row-major), b [n], y FP32
 * [batch, n]. The end-to-end GE tests load it on the simulator and check it against onnxruntime.
 */
export function denseReluModel(k: number, n: number, w: Float32Array, b: Float32Array): Uint8Array {
  const g = new GraphBuilder('dense');
  const h = g.op('Gemm', [g.input('x', 'FP32', ['batch', k]), g.floats('w', [n, k], w), g.floats('b', [n], b)], {
    transB: { kind: 'int', value: 1 },
  });
  g.output(g.op('Relu', [h], {}, 'y'), 'FP32', ['batch', n]);
  return encodeModel(makeModel(g.build()));
}
