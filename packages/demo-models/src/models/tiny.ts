import { attr, createPrng, encodeModel, GraphBuilder, makeModel } from '@ge-mesh/onnx';
import { heUniform } from './weights.js';

export const TINY_IN = 16;
export const TINY_HIDDEN = 32;
export const TINY_OUT = 4;

/** x [N,16] → Gemm → Relu → Gemm → y [N,4]: small enough to check by hand. */
export function buildTiny(): Uint8Array {
  const prng = createPrng(0x7115);
  const g = new GraphBuilder('tiny');
  const x = g.input('x', 'FP32', ['batch', TINY_IN]);
  const w1 = g.floats('fc1.weight', [TINY_HIDDEN, TINY_IN], heUniform(prng, TINY_HIDDEN * TINY_IN, TINY_IN));
  const b1 = g.floats('fc1.bias', [TINY_HIDDEN], prng.floats(TINY_HIDDEN, -0.1, 0.1));
  const w2 = g.floats('fc2.weight', [TINY_OUT, TINY_HIDDEN], heUniform(prng, TINY_OUT * TINY_HIDDEN, TINY_HIDDEN));
  const b2 = g.floats('fc2.bias', [TINY_OUT], prng.floats(TINY_OUT, -0.1, 0.1));
  const h = g.op('Relu', [g.op('Gemm', [x, w1, b1], { transB: attr.int(1) }, 'fc1')], {}, 'relu1');
  g.op('Gemm', [h, w2, b2], { transB: attr.int(1) }, 'y');
  g.output('y', 'FP32', ['batch', TINY_OUT]);
  return encodeModel(
    makeModel(g.build(), {
      producerName: 'ge-mesh-demo-models',
      docString: 'tiny: y = fc2(relu(fc1(x))), Gemm weights stored [out, in] with transB=1.',
    }),
  );
}
