import type { DataType } from '@ge-mesh/protocol';
import type { EngineGears, OutputDimLink } from './gear-layout.js';

/**
 * What every runtime (onnxruntime on CPU, GE on an NPU) offers a lane: a model
 * compiled once per tier as a static-shape graph, run one batch at a time on
 * the lane's own stream. The lane owns batch assembly, padding and slicing, so
 * every runtime shares that path.
 */
export interface EngineTensorSpec {
  readonly name: string;
  readonly dataType: DataType;
  /** Dims of one row (no batch dim); -1 = variable. */
  readonly dims: readonly number[];
}

export interface EngineModelSpec {
  readonly name: string;
  readonly version: string;
  readonly modelPath: string;
  readonly inputs: readonly EngineTensorSpec[];
  readonly outputs: readonly EngineTensorSpec[];
  /** Static batch sizes to compile; [1] for a model without a batch dim. */
  readonly tiers: readonly number[];
  /**
   * Gears over non-batch dims: one static graph per gear (instead of per tier),
   * run by gear index. Absent for models with batch tiers only.
   */
  readonly gears?: EngineGears;
  /** With gears: which output dims follow which padded input dims (traced at load), by output. */
  readonly outputLinks?: Readonly<Record<string, readonly OutputDimLink[]>>;
  /** False when max_batch_size is 0: tensors carry no batch dim. */
  readonly batched: boolean;
  /** config.pbtxt `parameters`, for runtime-specific options. */
  readonly parameters: Readonly<Record<string, string>>;
  /** Runtime ge: the GE backend's parameters as the model repository checked them at load. */
  readonly ge?: {
    readonly sessionOptions: Readonly<Record<string, string>>;
    readonly graphOptions: Readonly<Record<string, string>>;
    readonly dumpGraph: boolean;
    readonly profiling: 'off' | 'on' | 'dynamic';
  };
  /** CPU threads this lane may use inside one run. */
  readonly threads: number;
  /** Index of this lane on its device (its stream). */
  readonly stream: number;
  readonly deviceId: number;
  /** Worker-level runtime settings (e.g. `geOptions`: process-wide GE options as JSON). */
  readonly runtimeOptions?: Readonly<Record<string, string>>;
}

export interface EngineTensor {
  readonly data: Uint8Array;
  readonly shape: readonly number[];
}

export interface Engine {
  /**
   * Run one batch at a tier (with gears: on gear `gear`, whose batch is the
   * tier). Input data may be views of pooled buffers that the caller reuses
   * after the promise settles; outputs are owned by the caller only until the
   * next run.
   */
  run(
    tier: number,
    inputs: ReadonlyMap<string, EngineTensor>,
    gear?: number,
  ): Promise<ReadonlyMap<string, EngineTensor>>;
  close(): Promise<void>;
  /** What the runtime reported while loading (e.g. option keys GE does not know). */
  readonly warnings?: readonly string[];
}

export type EngineFactory = (spec: EngineModelSpec) => Promise<Engine>;
