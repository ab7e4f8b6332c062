import { join } from 'node:path';
import type { SampleTensor } from '@ge-mesh/demo-models';
import * as ort from 'onnxruntime-node';
import { DEMO_REPOSITORY } from './mesh-harness.js';

/** onnxruntime's tensor type for each sample datatype. */
export const ORT_TYPES = { FP32: 'float32', INT64: 'int64', UINT8: 'uint8' } as const;

/**
 * The independent reference: the same model file run in this process by
 * onnxruntime, one request at a time, at the request's own batch size.
 */
export class Reference {
  private readonly sessions = new Map<string, ort.InferenceSession>();

  async run(
    model: string,
    inputs: SampleTensor[],
  ): Promise<Record<string, { data: Float32Array; dims: readonly number[] }>> {
    let s = this.sessions.get(model);
    if (!s) {
      s = await ort.InferenceSession.create(join(DEMO_REPOSITORY, model, '1', 'model.onnx'), {
        intraOpNumThreads: 1,
        logSeverityLevel: 3,
      });
      this.sessions.set(model, s);
    }
    const feeds: Record<string, ort.Tensor> = {};
    for (const t of inputs) feeds[t.name] = new ort.Tensor(ORT_TYPES[t.dataType], t.data, t.dims);
    const out = await s.run(feeds);
    return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, { data: v.data as Float32Array, dims: v.dims }]));
  }

  async close(): Promise<void> {
    for (const s of this.sessions.values()) await s.release();
    this.sessions.clear();
  }
}

/** Largest |a−b| / (atol + rtol·|b|); ≤ 1 means within tolerance. */
export function toleranceRatio(a: ArrayLike<number>, b: ArrayLike<number>, atol: number, rtol: number): number {
  if (a.length !== b.length) return Number.POSITIVE_INFINITY;
  let worst = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as number;
    const y = b[i] as number;
    const r = Math.abs(x - y) / (atol + rtol * Math.abs(y));
    if (!(r <= worst)) worst = Number.isNaN(r) ? Number.POSITIVE_INFINITY : r;
  }
  return worst;
}

/** A KServe v2 JSON request body from sample tensors. */
export function jsonInferBody(inputs: SampleTensor[], extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    ...extra,
    inputs: inputs.map((t) => ({
      name: t.name,
      shape: t.dims,
      datatype: t.dataType,
      data: t.data instanceof BigInt64Array ? Array.from(t.data, Number) : Array.from(t.data),
    })),
  });
}

/** A KServe v2 binary-extension body from sample tensors: the JSON header, then the raw input bytes. */
export function binaryInferBody(inputs: SampleTensor[]): { body: Buffer; headerLength: number } {
  const header = Buffer.from(
    JSON.stringify({
      inputs: inputs.map((t) => ({
        name: t.name,
        shape: t.dims,
        datatype: t.dataType,
        parameters: { binary_data_size: t.data.byteLength },
      })),
    }),
  );
  const parts = inputs.map((t) => Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
  return { body: Buffer.concat([header, ...parts]), headerLength: header.length };
}

/**
 * One JSON infer call of a tiny-shaped model through a gateway: asserts a 200
 * and returns output `y` and whether it matches `tiny` run by `ref` on the
 * same inputs (within 1e-4 + 1e-3·|ref|).
 */
export async function inferTiny(
  ref: Reference,
  baseUrl: string,
  model: string,
  inputs: SampleTensor[],
): Promise<{ y: number[]; matches: boolean }> {
  const res = await fetch(`${baseUrl}/v2/models/${model}/infer`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: jsonInferBody(inputs),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${model}: HTTP ${res.status}: ${text}`);
  const y = (JSON.parse(text) as { outputs: Array<{ data: number[] }> }).outputs[0]?.data ?? [];
  const expected = (await ref.run('tiny', inputs)).y?.data ?? new Float32Array();
  return { y, matches: toleranceRatio(y, expected, 1e-4, 1e-3) <= 1 };
}
