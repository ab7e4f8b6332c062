import { createPrng, type Prng } from '@ge-mesh/onnx';
import type { DemoInput, DemoModel } from './catalog.js';

export interface SampleTensor {
  name: string;
  dataType: 'FP32' | 'INT64' | 'UINT8';
  /** Batch dim first. */
  dims: number[];
  data: Float32Array | BigInt64Array | Uint8Array;
}

/**
 * Random valid inputs for `batch` samples of a demo model, the same for the
 * same seed. Sample i of a batch equals sample 0 of
 * `sampleInputs(model, 1, seed + i)`, so batched and single runs can be
 * compared row by row.
 */
export function sampleInputs(model: DemoModel, batch: number, seed: number): SampleTensor[] {
  return model.inputs.map((input, k) => {
    const perSample = input.dims.reduce((a, b) => a * b, 1);
    const size = batch * perSample;
    const data =
      input.dataType === 'INT64'
        ? new BigInt64Array(size)
        : input.dataType === 'UINT8'
          ? new Uint8Array(size)
          : new Float32Array(size);
    for (let i = 0; i < batch; i++) {
      const prng = createPrng(Math.imul(seed + i, 0x9e3779b1) ^ (k + 1));
      fillSample(input, prng, data, i * perSample, perSample);
    }
    return { name: input.name, dataType: input.dataType, dims: [batch, ...input.dims], data };
  });
}

function fillSample(
  input: DemoInput,
  prng: Prng,
  data: Float32Array | BigInt64Array | Uint8Array,
  at: number,
  n: number,
): void {
  const v = input.values;
  const put = (i: number, x: number) => {
    if (data instanceof BigInt64Array) data[at + i] = BigInt(x);
    else if (data instanceof Uint8Array) data[at + i] = Math.round(x);
    else data[at + i] = x;
  };
  switch (v.kind) {
    case 'uniform':
      for (let i = 0; i < n; i++) put(i, prng.uniform(v.min, v.max));
      return;
    case 'image': {
      const contrast = prng.uniform(0.3, 1);
      const brightness = prng.uniform(0, 1 - contrast);
      for (let i = 0; i < n; i++) put(i, v.min + (v.max - v.min) * (brightness + contrast * prng.next()));
      return;
    }
    case 'tokenIds':
      for (let i = 0; i < n; i++) put(i, prng.int(0, v.vocabSize));
      return;
    case 'attentionMask': {
      const length = prng.int(1, n + 1);
      for (let i = 0; i < n; i++) put(i, i < length ? 1 : 0);
      return;
    }
  }
}
