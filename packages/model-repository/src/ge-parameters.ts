import { GE_DYNAMIC_DIMS_KEY, GE_INPUT_SHAPE_KEY, GEAR_PARAMETER_PREFIX } from './tiers.js';

/**
 * The Triton GE backend's `parameters` for an `npu_ge` model, checked and
 * sorted into what the `ge` runtime applies. Same keys and spellings as the
 * GE backend, so its configs load unchanged; differences, on purpose:
 * - an unknown or malformed key is a load error naming the key (the backend
 *   ignores unknown keys and fails late on bad integers);
 * - a bare `ge.<X>` key applies to this model's GE sessions (the backend
 *   silently drops it from config.pbtxt; process-wide GEInitialize options
 *   come from the worker's --ge-options flag or GE_NPU_CONFIG);
 * - the gear keys (`graph.ge.inputShape`, `graph.ge.dynamicDims`,
 *   `graph.ge.dynamicNodeType`) define the batch tiers, each compiled as its
 *   own static graph, so they are not passed to GE;
 * - `instance_exec_blocks` above 1 is refused: the backend's split of one
 *   request across streams corrupts outputs, and the mesh spreads load
 *   across lanes by batch instead.
 */
/**
 * Where a model runs and with how many lanes: the GE backend's device keys,
 * read the same way for every runtime (a CPU worker is a device too).
 */
export interface PlacementParameters {
  /** Devices that may load the model; undefined = every device. */
  readonly deviceIds?: readonly number[];
  /** Streams (lanes) per device; undefined = derived from instance_group. */
  readonly deviceExecBlocks?: number;
  readonly instanceExecBlocks: number;
}

export interface GeParameters extends PlacementParameters {
  readonly staticModel: boolean;
  readonly dumpGraph: boolean;
  readonly dumpData: boolean;
  readonly profiling: 'off' | 'on' | 'dynamic';
  /** `ge.aicoreNum` per stream ("cube|vector"), when set. */
  readonly aicoreNum?: string;
  readonly sessionOptions: Readonly<Record<string, string>>;
  readonly graphOptions: Readonly<Record<string, string>>;
}

export class GeParameterError extends Error {
  constructor(
    readonly key: string,
    readonly detail: string,
  ) {
    super(detail);
  }
}

const GEAR_KEYS = new Set([GE_INPUT_SHAPE_KEY, GE_DYNAMIC_DIMS_KEY, 'graph.ge.dynamicNodeType']);

const PRECISION_V2 = [
  'fp16',
  'origin',
  'cube_fp16in_fp32out',
  'mixed_float16',
  'mixed_bfloat16',
  'cube_hif8',
  'mixed_hif8',
];
const PRECISION_V1 = [
  'force_fp16',
  'force_fp32',
  'cube_fp16in_fp32out',
  'allow_mix_precision',
  'allow_fp32_to_fp16',
  'must_keep_origin_dtype',
  'allow_mix_precision_fp16',
  'allow_mix_precision_bf16',
  'allow_fp32_to_bf16',
];

/** Values GE itself checks (a bad one fails GE's init), checked here first with a clearer message. */
const CHECKED_OPTIONS: Record<string, readonly string[] | RegExp> = {
  'ge.exec.precision_mode_v2': PRECISION_V2,
  'ge.exec.precision_mode': PRECISION_V1,
  'ge.aicoreNum': /^[0-9]+(\|[0-9]*)?$/,
  'ge.graphRunMode': ['0', '1'],
  'ge.constLifecycle': ['session', 'graph'],
  'ge.exec.staticMemoryPolicy': ['0', '1', '2', '3', '4'],
};

function flag(key: string, v: string): boolean {
  if (/^(1|true)$/i.test(v)) return true;
  if (/^(0|false)$/i.test(v)) return false;
  throw new GeParameterError(key, `parameter '${key}' must be "1" or "0" (or true/false), got "${v}"`);
}

function int(key: string, v: string, min: number): number {
  if (!/^-?[0-9]+$/.test(v.trim()) || Number(v) < min) {
    throw new GeParameterError(key, `parameter '${key}' must be an integer >= ${min}, got "${v}"`);
  }
  return Number(v);
}

export function checkGeOption(key: string, geKey: string, v: string): void {
  const rule = CHECKED_OPTIONS[geKey];
  if (!rule) return;
  const ok = Array.isArray(rule) ? rule.includes(v) : (rule as RegExp).test(v);
  if (!ok) {
    const allowed = Array.isArray(rule) ? `one of ${rule.join(', ')}` : 'of the form "cube|vector", e.g. "12|10"';
    throw new GeParameterError(key, `parameter '${key}' has the invalid value "${v}"; it must be ${allowed}`);
  }
}

const PLACEMENT_KEYS = new Set(['device_ids', 'device_exec_blocks', 'instance_exec_blocks']);

/** The device keys of any model's parameters (`device_ids`, `device_exec_blocks`, `instance_exec_blocks`). */
export function parsePlacementParameters(params: ReadonlyMap<string, string>): PlacementParameters {
  let deviceIds: number[] | undefined;
  let deviceExecBlocks: number | undefined;
  let instanceExecBlocks = 1;
  for (const [key, value] of params) {
    const v = value.trim();
    if (key === 'device_ids') {
      if (v === '') continue;
      deviceIds = v.split(',').map((s) => int(key, s.trim(), 0));
      if (new Set(deviceIds).size !== deviceIds.length) {
        throw new GeParameterError(key, `parameter 'device_ids' lists a device twice: "${v}"`);
      }
    } else if (key === 'device_exec_blocks') {
      const n = int(key, v, -1);
      if (n === 0)
        throw new GeParameterError(key, `parameter 'device_exec_blocks' must be -1 (derive) or >= 1, got "0"`);
      deviceExecBlocks = n === -1 ? undefined : n;
    } else if (key === 'instance_exec_blocks') {
      instanceExecBlocks = int(key, v, 1);
    }
  }
  return {
    ...(deviceIds ? { deviceIds } : {}),
    ...(deviceExecBlocks !== undefined ? { deviceExecBlocks } : {}),
    instanceExecBlocks,
  };
}

export function parseGeParameters(params: ReadonlyMap<string, string>): GeParameters {
  const placement = parsePlacementParameters(params);
  if (placement.instanceExecBlocks !== 1) {
    throw new GeParameterError(
      'instance_exec_blocks',
      `parameter 'instance_exec_blocks' must be 1: splitting one request across streams is not supported; raise instance_group count or device_exec_blocks to add streams`,
    );
  }
  let staticModel = false;
  let dumpGraph = false;
  let dumpData = false;
  let profiling: GeParameters['profiling'] = 'off';
  const sessionOptions: Record<string, string> = {};
  const graphOptions: Record<string, string> = {};

  for (const [key, value] of params) {
    const v = value.trim();
    if (key.startsWith('session.') || key.startsWith('ge.')) {
      const geKey = key.startsWith('session.') ? key.slice('session.'.length) : key;
      checkGeOption(key, geKey, v);
      sessionOptions[geKey] = v;
    } else if (key.startsWith('graph.')) {
      if (GEAR_KEYS.has(key)) continue;
      const geKey = key.slice('graph.'.length);
      checkGeOption(key, geKey, v);
      graphOptions[geKey] = v;
    } else if (PLACEMENT_KEYS.has(key) || key.startsWith(GEAR_PARAMETER_PREFIX)) {
      // Read by parsePlacementParameters above, or by parseGearSet (gears.ts).
    } else if (key === 'static_model') {
      staticModel = flag(key, v);
    } else if (key === 'dump_graph') {
      dumpGraph = flag(key, v);
    } else if (key === 'dump_data') {
      dumpData = flag(key, v);
    } else if (key === 'profiling') {
      if (v === 'dynamic') profiling = 'dynamic';
      else profiling = flag(key, v) ? 'on' : 'off';
    } else if (key.startsWith('global.')) {
      throw new GeParameterError(
        key,
        `parameter '${key}': process-wide GE options are set with the worker's --ge-options flag or GE_NPU_CONFIG, not per model`,
      );
    } else {
      throw new GeParameterError(
        key,
        `unknown parameter '${key}' for an npu_ge model; known: device_ids, device_exec_blocks, instance_exec_blocks, static_model, dump_graph, dump_data, profiling, gear.pad_value.*, gear.output_dims.*, and session.*, graph.*, ge.* options`,
      );
    }
  }
  const levels = [sessionOptions, graphOptions];
  if (levels.some((o) => 'ge.exec.precision_mode' in o) && levels.some((o) => 'ge.exec.precision_mode_v2' in o)) {
    throw new GeParameterError(
      'session.ge.exec.precision_mode_v2',
      'set either ge.exec.precision_mode_v2 or ge.exec.precision_mode, not both (GE refuses the pair, E10056)',
    );
  }
  if (dumpData) {
    sessionOptions['ge.exec.enableDump'] ??= '1';
    sessionOptions['ge.exec.dumpPath'] ??= './dump_data';
    sessionOptions['ge.exec.dumpMode'] ??= 'all';
  }
  const aicoreNum = sessionOptions['ge.aicoreNum'];
  return {
    ...placement,
    staticModel,
    dumpGraph,
    dumpData,
    profiling,
    ...(aicoreNum !== undefined ? { aicoreNum } : {}),
    sessionOptions,
    graphOptions,
  };
}

/**
 * Process-wide GEInitialize options: `GE_NPU_CONFIG` (a JSON object, as the
 * GE backend reads it) overlaid with the worker's --ge-options (JSON).
 * Numbers are written as integers where they are integers (the backend
 * prints them as "12.000000", which GE then has to parse).
 */
export function parseGlobalGeOptions(
  fromEnv: string | undefined,
  fromFlag: string | undefined,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [source, text] of [
    ['GE_NPU_CONFIG', fromEnv],
    ['--ge-options', fromFlag],
  ] as const) {
    if (!text) continue;
    let obj: unknown;
    try {
      obj = JSON.parse(text);
    } catch (err) {
      throw new GeParameterError(source, `${source} is not valid JSON: ${(err as Error).message}`);
    }
    if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) {
      throw new GeParameterError(source, `${source} must be a JSON object of GE option keys to values`);
    }
    for (const [k, v] of Object.entries(obj)) {
      if (!['string', 'number', 'boolean'].includes(typeof v)) {
        throw new GeParameterError(k, `${source}: option '${k}' must be a string, number or boolean`);
      }
      checkGeOption(k, k, String(v));
      out[k] = String(v);
    }
  }
  return out;
}
