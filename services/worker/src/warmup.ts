import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { RepositoryModel, WarmupInput } from '@ge-mesh/model-repository';
import {
  type BatchMessage,
  type DataType,
  decodeResponses,
  elementCount,
  elementSize,
  encode,
  type InferRequestMessage,
  PROTOCOL_VERSION,
  type WireTensor,
} from '@ge-mesh/protocol';

/**
 * Warmup before a worker reports a model ready: every lane runs every tier
 * once with zeros (so each static graph is compiled, loaded and touched), then
 * the samples of Triton's `model_warmup`, each `count` times (default 1):
 * `zero_data`, `random_data` (uniform [0, 1) for floats, 0 or 1 for integers
 * and BOOL) or `input_data_file` (one sample's raw bytes, read from the
 * model's `warmup/` folder as Triton does, repeated for `batch_size` rows).
 * Samples go through the same assembly, run and slicing path as requests.
 */
export interface WarmupSample {
  readonly name: string;
  readonly rows: number;
  readonly inputs: WireTensor[];
}

export class WarmupError extends Error {}

function fill(dt: DataType, n: number, how: 'zero' | 'random'): Uint8Array {
  const bytes = new Uint8Array(n * elementSize(dt));
  if (how === 'zero') return bytes;
  const view = new DataView(bytes.buffer);
  const size = elementSize(dt);
  for (let i = 0; i < n; i++) {
    if (dt === 'FP32') view.setFloat32(i * 4, Math.random(), true);
    else if (dt === 'FP64') view.setFloat64(i * 8, Math.random(), true);
    // FP16/BF16: halves of small values are not worth encoding for a warmup; 0 or 1 bit patterns of the low byte.
    else bytes[i * size] = Math.random() < 0.5 ? 0 : 1;
  }
  return bytes;
}

function tensor(name: string, dt: DataType, shape: number[], data: Uint8Array): WireTensor {
  return { name, datatype: dt, shape, data };
}

/**
 * Every tier (or every gear) once, with zeros; none when an input has a
 * variable dim no gear fills or variable-size elements.
 */
function tierSamples(model: RepositoryModel): WarmupSample[] {
  const c = model.config;
  const batched = c.maxBatchSize > 0;
  if (c.gears) {
    return c.gears.gears.map((g) => ({
      name: `gear ${g.index}`,
      rows: g.batch,
      inputs: c.input.map((i) => {
        const row = g.dims[i.name] ?? i.dims;
        const shape = batched ? [g.batch, ...row] : [...row];
        return tensor(i.name, i.dataType, shape, fill(i.dataType, elementCount(shape), 'zero'));
      }),
    }));
  }
  if (c.input.some((i) => i.dims.some((d) => d < 0) || elementSize(i.dataType) === 0)) return [];
  return c.tiers.map((tier) => {
    const rows = batched ? tier : 1;
    return {
      name: `tier ${tier}`,
      rows,
      inputs: c.input.map((i) => {
        const shape = batched ? [rows, ...i.dims] : [...i.dims];
        return tensor(i.name, i.dataType, shape, fill(i.dataType, elementCount(shape), 'zero'));
      }),
    };
  });
}

async function configuredSamples(model: RepositoryModel): Promise<WarmupSample[]> {
  const batched = model.config.maxBatchSize > 0;
  const out: WarmupSample[] = [];
  // Checked at load (parse-model-config readWarmup): rows within the tiers, fixed-size data types.
  for (const w of model.config.warmup ?? []) {
    const inputs: WireTensor[] = [];
    for (const input of w.inputs) {
      const dims = [...input.dims];
      const sample = await sampleBytes(model, w.name, input);
      const data = new Uint8Array(sample.byteLength * w.rows);
      for (let r = 0; r < w.rows; r++) data.set(sample, r * sample.byteLength);
      inputs.push(tensor(input.name, input.dataType, batched ? [w.rows, ...dims] : dims, data));
    }
    for (let i = 0; i < w.count; i++) out.push({ name: w.name, rows: w.rows, inputs });
  }
  return out;
}

/** One sample's bytes of a warmup input: generated, or read from the model's `warmup/` folder. */
async function sampleBytes(model: RepositoryModel, warmup: string, input: WarmupInput): Promise<Uint8Array> {
  const perSample = elementCount([...input.dims]);
  if (input.data.kind !== 'file') return fill(input.dataType, perSample, input.data.kind);
  const { file } = input.data;
  let bytes: Uint8Array;
  try {
    bytes = new Uint8Array(await readFile(join(model.dir, 'warmup', file)));
  } catch (err) {
    throw new WarmupError(`model_warmup '${warmup}': cannot read ${file}: ${(err as Error).message}`);
  }
  const want = perSample * elementSize(input.dataType);
  if (bytes.byteLength !== want) {
    throw new WarmupError(
      `model_warmup '${warmup}': ${file} has ${bytes.byteLength} bytes, input '${input.name}' needs ${want}`,
    );
  }
  return bytes;
}

/** The warmup samples of a model: every tier, then its model_warmup entries. */
export async function warmupSamples(model: RepositoryModel): Promise<WarmupSample[]> {
  return [...tierSamples(model), ...(await configuredSamples(model))];
}

/** A sample as the one-member batch a lane runs. */
export function warmupBatch(model: RepositoryModel, version: string, sample: WarmupSample): Uint8Array {
  const now = Date.now();
  const req: InferRequestMessage = {
    v: PROTOCOL_VERSION,
    id: `warmup-${sample.name}`,
    model: model.name,
    version,
    inputs: sample.inputs,
    outputs: [],
    batch: sample.rows,
    priority: 0,
    timeoutUs: 0,
    deadline: now + 24 * 3600_000,
    acceptedAt: now,
    replyTo: '',
    correlationId: '',
  };
  const tier = model.config.tiers.find((t) => t >= sample.rows) ?? sample.rows;
  const batch: BatchMessage = {
    v: PROTOCOL_VERSION,
    batchId: req.id,
    model: model.name,
    version,
    tier,
    rows: sample.rows,
    members: [{ id: req.id, rows: sample.rows, body: encode(req) }],
    formedAt: now,
  };
  return encode(batch);
}

/** The first error a warmup run answered with, or null. */
export function warmupFailure(replyBodies: readonly Uint8Array[]): string | null {
  for (const res of replyBodies.flatMap(decodeResponses)) {
    if (res.error) return `${res.error.code}: ${res.error.message}`;
  }
  return null;
}
