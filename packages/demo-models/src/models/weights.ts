import type { Prng } from '@ge-mesh/onnx';

/**
 * He-uniform weights (variance 2 / fan_in, which keeps ReLU activations at a
 * steady scale), times `gain`.
 */
export function heUniform(prng: Prng, count: number, fanIn: number, gain = 1): Float32Array {
  const bound = gain * Math.sqrt(6 / fanIn);
  return prng.floats(count, -bound, bound);
}

/** Glorot-uniform weights (variance 2 / (fan_in + fan_out)), for layers without ReLU. */
export function glorotUniform(prng: Prng, fanIn: number, fanOut: number): Float32Array {
  const bound = Math.sqrt(6 / (fanIn + fanOut));
  return prng.floats(fanIn * fanOut, -bound, bound);
}
