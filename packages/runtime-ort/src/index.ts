import { readFile } from 'node:fs/promises';
import { fixInputDims, fixLeadingDim } from '@ge-mesh/onnx';
import { type DataType, MeshError } from '@ge-mesh/protocol';
import type { Engine, EngineModelSpec, EngineTensor } from '@ge-mesh/runtime';
import * as ort from 'onnxruntime-node';

/**
 * The `ort` runtime: onnxruntime-node on CPU. onnxruntime-node ignores
 * freeDimensionOverrides, so each tier gets its own session built from a copy
 * of the model whose batch dim is fixed, which lets ORT plan static shapes;
 * a model with gears gets one session per gear, every input dim fixed.
 * session.run() executes on the calling JS thread, so one lane = one
 * worker_thread = its own sessions.
 */
const ORT_TYPES: Partial<Record<DataType, ort.Tensor.Type>> = {
  FP32: 'float32',
  FP64: 'float64',
  FP16: 'float16',
  INT8: 'int8',
  INT16: 'int16',
  INT32: 'int32',
  INT64: 'int64',
  UINT8: 'uint8',
  UINT16: 'uint16',
  UINT32: 'uint32',
  UINT64: 'uint64',
  BOOL: 'bool',
};

type TypedArrayCtor = new (buffer: ArrayBufferLike, byteOffset: number, length: number) => ArrayBufferView;
const VIEWS: Partial<Record<ort.Tensor.Type, [TypedArrayCtor, number]>> = {
  float32: [Float32Array, 4],
  float64: [Float64Array, 8],
  float16: [Uint16Array, 2],
  int8: [Int8Array, 1],
  int16: [Int16Array, 2],
  int32: [Int32Array, 4],
  int64: [BigInt64Array as unknown as TypedArrayCtor, 8],
  uint8: [Uint8Array, 1],
  uint16: [Uint16Array, 2],
  uint32: [Uint32Array, 4],
  uint64: [BigUint64Array as unknown as TypedArrayCtor, 8],
  bool: [Uint8Array, 1],
};

export function ortTypeOf(dt: DataType): ort.Tensor.Type {
  const t = ORT_TYPES[dt];
  if (!t) throw new MeshError('UNSUPPORTED', `datatype ${dt} is not supported by the ort runtime`);
  return t;
}

/** A typed-array view over the same bytes (no copy); byteOffset must be aligned. */
function viewOf(type: ort.Tensor.Type, bytes: Uint8Array): ArrayBufferView {
  const v = VIEWS[type];
  if (!v) throw new MeshError('UNSUPPORTED', `tensor type ${type} has no byte view`);
  const [Ctor, size] = v;
  if (bytes.byteOffset % size !== 0) {
    const aligned = bytes.slice();
    return new Ctor(aligned.buffer, 0, aligned.byteLength / size);
  }
  return new Ctor(bytes.buffer, bytes.byteOffset, bytes.byteLength / size);
}

export interface OrtEngineOptions {
  /** Extra session options (tests, benchmarks). */
  sessionOptions?: ort.InferenceSession.SessionOptions;
}

export async function createOrtEngine(spec: EngineModelSpec, opts: OrtEngineOptions = {}): Promise<Engine> {
  const original = new Uint8Array(await readFile(spec.modelPath));
  const sessionOptions: ort.InferenceSession.SessionOptions = {
    intraOpNumThreads: spec.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    logSeverityLevel: 3,
    // A lane that spins between batches steals the core another lane needs.
    extra: { session: { intra_op: { allow_spinning: '0' }, inter_op: { allow_spinning: '0' } } },
    ...opts.sessionOptions,
  };
  // Keyed by tier, or by gear index when the model has gears (a static graph per gear).
  const sessions = new Map<number, ort.InferenceSession>();
  const gears = spec.gears;
  try {
    if (gears) {
      for (const g of gears.gears) {
        const shapes = Object.fromEntries(
          Object.entries(g.dims).map(([name, dims]) => [name, gears.batched ? [g.batch, ...dims] : [...dims]]),
        );
        sessions.set(g.index, await ort.InferenceSession.create(fixInputDims(original, shapes), sessionOptions));
      }
    } else {
      for (const tier of spec.tiers) {
        const bytes = spec.batched ? fixLeadingDim(original, tier) : original;
        sessions.set(tier, await ort.InferenceSession.create(bytes, sessionOptions));
      }
    }
  } catch (err) {
    await Promise.all([...sessions.values()].map((s) => s.release()));
    throw new MeshError('INTERNAL', `model '${spec.name}' failed to load in onnxruntime: ${(err as Error).message}`);
  }
  const inputTypes = new Map(spec.inputs.map((i) => [i.name, ortTypeOf(i.dataType)]));

  return {
    async run(tier, inputs, gear) {
      const session = sessions.get(gears ? (gear ?? -1) : tier);
      if (!session) {
        const what = gears ? `gear ${gear}` : `tier ${tier}`;
        throw new MeshError('INTERNAL', `model '${spec.name}' has no graph for ${what}`);
      }
      const feeds: Record<string, ort.Tensor> = {};
      for (const [name, t] of inputs) {
        const type = inputTypes.get(name) ?? 'float32';
        feeds[name] = new ort.Tensor(type, viewOf(type, t.data) as ort.Tensor.DataType, [...t.shape]);
      }
      let results: ort.InferenceSession.ReturnType;
      try {
        results = await session.run(feeds);
      } catch (err) {
        throw new MeshError('EXECUTION_FAILED', `onnxruntime failed to run '${spec.name}': ${(err as Error).message}`);
      }
      const out = new Map<string, EngineTensor>();
      for (const [name, t] of Object.entries(results)) {
        const data = t.data as ArrayBufferView;
        out.set(name, { data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength), shape: t.dims });
      }
      return out;
    },
    async close() {
      await Promise.all([...sessions.values()].map((s) => s.release()));
      sessions.clear();
    },
  };
}
