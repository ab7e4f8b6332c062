import { attr, createPrng, ElemType, encodeModel, GraphBuilder, makeModel, type Prng } from '@ge-mesh/onnx';
import { glorotUniform } from './weights.js';

export const TEXT_VOCAB = 1000;
export const TEXT_SEQ = 32;
const HIDDEN = 64;
const HEADS = 4;
const HEAD_DIM = HIDDEN / HEADS;
const FFN = 256;
const LAYERS = 2;
const LN_EPSILON = 1e-5;

/**
 * A small BERT-shaped encoder with generated weights: token + position
 * embeddings, two post-LayerNorm transformer layers (4-head self-attention
 * with an additive padding mask, GELU feed-forward). Inputs "input_ids" and
 * "attention_mask" INT64 [N,32]; outputs "last_hidden_state" [N,32,64] and
 * "pooled" [N,64], the mean of the unmasked tokens. Reshapes use 0 and -1 so
 * the batch dim stays free.
 */
export function buildTextEncoder(): Uint8Array {
  return buildEncoder('fixed');
}

/** Longest sequence of the variable-length encoder (its position table's rows). */
export const TEXT_MAX_SEQ = 128;

/**
 * The same encoder over sequences of any length up to TEXT_MAX_SEQ: inputs
 * [N,seq], outputs "last_hidden_state" [N,seq,64] and "pooled" [N,64] (the
 * dim names say which output dims follow the inputs'). The positions are the
 * first seq rows of the table, sliced by the input's own length, so a static
 * graph per (batch, seq) gear is as exact as the dynamic model.
 */
export function buildTextEncoderSeq(): Uint8Array {
  return buildEncoder('variable');
}

function buildEncoder(length: 'fixed' | 'variable'): Uint8Array {
  const variable = length === 'variable';
  const prng = createPrng(variable ? 0x5e9 : 0xbe27);
  const g = new GraphBuilder(variable ? 'text_encoder_seq' : 'text_encoder');
  const seq = variable ? 'seq' : TEXT_SEQ;
  const ids = g.input('input_ids', 'INT64', ['batch', seq]);
  const mask = g.input('attention_mask', 'INT64', ['batch', seq]);

  const one = g.floats('const.one', [], [1]);
  const headShape = g.int64s('const.head_shape', [4], [0, 0, HEADS, HEAD_DIM]);
  const mergedShape = g.int64s('const.merged_shape', [3], [0, 0, HIDDEN]);

  const wordTable = g.floats('embeddings.word', [TEXT_VOCAB, HIDDEN], prng.floats(TEXT_VOCAB * HIDDEN, -1, 1));
  const rows = variable ? TEXT_MAX_SEQ : TEXT_SEQ;
  const posTable = g.floats('embeddings.position', [rows, HIDDEN], prng.floats(rows * HIDDEN, -0.5, 0.5));
  const words = g.op('Gather', [wordTable, ids], { axis: attr.int(0) }, 'embeddings.words');
  let pos: string;
  if (variable) {
    // Rows 0..seq-1 of the table: seq read from the input's shape (a constant in a static graph).
    const seqLen = g.op('Shape', [ids], { start: attr.int(1), end: attr.int(2) }, 'embeddings.seq_len');
    const zero = g.int64s('const.zero_1', [1], [0]);
    pos = g.op('Slice', [posTable, zero, seqLen, zero], {}, 'embeddings.positions');
  } else {
    const positions = g.int64s(
      'embeddings.position_ids',
      [TEXT_SEQ],
      Array.from({ length: TEXT_SEQ }, (_, i) => i),
    );
    pos = g.op('Gather', [posTable, positions], { axis: attr.int(0) }, 'embeddings.positions');
  }
  let h = layerNorm(g, prng, 'embeddings.ln', g.op('Add', [words, pos], {}, 'embeddings.sum'));

  // Padding positions get -10000 added to their attention scores: exp() of
  // that underflows to 0, so no token attends to padding.
  const maskF = g.op('Cast', [mask], { to: attr.int(ElemType.FLOAT) }, 'mask.float');
  const negBig = g.floats('const.mask_fill', [], [-10000]);
  const maskBias = g.op('Mul', [g.op('Sub', [one, maskF], {}, 'mask.inverted'), negBig], {}, 'mask.bias');
  const scoreBias = g.op('Unsqueeze', [maskBias, g.int64s('const.axes_1_2', [2], [1, 2])], {}, 'mask.score_bias');

  for (let layer = 0; layer < LAYERS; layer++) {
    const out = layer === LAYERS - 1 ? 'last_hidden_state' : `layer${layer}.out`;
    h = encoderLayer(g, prng, `layer${layer}`, h, scoreBias, headShape, mergedShape, out);
  }

  // Masked mean over tokens; the count is clamped to 1 so an all-padding row gives zeros, not NaN.
  const mask3 = g.op('Unsqueeze', [maskF, g.int64s('const.axes_2', [1], [2])], {}, 'pool.mask');
  const axis1 = g.int64s('const.axes_1', [1], [1]);
  const summed = g.op(
    'ReduceSum',
    [g.op('Mul', [h, mask3], {}, 'pool.masked'), axis1],
    { keepdims: attr.int(0) },
    'pool.sum',
  );
  const count = g.op('ReduceSum', [mask3, axis1], { keepdims: attr.int(0) }, 'pool.count');
  g.op('Div', [summed, g.op('Max', [count, one], {}, 'pool.count_min1')], {}, 'pooled');

  g.output('last_hidden_state', 'FP32', ['batch', seq, HIDDEN]);
  g.output('pooled', 'FP32', ['batch', HIDDEN]);
  return encodeModel(
    makeModel(g.build(), {
      producerName: 'ge-mesh-demo-models',
      docString: variable
        ? `BERT-shaped text encoder (vocab 1000, seq up to ${TEXT_MAX_SEQ}, hidden 64, 4 heads, 2 layers) with generated weights.`
        : 'BERT-shaped text encoder (vocab 1000, seq 32, hidden 64, 4 heads, 2 layers) with generated weights.',
    }),
  );
}

function encoderLayer(
  g: GraphBuilder,
  prng: Prng,
  name: string,
  x: string,
  scoreBias: string,
  headShape: string,
  mergedShape: string,
  output: string,
): string {
  // [N,S,H] → [N,heads,S,head_dim]
  const heads = (role: string, perm: number[]) =>
    g.op(
      'Transpose',
      [
        g.op(
          'Reshape',
          [linear(g, prng, `${name}.attn.${role}`, x, HIDDEN, HIDDEN), headShape],
          {},
          `${name}.attn.${role}.split`,
        ),
      ],
      { perm: attr.ints(...perm) },
      `${name}.attn.${role}.heads`,
    );
  const q = heads('q', [0, 2, 1, 3]);
  const kT = heads('k', [0, 2, 3, 1]);
  const v = heads('v', [0, 2, 1, 3]);

  const scale = g.floats(`${name}.attn.scale`, [], [1 / Math.sqrt(HEAD_DIM)]);
  const scores = g.op('Mul', [g.op('MatMul', [q, kT], {}, `${name}.attn.qk`), scale], {}, `${name}.attn.scores`);
  const probs = g.op(
    'Softmax',
    [g.op('Add', [scores, scoreBias], {}, `${name}.attn.masked`)],
    { axis: attr.int(-1) },
    `${name}.attn.probs`,
  );
  const ctx = g.op('MatMul', [probs, v], {}, `${name}.attn.context`);
  const merged = g.op(
    'Reshape',
    [g.op('Transpose', [ctx], { perm: attr.ints(0, 2, 1, 3) }, `${name}.attn.context.tokens`), mergedShape],
    {},
    `${name}.attn.context.merged`,
  );
  const attnOut = linear(g, prng, `${name}.attn.out`, merged, HIDDEN, HIDDEN);
  const h = layerNorm(g, prng, `${name}.attn.ln`, g.op('Add', [x, attnOut], {}, `${name}.attn.residual`));

  const up = gelu(g, `${name}.ffn.gelu`, linear(g, prng, `${name}.ffn.up`, h, HIDDEN, FFN));
  const down = linear(g, prng, `${name}.ffn.down`, up, FFN, HIDDEN);
  return layerNorm(g, prng, `${name}.ffn.ln`, g.op('Add', [h, down], {}, `${name}.ffn.residual`), output);
}

/** x·W + b with W stored [in, out]. */
function linear(g: GraphBuilder, prng: Prng, name: string, x: string, inF: number, outF: number): string {
  const w = g.floats(`${name}.weight`, [inF, outF], glorotUniform(prng, inF, outF));
  const b = g.floats(`${name}.bias`, [outF], prng.floats(outF, -0.05, 0.05));
  return g.op('Add', [g.op('MatMul', [x, w], {}, `${name}.matmul`), b], {}, name);
}

function layerNorm(g: GraphBuilder, prng: Prng, name: string, x: string, output = name): string {
  const gamma = g.floats(`${name}.weight`, [HIDDEN], prng.floats(HIDDEN, 0.9, 1.1));
  const beta = g.floats(`${name}.bias`, [HIDDEN], prng.floats(HIDDEN, -0.05, 0.05));
  return g.op('LayerNormalization', [x, gamma, beta], { axis: attr.int(-1), epsilon: attr.float(LN_EPSILON) }, output);
}

/** GELU in its exact form: 0.5·x·(1 + erf(x/√2)). */
function gelu(g: GraphBuilder, name: string, x: string): string {
  const invSqrt2 = g.floats(`${name}.inv_sqrt2`, [], [Math.SQRT1_2]);
  const one = g.floats(`${name}.one`, [], [1]);
  const half = g.floats(`${name}.half`, [], [0.5]);
  const erf = g.op('Erf', [g.op('Mul', [x, invSqrt2], {}, `${name}.scaled`)], {}, `${name}.erf`);
  const gate = g.op('Mul', [x, g.op('Add', [erf, one], {}, `${name}.gate`)], {}, `${name}.gated`);
  return g.op('Mul', [gate, half], {}, name);
}
