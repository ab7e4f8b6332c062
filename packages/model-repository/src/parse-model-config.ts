/**
 * config.pbtxt → ModelConfig: parse against Triton's schema, apply Triton's
 * defaults and validation (core model_config_utils.cc), map the backend to a
 * GE Mesh runtime, complete missing inputs/outputs from the model file, derive
 * the tiers, and freeze the result.
 */
import { dataTypeFromConfig, elementSize } from '@ge-mesh/protocol';
import { ConfigError, type ConfigErrorKind, type SourcePosition } from './config-error.js';
import { readEnsemble } from './ensemble-config.js';
import {
  GeParameterError,
  type GeParameters,
  type PlacementParameters,
  parseGeParameters,
  parsePlacementParameters,
} from './ge-parameters.js';
import { describeGears, type GearSet, gearFor, parseGearSet } from './gears.js';
import type {
  DynamicBatchingConfig,
  InstanceGroupConfig,
  ModelConfig,
  QueuePolicy,
  Runtime,
  TensorConfig,
  TimeoutAction,
  VersionPolicy,
  WarmupConfig,
  WarmupData,
  WarmupInput,
} from './model-config.js';
import { ModelIOError, readModelFileIO, tensorsFromModel } from './model-io.js';
import { parseTextProto, type TextMessage } from './text-format/parser.js';
import { sourcePosition, valuePosition } from './text-format/positions.js';
import { deriveTiers, TierError } from './tiers.js';
import { checkUnhonouredFields } from './unhonoured-fields.js';

export interface ParseModelConfigOptions {
  /** The config's path, as error messages should show it. */
  readonly file: string;
  /** The model's folder name; a `name` in the config must equal it. */
  readonly modelName: string;
  /** The model file, read for inputs/outputs the config does not list. */
  readonly modelBytes?: Uint8Array;
  /** The model file's path, for error messages about it. */
  readonly modelFile?: string;
}

/** Backend or platform names GE Mesh serves, and the runtime that runs them. */
const RUNTIMES: Readonly<Record<string, Runtime>> = {
  onnxruntime: 'ort',
  onnxruntime_onnx: 'ort',
  npu_ge: 'ge',
  ge: 'ge',
};

export const DEFAULT_MODEL_FILENAME = 'model.onnx';

/** Whether a config's backend (or platform) is the GE backend's, before the config is read whole. */
export function namesGeBackend(raw: TextMessage): boolean {
  const name = (raw.backend as string | undefined) || (raw.platform as string | undefined) || '';
  return Object.hasOwn(RUNTIMES, name) && RUNTIMES[name] === 'ge';
}

const DEFAULT_QUEUE_POLICY: QueuePolicy = Object.freeze({
  timeoutAction: 'REJECT',
  defaultTimeoutMicroseconds: 0,
  allowTimeoutOverride: false,
  maxQueueSize: 0,
});

type Msg = TextMessage;

class Reader {
  constructor(readonly file: string) {}

  fail(detail: string, at: SourcePosition | undefined, field: string, kind: ConfigErrorKind = 'invalid'): never {
    throw new ConfigError({ kind, file: this.file, position: at, field, detail });
  }
}

const list = (m: Msg, f: string) => (m[f] as Msg[] | undefined) ?? [];
const nums = (m: Msg, f: string) => (m[f] as number[] | undefined) ?? [];
const str = (m: Msg, f: string) => (m[f] as string | undefined) ?? '';
const num = (m: Msg, f: string) => (m[f] as number | undefined) ?? 0;
const bool = (m: Msg, f: string) => (m[f] as boolean | undefined) ?? false;

/**
 * Parses and checks a config.pbtxt. Throws ConfigError (file, line, column,
 * field) on the first problem.
 */
export function parseModelConfig(text: string, options: ParseModelConfigOptions): ModelConfig {
  return modelConfigFromMessage(parseTextProto(text, { file: options.file }), options);
}

/** parseModelConfig for a message parseTextProto already returned (which it freezes). */
export function modelConfigFromMessage(raw: TextMessage, options: ParseModelConfigOptions): ModelConfig {
  // Annotated so TypeScript treats r.fail() as ending the flow.
  const r: Reader = new Reader(options.file);

  const configName = str(raw, 'name');
  if (configName !== '' && configName !== options.modelName) {
    r.fail(
      `name '${configName}' does not match the model folder '${options.modelName}'; set name: "${options.modelName}" or remove it`,
      valuePosition(raw, 'name'),
      'name',
    );
  }
  const name = options.modelName;
  const { runtime, platform, backend } = readRuntime(raw, r);
  const warnings = checkUnhonouredFields(raw, options.file);
  if (runtime !== 'ensemble' && raw.ensemble_scheduling) {
    r.fail(
      'ensemble_scheduling needs platform: "ensemble" (and no backend)',
      sourcePosition(raw, 'ensemble_scheduling'),
      'ensemble_scheduling',
    );
  }

  const maxBatchSize = num(raw, 'max_batch_size');
  if (maxBatchSize < 0) {
    r.fail(
      `max_batch_size must be >= 0 (0 means the model takes no batch dim), found ${maxBatchSize}`,
      valuePosition(raw, 'max_batch_size'),
      'max_batch_size',
    );
  }

  let input = readTensors(raw, 'input', maxBatchSize, r);
  let output = readTensors(raw, 'output', maxBatchSize, r);
  if (input.length === 0 || output.length === 0) {
    const missing = input.length === 0 ? 'input' : 'output';
    if (runtime === 'ensemble') {
      r.fail(
        `the ensemble lists no ${missing}; an ensemble lists its inputs and outputs in config.pbtxt`,
        undefined,
        missing,
      );
    }
    const modelBytes = options.modelBytes;
    if (!modelBytes) {
      r.fail(
        `the config lists no ${missing}; list the model's ${missing}s in config.pbtxt, or give the model file to read them from`,
        undefined,
        missing,
      );
    }
    const modelFile = options.modelFile ?? options.file;
    let io: ReturnType<typeof readModelFileIO>;
    try {
      io = readModelFileIO(modelBytes);
    } catch (e) {
      throw new ConfigError({
        kind: 'io',
        file: modelFile,
        field: missing,
        detail: `cannot read the model's inputs and outputs: ${(e as Error).message}`,
      });
    }
    try {
      if (input.length === 0) input = tensorsFromModel(io.inputs, 'input', maxBatchSize, runtime === 'ort');
      if (output.length === 0) output = tensorsFromModel(io.outputs, 'output', maxBatchSize, runtime === 'ort');
    } catch (e) {
      if (!(e instanceof ModelIOError)) throw e;
      throw new ConfigError({ kind: 'invalid', file: modelFile, field: missing, detail: e.message });
    }
    if (input.length === 0 || output.length === 0) {
      r.fail(
        `neither the config nor the model file lists any ${input.length === 0 ? 'input' : 'output'}`,
        undefined,
        missing,
      );
    }
  }

  const instanceGroup = readInstanceGroups(raw, name, r);
  const dynamicBatching = readDynamicBatching(raw, maxBatchSize, r);
  const parameters = readParameters(raw);

  let tiers: number[];
  try {
    tiers = deriveTiers({
      maxBatchSize,
      preferredBatchSize: raw.dynamic_batching ? nums(raw.dynamic_batching as Msg, 'preferred_batch_size') : [],
      parameters,
      inputNames: input.map((t) => t.name),
    });
  } catch (e) {
    if (!(e instanceof TierError)) throw e;
    // Point at the value string of the parameter at fault.
    const value = (raw.parameters as Msg | undefined)?.[e.key] as Msg | undefined;
    const at = (value && valuePosition(value, 'string_value')) ?? sourcePosition(raw, 'parameters', e.key);
    r.fail(e.detail, at, `parameters["${e.key}"]`);
  }

  let gears: GearSet | undefined;
  try {
    gears = parseGearSet({ maxBatchSize, input, output, parameters });
  } catch (e) {
    if (!(e instanceof TierError)) throw e;
    const value = (raw.parameters as Msg | undefined)?.[e.key] as Msg | undefined;
    const at = (value && valuePosition(value, 'string_value')) ?? sourcePosition(raw, 'parameters', e.key);
    r.fail(e.detail, at, `parameters["${e.key}"]`);
  }
  // Shape gears: the batch sizes are the gears' own.
  if (gears) tiers = [...new Set(gears.gears.map((g) => g.batch))].sort((a, b) => a - b);

  let ge: GeParameters | undefined;
  let placement: PlacementParameters | undefined;
  try {
    if (runtime === 'ge') ge = parseGeParameters(parameters);
    placement = ge ?? parsePlacementParameters(parameters);
  } catch (e) {
    if (!(e instanceof GeParameterError)) throw e;
    const value = (raw.parameters as Msg | undefined)?.[e.key] as Msg | undefined;
    const at = (value && valuePosition(value, 'string_value')) ?? sourcePosition(raw, 'parameters', e.key);
    r.fail(e.detail, at, `parameters["${e.key}"]`);
  }

  const config: ModelConfig = {
    name,
    platform,
    backend,
    runtime,
    maxBatchSize,
    input,
    output,
    instanceGroup,
    ...(dynamicBatching ? { dynamicBatching } : {}),
    tiers,
    ...(gears ? { gears } : {}),
    ...(ge ? { ge } : {}),
    ...(placement ? { placement } : {}),
    ...(runtime === 'ensemble' ? { ensemble: readEnsemble(raw, options.file, input, output) } : {}),
    defaultModelFilename: str(raw, 'default_model_filename') || DEFAULT_MODEL_FILENAME,
    parameters,
    versionPolicy: readVersionPolicy(raw, r),
    warmup: readWarmup(raw, maxBatchSize, tiers, gears, input, r),
    responseCache: bool((raw.response_cache as Msg | undefined) ?? {}, 'enable'),
    warnings,
    raw,
  };
  return deepFreeze(config);
}

function readRuntime(raw: Msg, r: Reader): { runtime: Runtime; platform: string; backend: string } {
  const backend = str(raw, 'backend');
  const platform = str(raw, 'platform');
  const known = Object.keys(RUNTIMES)
    .map((k) => `"${k}"`)
    .join(', ');
  const lookup = (field: 'backend' | 'platform', value: string): Runtime => {
    const runtime = Object.hasOwn(RUNTIMES, value) ? RUNTIMES[value] : undefined;
    if (!runtime) {
      r.fail(
        `${field} '${value}' is not one GE Mesh serves; use ${known} ("onnxruntime" runs on CPU, "npu_ge" on Ascend NPUs)${field === 'platform' ? ', or platform "ensemble" for a pipeline of models' : ''}`,
        valuePosition(raw, field),
        field,
      );
    }
    return runtime;
  };
  if (platform === 'ensemble') {
    if (backend !== '') {
      r.fail(
        `an ensemble runs no backend of its own; remove backend '${backend}'`,
        valuePosition(raw, 'backend'),
        'backend',
      );
    }
    return { runtime: 'ensemble', platform, backend };
  }
  if (backend === '' && platform === '') {
    r.fail(
      `the config sets neither 'backend' nor 'platform'; add backend: "onnxruntime" or backend: "npu_ge"`,
      undefined,
      'backend',
    );
  }
  const fromBackend = backend !== '' ? lookup('backend', backend) : undefined;
  const fromPlatform = platform !== '' ? lookup('platform', platform) : undefined;
  if (fromBackend && fromPlatform && fromBackend !== fromPlatform) {
    r.fail(
      `platform '${platform}' and backend '${backend}' name different runtimes; remove one of them`,
      valuePosition(raw, 'platform'),
      'platform',
    );
  }
  const runtime = (fromBackend ?? fromPlatform) as Runtime;
  return {
    runtime,
    // Triton's loader completes the onnxruntime backend's platform; metadata and /config show it.
    platform: platform || (runtime === 'ort' ? 'onnxruntime_onnx' : backend),
    backend: backend || (runtime === 'ort' ? 'onnxruntime' : 'npu_ge'),
  };
}

function readTensors(raw: Msg, role: 'input' | 'output', maxBatchSize: number, r: Reader): TensorConfig[] {
  const seen = new Map<string, number>();
  return list(raw, role).map((m, i) => {
    const path = `${role}[${i}]`;
    const at = sourcePosition(raw, role, i);
    const name = str(m, 'name');
    if (name === '') r.fail(`${path} needs a 'name'`, at, `${path}.name`);
    const prior = seen.get(name);
    if (prior !== undefined) {
      r.fail(`${role} name '${name}' is used twice (also ${role}[${prior}])`, valuePosition(m, 'name'), `${path}.name`);
    }
    seen.set(name, i);
    const typeName = str(m, 'data_type');
    const dataType = typeName === '' ? undefined : dataTypeFromConfig(typeName);
    if (!dataType) {
      r.fail(
        `${role} '${name}' needs a 'data_type' (e.g. data_type: TYPE_FP32)`,
        valuePosition(m, 'data_type') ?? at,
        `${path}.data_type`,
      );
    }
    const dims = nums(m, 'dims');
    if (dims.length === 0) {
      r.fail(
        `${role} '${name}' needs 'dims' (its shape${maxBatchSize > 0 ? ' without the batch dim' : ''}, -1 for a variable dim)`,
        sourcePosition(m, 'dims') ?? at,
        `${path}.dims`,
      );
    }
    checkDims(dims, m, 'dims', `${role} '${name}'`, `${path}.dims`, r);
    const tensor: {
      -readonly [K in keyof TensorConfig]: TensorConfig[K];
    } = { name, dataType, dims, optional: role === 'input' ? bool(m, 'optional') : false };
    const reshapeMsg = m.reshape as Msg | undefined;
    if (reshapeMsg) {
      const shape = nums(reshapeMsg, 'shape');
      checkDims(shape, reshapeMsg, 'shape', `${role} '${name}' reshape`, `${path}.reshape.shape`, r);
      if (shape.length === 0 && maxBatchSize === 0) {
        r.fail(
          `${role} '${name}' has an empty reshape, but max_batch_size is 0, so the tensor would always be empty; remove the reshape or set max_batch_size`,
          sourcePosition(m, 'reshape'),
          `${path}.reshape`,
        );
      }
      // As Triton compares them: the runs of fixed dims between variable-size (-1) dims must hold
      // as many elements in both, so [2,4,-1,6] may become [8,-1,1,6] but not [8,-1].
      const runs = (xs: number[]) => {
        const out = [1];
        for (const d of xs) {
          if (d === -1) out.push(1);
          else out[out.length - 1] = (out[out.length - 1] as number) * d;
        }
        return out;
      };
      const [a, b] = [runs(dims), runs(shape)];
      const problem =
        a.length !== b.length
          ? `has ${b.length - 1} variable-size dims but dims [${dims.join(',')}] have ${a.length - 1}; they must have as many`
          : a.length === 1 && a[0] !== b[0]
            ? `has ${b[0]} elements but dims [${dims.join(',')}] have ${a[0]}; they must hold the same number`
            : a.some((n, i) => n !== b[i])
              ? `holds ${b.join(', ')} elements around its variable-size dims, but dims [${dims.join(',')}] hold ${a.join(', ')}; each run must hold the same number`
              : undefined;
      if (problem)
        r.fail(
          `${role} '${name}' reshape [${shape.join(',')}] ${problem}`,
          sourcePosition(m, 'reshape'),
          `${path}.reshape`,
        );
      tensor.reshape = shape;
    }
    const format = str(m, 'format');
    if (format === 'FORMAT_NHWC' || format === 'FORMAT_NCHW') {
      if (dims.length !== 3) {
        r.fail(
          `${role} '${name}' has format ${format}, which needs exactly 3 dims`,
          valuePosition(m, 'format'),
          `${path}.format`,
        );
      }
      tensor.format = format;
    }
    if (bool(m, 'allow_ragged_batch')) tensor.allowRaggedBatch = true;
    const label = str(m, 'label_filename');
    if (label !== '') tensor.labelFilename = label;
    return tensor;
  });
}

function checkDims(dims: number[], m: Msg, field: string, what: string, path: string, r: Reader): void {
  dims.forEach((d, j) => {
    if (d < 1 && d !== -1) {
      r.fail(
        `${what} has dim ${d}; a dim must be >= 1, or -1 for a variable size`,
        sourcePosition(m, field, j),
        `${path}[${j}]`,
      );
    }
  });
}

const GROUP_KINDS = new Set(['KIND_AUTO', 'KIND_GPU', 'KIND_CPU', 'KIND_MODEL']);

function readInstanceGroups(raw: Msg, modelName: string, r: Reader): InstanceGroupConfig[] {
  const groups = list(raw, 'instance_group');
  // Triton: no group at all means one group of the default count.
  if (groups.length === 0) return [{ name: modelName, kind: 'KIND_AUTO', count: 1, gpus: [] }];
  return groups.map((g, i) => {
    const kind = (str(g, 'kind') || 'KIND_AUTO') as InstanceGroupConfig['kind'];
    if (!GROUP_KINDS.has(kind)) throw new Error(`schema allowed instance kind ${kind}`);
    const gpus = nums(g, 'gpus');
    const name = str(g, 'name') || `${modelName}_${i}`;
    if ((kind === 'KIND_CPU' || kind === 'KIND_MODEL') && gpus.length > 0) {
      r.fail(
        `instance group '${name}' has kind ${kind} but lists gpus; remove 'gpus' or use KIND_GPU`,
        sourcePosition(g, 'gpus'),
        `instance_group[${i}].gpus`,
      );
    }
    // Triton treats a count below 1 as unset.
    const count = Math.max(1, num(g, 'count'));
    return { name, kind, count, gpus };
  });
}

/**
 * `model_warmup`, checked here so a bad entry fails the load with its line:
 * batch_size within the largest tier, inputs the model has, each with a
 * fixed-size data_type, its dims (every one given, and the config's where
 * the config fixes them) and a source of data, and for a model with gears a
 * shape some gear runs. A sample of batch_size 0 (unset) is skipped, as
 * Triton skips it. An input_data_file is read (and its size checked) when the
 * warmup runs.
 */
function readWarmup(
  raw: Msg,
  maxBatchSize: number,
  tiers: readonly number[],
  gears: GearSet | undefined,
  modelInputs: readonly TensorConfig[],
  r: Reader,
): WarmupConfig[] {
  const largest = tiers[tiers.length - 1] ?? 1;
  const samples = list(raw, 'model_warmup').map((w, k): WarmupConfig | undefined => {
    const name = str(w, 'name') || `model_warmup[${k}]`;
    const field = `model_warmup[${k}]`;
    if (num(w, 'batch_size') === 0) return undefined;
    const rows = maxBatchSize > 0 ? num(w, 'batch_size') : 1;
    if (rows > largest) {
      r.fail(
        `warmup '${name}' has batch_size ${rows}, above the largest tier ${largest}; lower it or add a tier`,
        valuePosition(w, 'batch_size'),
        `${field}.batch_size`,
      );
    }
    const inputs = Object.entries((w.inputs as Record<string, Msg> | undefined) ?? {}).map(
      ([input, spec]): WarmupInput => {
        const at = `${field}.inputs["${input}"]`;
        const declared = modelInputs.find((i) => i.name === input);
        if (!declared) {
          r.fail(
            `warmup '${name}' names input '${input}', which the model does not have (inputs: ${modelInputs.map((i) => i.name).join(', ')})`,
            sourcePosition(w, 'inputs'),
            at,
          );
        }
        const dims = nums(spec, 'dims').map(Number);
        const fits =
          dims.length === declared.dims.length &&
          dims.every((d, i) => d >= 1 && [d, -1].includes(declared.dims[i] as number));
        if (!fits) {
          r.fail(
            `warmup '${name}' input '${input}' has dims [${dims.join(',')}]; the model's are [${declared.dims.join(',')}] (batch dim excluded), and a warmup sample gives every dim its size`,
            valuePosition(spec, 'dims') ?? sourcePosition(w, 'inputs'),
            `${at}.dims`,
          );
        }
        if (spec.zero_data === undefined && spec.random_data === undefined && !str(spec, 'input_data_file')) {
          r.fail(
            `warmup '${name}' input '${input}' sets no data; set zero_data: true, random_data: true or input_data_file`,
            sourcePosition(w, 'inputs'),
            at,
          );
        }
        const dataType = dataTypeFromConfig(str(spec, 'data_type'));
        if (!dataType || elementSize(dataType) === 0) {
          r.fail(
            `warmup '${name}' input '${input}' has data_type ${str(spec, 'data_type') || 'unset'}; warmup needs a fixed-size type (TYPE_FP32, TYPE_INT64, …)`,
            valuePosition(spec, 'data_type') ?? sourcePosition(w, 'inputs'),
            `${field}.inputs["${input}"].data_type`,
          );
        }
        const file = str(spec, 'input_data_file');
        const data: WarmupData = file
          ? { kind: 'file', file }
          : bool(spec, 'random_data')
            ? { kind: 'random' }
            : { kind: 'zero' };
        return { name: input, dataType, dims, data };
      },
    );
    if (gears) {
      const dims = Object.fromEntries(inputs.filter((i) => gears.inputs.includes(i.name)).map((i) => [i.name, i.dims]));
      if (!gearFor(gears, [{ rows, dims }])) {
        const shapes = inputs.map((i) => `${i.name} [${[...(maxBatchSize > 0 ? [rows] : []), ...i.dims].join(',')}]`);
        r.fail(
          `warmup '${name}' (${shapes.join(', ')}) fits no gear of the model (gears: ${describeGears(gears)}); give it a gear's shape`,
          sourcePosition(w, 'inputs'),
          `${field}.inputs`,
        );
      }
    }
    return { name, rows, count: Math.max(1, num(w, 'count')), inputs };
  });
  return samples.filter((w): w is WarmupConfig => w !== undefined);
}

function readQueuePolicy(m: Msg | undefined): QueuePolicy {
  if (!m) return DEFAULT_QUEUE_POLICY;
  return {
    timeoutAction: (str(m, 'timeout_action') || 'REJECT') as TimeoutAction,
    defaultTimeoutMicroseconds: num(m, 'default_timeout_microseconds'),
    allowTimeoutOverride: bool(m, 'allow_timeout_override'),
    maxQueueSize: num(m, 'max_queue_size'),
  };
}

function readDynamicBatching(raw: Msg, maxBatchSize: number, r: Reader): DynamicBatchingConfig | undefined {
  const db = raw.dynamic_batching as Msg | undefined;
  if (!db) return undefined;
  const preferred = nums(db, 'preferred_batch_size');
  preferred.forEach((size, i) => {
    const at = sourcePosition(db, 'preferred_batch_size', i);
    const field = `dynamic_batching.preferred_batch_size[${i}]`;
    if (size <= 0) r.fail(`preferred batch size ${size} must be > 0`, at, field);
    if (size > maxBatchSize) {
      r.fail(
        `preferred batch size ${size} is above max_batch_size ${maxBatchSize}, so no batch can reach it; lower it or raise max_batch_size`,
        at,
        field,
      );
    }
  });

  const levels = num(db, 'priority_levels');
  const defaultLevel = num(db, 'default_priority_level');
  const policies = (db.priority_queue_policy as Record<string, Msg> | undefined) ?? {};
  if (levels > 0) {
    if (defaultLevel < 1 || defaultLevel > levels) {
      r.fail(
        `default_priority_level must be in [1, ${levels}] when priority_levels is ${levels}, found ${defaultLevel}`,
        valuePosition(db, 'default_priority_level') ?? valuePosition(db, 'priority_levels'),
        'dynamic_batching.default_priority_level',
      );
    }
    for (const key of Object.keys(policies)) {
      const level = Number(key);
      if (level < 1 || level > levels) {
        r.fail(
          `priority_queue_policy has level ${key}, outside [1, ${levels}] (priority_levels is ${levels})`,
          sourcePosition(db, 'priority_queue_policy', key),
          `dynamic_batching.priority_queue_policy[${key}]`,
        );
      }
    }
  }

  const preserveOrdering = bool(db, 'preserve_ordering');
  const defaultQueuePolicy = readQueuePolicy(db.default_queue_policy as Msg | undefined);
  const priorityQueuePolicy = new Map(
    Object.entries(policies)
      .map(([k, v]) => [Number(k), readQueuePolicy(v)] as const)
      .sort((a, b) => a[0] - b[0]),
  );
  if (preserveOrdering) {
    if (levels > 1) {
      r.fail(
        `preserve_ordering allows only one priority level, but priority_levels is ${levels}; set priority_levels to 0 or 1, or turn preserve_ordering off`,
        valuePosition(db, 'preserve_ordering'),
        'dynamic_batching.preserve_ordering',
      );
    }
    const delaying = (p: QueuePolicy) => p.timeoutAction === 'DELAY' && p.defaultTimeoutMicroseconds !== 0;
    const badKey = [...priorityQueuePolicy].find(([, p]) => delaying(p))?.[0];
    if (delaying(defaultQueuePolicy) || badKey !== undefined) {
      r.fail(
        `preserve_ordering cannot be combined with a queue policy whose timeout_action is DELAY and whose timeout is not 0; use REJECT or turn preserve_ordering off`,
        badKey === undefined
          ? (sourcePosition(db, 'default_queue_policy') ?? valuePosition(db, 'preserve_ordering'))
          : sourcePosition(db, 'priority_queue_policy', String(badKey)),
        badKey === undefined
          ? 'dynamic_batching.default_queue_policy'
          : `dynamic_batching.priority_queue_policy[${badKey}]`,
      );
    }
  }

  return {
    // Triton: an empty list means [max_batch_size]. Sorted, as Triton's batcher keeps them in a set.
    preferredBatchSize:
      preferred.length > 0 ? [...new Set(preferred)].sort((a, b) => a - b) : maxBatchSize > 0 ? [maxBatchSize] : [],
    preferredBatchSizeListed: 'preferred_batch_size' in db,
    maxQueueDelayMicroseconds: num(db, 'max_queue_delay_microseconds'),
    preserveOrdering,
    priorityLevels: levels,
    defaultPriorityLevel: defaultLevel,
    defaultQueuePolicy,
    priorityQueuePolicy: frozenMap(priorityQueuePolicy),
  };
}

function readParameters(raw: Msg): ReadonlyMap<string, string> {
  const params = (raw.parameters as Record<string, Msg> | undefined) ?? {};
  return frozenMap(Object.entries(params).map(([k, v]) => [k, str(v, 'string_value')] as const));
}

/** The config's version_policy with Triton's default (latest 1); throws ConfigError when it can serve nothing. */
export function versionPolicyOf(raw: TextMessage, file: string): VersionPolicy {
  const r: Reader = new Reader(file);
  return readVersionPolicy(raw, r);
}

function readVersionPolicy(raw: Msg, r: Reader): VersionPolicy {
  const vp = raw.version_policy as Msg | undefined;
  if (!vp || vp.latest) {
    const latest = vp?.latest as Msg | undefined;
    const numVersions = latest ? num(latest, 'num_versions') : 1;
    if (numVersions < 1) {
      r.fail(
        'version_policy latest needs num_versions >= 1 (with 0 no version would be served)',
        (latest && valuePosition(latest, 'num_versions')) ?? sourcePosition(vp as Msg, 'latest'),
        'version_policy.latest.num_versions',
      );
    }
    return { kind: 'latest', numVersions };
  }
  if (vp.all) return { kind: 'all' };
  if (vp.specific) {
    const specific = vp.specific as Msg;
    const versions = nums(specific, 'versions');
    if (versions.length === 0) {
      r.fail(
        'version_policy specific lists no versions; add versions: [1]',
        sourcePosition(vp, 'specific'),
        'version_policy.specific.versions',
      );
    }
    versions.forEach((v, i) => {
      if (v < 1) {
        r.fail(
          `version_policy specific lists version ${v}; versions are numbers >= 1`,
          sourcePosition(specific, 'versions', i),
          `version_policy.specific.versions[${i}]`,
        );
      }
    });
    return { kind: 'specific', versions: [...new Set(versions)].sort((a, b) => b - a) };
  }
  // `version_policy {}`: no policy chosen, which Triton serves as `all` (its `latest { 1 }` default
  // fills in only when the field is absent).
  return { kind: 'all' };
}

/** A Map whose mutators throw, so a frozen config cannot be changed through it. */
function frozenMap<K, V>(entries: Iterable<readonly [K, V]>): ReadonlyMap<K, V> {
  const map = new Map(entries);
  const refuse = () => {
    throw new TypeError('model config maps are read-only');
  };
  for (const method of ['set', 'delete', 'clear']) Object.defineProperty(map, method, { value: refuse });
  return Object.freeze(map);
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
