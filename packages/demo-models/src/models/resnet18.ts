import { attr, createPrng, encodeModel, GraphBuilder, makeModel, type Prng } from '@ge-mesh/onnx';
import { heUniform } from './weights.js';

const CLASSES = 1000;
// Residual branches are damped so that activations grow only mildly over the
// eight blocks (a stand-in for trained BatchNorm scales): logits stay O(1).
const RESIDUAL_GAIN = 0.5;

/**
 * ResNet-18 at 224×224 with BatchNorm folded into conv biases and generated
 * (not trained) weights: the compute and memory profile of the real network,
 * from a seeded PRNG. Input "input" [N,3,224,224] in [0, 1], output "logits"
 * [N,1000].
 */
export function buildResnet18(): Uint8Array {
  const prng = createPrng(18);
  const g = new GraphBuilder('resnet18');
  const input = g.input('input', 'FP32', ['batch', 3, 224, 224]);

  let x = conv(g, prng, 'conv1', input, 3, 64, 7, 2, 1);
  x = g.op('Relu', [x], {}, 'relu1');
  x = g.op(
    'MaxPool',
    [x],
    { kernel_shape: attr.ints(3, 3), strides: attr.ints(2, 2), pads: attr.ints(1, 1, 1, 1) },
    'maxpool',
  );

  let channels = 64;
  for (const [stage, width] of [64, 128, 256, 512].entries()) {
    for (let block = 0; block < 2; block++) {
      const stride = stage > 0 && block === 0 ? 2 : 1;
      x = basicBlock(g, prng, `layer${stage + 1}.${block}`, x, channels, width, stride);
      channels = width;
    }
  }

  x = g.op('GlobalAveragePool', [x], {}, 'avgpool');
  x = g.op('Flatten', [x], { axis: attr.int(1) }, 'flatten');
  const fcW = g.floats('fc.weight', [CLASSES, channels], heUniform(prng, CLASSES * channels, channels, Math.SQRT1_2));
  const fcB = g.floats('fc.bias', [CLASSES], prng.floats(CLASSES, -0.1, 0.1));
  g.op('Gemm', [x, fcW, fcB], { transB: attr.int(1) }, 'logits');
  g.output('logits', 'FP32', ['batch', CLASSES]);

  return encodeModel(
    makeModel(g.build(), {
      producerName: 'ge-mesh-demo-models',
      docString: 'ResNet-18 (224x224, BatchNorm folded) with generated weights; input in [0, 1], NCHW.',
    }),
  );
}

/** relu(conv2(relu(conv1(x))) + shortcut(x)), with a 1×1 projection when the shape changes. */
function basicBlock(
  g: GraphBuilder,
  prng: Prng,
  name: string,
  x: string,
  inC: number,
  outC: number,
  stride: number,
): string {
  let y = conv(g, prng, `${name}.conv1`, x, inC, outC, 3, stride, 1);
  y = g.op('Relu', [y], {}, `${name}.relu1`);
  y = conv(g, prng, `${name}.conv2`, y, outC, outC, 3, 1, RESIDUAL_GAIN);
  const shortcut = stride !== 1 || inC !== outC ? conv(g, prng, `${name}.downsample`, x, inC, outC, 1, stride, 1) : x;
  return g.op('Relu', [g.op('Add', [y, shortcut], {}, `${name}.add`)], {}, `${name}.relu2`);
}

/** A k×k conv with "same" padding and a bias (the folded BatchNorm shift). */
function conv(
  g: GraphBuilder,
  prng: Prng,
  name: string,
  x: string,
  inC: number,
  outC: number,
  k: number,
  stride: number,
  gain: number,
): string {
  const fanIn = inC * k * k;
  const w = g.floats(`${name}.weight`, [outC, inC, k, k], heUniform(prng, outC * fanIn, fanIn, gain));
  const b = g.floats(`${name}.bias`, [outC], prng.floats(outC, -0.05, 0.05));
  const p = (k - 1) / 2;
  return g.op(
    'Conv',
    [x, w, b],
    { kernel_shape: attr.ints(k, k), strides: attr.ints(stride, stride), pads: attr.ints(p, p, p, p) },
    name,
  );
}
