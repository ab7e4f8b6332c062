import type { DataType } from '@ge-mesh/protocol';
import type { ConfigError } from './config-error.js';
import type { GeParameters, PlacementParameters } from './ge-parameters.js';
import type { GearSet } from './gears.js';

/**
 * A model's configuration after `config.pbtxt` was parsed, checked and
 * completed (missing inputs/outputs read from the model file). Field names
 * follow Triton's `inference.ModelConfig` in camelCase; values are frozen.
 */
export interface TensorConfig {
  readonly name: string;
  readonly dataType: DataType;
  /** Dims without the implicit batch dim; -1 = variable. */
  readonly dims: readonly number[];
  readonly optional: boolean;
  /** `reshape.shape`: the shape the model sees instead of `dims` (batch dim excluded); absent when not set. */
  readonly reshape?: readonly number[];
  /** Inputs only: `format`, when set to other than FORMAT_NONE. */
  readonly format?: 'FORMAT_NHWC' | 'FORMAT_NCHW';
  /** Inputs only: `allow_ragged_batch`, when true. */
  readonly allowRaggedBatch?: boolean;
  /** Outputs only: `label_filename`, when set. */
  readonly labelFilename?: string;
}

export type TimeoutAction = 'REJECT' | 'DELAY';

export interface QueuePolicy {
  readonly timeoutAction: TimeoutAction;
  readonly defaultTimeoutMicroseconds: number;
  readonly allowTimeoutOverride: boolean;
  /** 0 = unbounded. */
  readonly maxQueueSize: number;
}

export interface DynamicBatchingConfig {
  /** Ascending, unique; `[maxBatchSize]` when the config lists none (Triton's default). */
  readonly preferredBatchSize: readonly number[];
  /** The config lists `preferred_batch_size` (else the batchers may prefer the tiers, as the GE backend suggests). */
  readonly preferredBatchSizeListed?: boolean;
  readonly maxQueueDelayMicroseconds: number;
  readonly preserveOrdering: boolean;
  readonly priorityLevels: number;
  readonly defaultPriorityLevel: number;
  readonly defaultQueuePolicy: QueuePolicy;
  readonly priorityQueuePolicy: ReadonlyMap<number, QueuePolicy>;
}

export interface InstanceGroupConfig {
  readonly name: string;
  readonly kind: 'KIND_AUTO' | 'KIND_GPU' | 'KIND_CPU' | 'KIND_MODEL';
  readonly count: number;
  readonly gpus: readonly number[];
}

/** 'ensemble': no runtime of its own; the gateways run its steps as requests of their models. */
export type Runtime = 'ort' | 'ge' | 'ensemble';

/** One name pair of a step's input_map or output_map. */
export interface TensorMapping {
  /** The step model's input or output. */
  readonly model: string;
  /** The ensemble tensor it reads or writes. */
  readonly ensemble: string;
}

/** One `ensemble_scheduling.step`. */
export interface EnsembleStep {
  readonly modelName: string;
  /** `model_version`; -1 = the highest ready version. */
  readonly modelVersion: number;
  /** In config order. */
  readonly inputMap: readonly TensorMapping[];
  readonly outputMap: readonly TensorMapping[];
}

/** `ensemble_scheduling`, checked within the config (see ensemble-config.ts; the steps' models are checked by checkEnsembleSteps). */
export interface EnsembleConfig {
  readonly steps: readonly EnsembleStep[];
}

/** Which versions of a model are served (`version_policy`; default latest 1). */
export type VersionPolicy =
  | { readonly kind: 'latest'; readonly numVersions: number }
  | { readonly kind: 'all' }
  | { readonly kind: 'specific'; readonly versions: readonly number[] };

/** Where a warmup input's values come from (the oneof of Triton's ModelWarmup.Input). */
export type WarmupData =
  | { readonly kind: 'zero' }
  /** Uniform [0, 1) for floats, 0 or 1 for integers and BOOL. */
  | { readonly kind: 'random' }
  /** One sample's raw bytes, in the model's `warmup/` folder (read when the warmup runs). */
  | { readonly kind: 'file'; readonly file: string };

export interface WarmupInput {
  readonly name: string;
  readonly dataType: DataType;
  /** One sample's dims, without the batch dim. */
  readonly dims: readonly number[];
  readonly data: WarmupData;
}

/** One `model_warmup` entry, checked at load. */
export interface WarmupConfig {
  readonly name: string;
  /** Rows per run: batch_size (at least 1, at most the largest tier); 1 for a model without a batch dim. */
  readonly rows: number;
  /** How many times it runs (at least 1). */
  readonly count: number;
  readonly inputs: readonly WarmupInput[];
}

export interface ModelConfig {
  readonly name: string;
  /** The platform Triton reports: `platform`; unset, "onnxruntime_onnx" for the onnxruntime backend (as Triton's loader completes it), else `backend`. */
  readonly platform: string;
  readonly backend: string;
  /** Which GE Mesh runtime executes it, from backend/platform. */
  readonly runtime: Runtime;
  /** 0 = the model takes no batch dim. */
  readonly maxBatchSize: number;
  readonly input: readonly TensorConfig[];
  readonly output: readonly TensorConfig[];
  /** One group `{ name, KIND_AUTO, count 1 }` when the config has none; a count below 1 reads as 1 (as in Triton). */
  readonly instanceGroup: readonly InstanceGroupConfig[];
  /** Absent when the config has no `dynamic_batching` block. */
  readonly dynamicBatching?: DynamicBatchingConfig;
  /** The static batch sizes graphs are compiled for, ascending; [1] when maxBatchSize is 0 (rules: tiers.ts deriveTiers). */
  readonly tiers: readonly number[];
  /**
   * Gears over non-batch dims (`graph.ge.inputShape` + `graph.ge.dynamicDims`), for every runtime:
   * one static graph per gear; absent for models whose gears (if any) vary the batch dim only.
   */
  readonly gears?: GearSet;
  /** Devices and lanes (the GE backend's device keys), checked at load for every runtime. */
  readonly placement?: PlacementParameters;
  /** The GE backend's parameters, checked; only for runtime 'ge'. */
  readonly ge?: GeParameters;
  readonly defaultModelFilename: string;
  readonly parameters: ReadonlyMap<string, string>;
  /** Always set by parseModelConfig; optional only so hand-built configs need not spell it. */
  readonly versionPolicy?: VersionPolicy;
  /** Set for platform "ensemble": the steps the gateways run. */
  readonly ensemble?: EnsembleConfig;
  /** `response_cache { enable: true }`: the gateways answer a repeated request from the shared cache. */
  readonly responseCache?: boolean;
  /** `model_warmup`, run by every lane after the tiers' own warmup; always set by parseModelConfig. */
  readonly warmup?: readonly WarmupConfig[];
  /** Fields loaded but read differently than Triton reads them, one located line each (see unhonoured-fields.ts). */
  readonly warnings?: readonly string[];
  /** The parsed text-format message, for the config printer (`/config`) and change detection only. */
  readonly raw: Readonly<Record<string, unknown>>;
}

/** One servable version of a model in the repository. */
export interface ModelVersion {
  readonly version: string;
  /** The model file; for an ensemble, its (empty) version folder. */
  readonly modelPath: string;
}

export interface RepositoryModel {
  readonly name: string;
  readonly dir: string;
  readonly config: ModelConfig;
  /** The config file read (config.pbtxt, or configs/<name>.pbtxt when one was chosen). */
  readonly configFile?: string;
  /** Versions that will be served (after version_policy), highest first. */
  readonly versions: readonly ModelVersion[];
  /** Class labels per output name, read from each output's `label_filename` at load. */
  readonly labels?: ReadonlyMap<string, readonly string[]>;
}

/** A scanned model repository. */
export interface Repository {
  readonly dir: string;
  /** The models that loaded, by name. */
  readonly models: ReadonlyMap<string, RepositoryModel>;
  /** The models that did not load, by name, each with the first error found. */
  readonly errors: ReadonlyMap<string, ConfigError>;
}

/**
 * The priority level a request runs at, as Triton maps it: a priority within
 * 1..priority_levels is kept, any other (0 included) takes
 * default_priority_level; a model without levels has only level 0. The
 * gateway and the batchers both map with this.
 */
export function priorityLevel(db: DynamicBatchingConfig | undefined, requested: number): number {
  const n = db?.priorityLevels ?? 0;
  if (n === 0) return 0;
  return requested >= 1 && requested <= n ? requested : (db?.defaultPriorityLevel ?? 1);
}
