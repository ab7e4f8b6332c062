import { readModelIO } from '@ge-mesh/onnx';
import type { DataType } from '@ge-mesh/protocol';
import type { TensorConfig } from './model-config.js';
import {
  GE_DYNAMIC_DIMS_KEY,
  GE_INPUT_SHAPE_KEY,
  GEAR_PARAMETER_PREFIX,
  parseGears,
  parseInputShape,
  TierError,
} from './tiers.js';

/** `gear.pad_value.<input>`: the value a request's input is padded with up to a gear's dims. */
export const PAD_VALUE_PREFIX = `${GEAR_PARAMETER_PREFIX}pad_value.`;
/** `gear.output_dims.<output>`: which output dims follow which input dims, where the model file does not say. */
export const OUTPUT_DIMS_PREFIX = `${GEAR_PARAMETER_PREFIX}output_dims.`;

/** One compiled shape: a value for every dim the gears fill. */
export interface Gear {
  /** Its place in `graph.ge.dynamicDims` (0-based). */
  readonly index: number;
  /** Rows it runs (its batch dim); 1 for a model without a batch dim. */
  readonly batch: number;
  /** The dims of one row of every model input (the whole shape when the model has no batch dim). */
  readonly dims: Readonly<Record<string, readonly number[]>>;
}

/** An output dim that is as long as an input dim, so a padded input dim pads it too. */
export interface OutputDimLink {
  /** The output dim, counted in the full shape (0 is the batch dim of a batched model). */
  readonly dim: number;
  readonly input: string;
  /** The input dim, counted in the full shape. */
  readonly inputDim: number;
}

/**
 * Gears over non-batch dims (`graph.ge.inputShape` + `graph.ge.dynamicDims`
 * with a -1 beyond the batch dim): the model is compiled once per gear, and a
 * request runs on the smallest gear that holds it.
 */
export interface GearSet {
  /** In `graph.ge.dynamicDims` order. */
  readonly gears: readonly Gear[];
  /** The inputs `graph.ge.inputShape` lists (the others have fixed dims). */
  readonly inputs: readonly string[];
  /** Inputs that may be padded up to a gear, and with what (`gear.pad_value.<input>`). */
  readonly padValues: Readonly<Record<string, number>>;
  /** Output dim links the config states (`gear.output_dims.<output>`), by output. */
  readonly statedOutputDims: Readonly<Record<string, readonly OutputDimLink[]>>;
  readonly batched: boolean;
}

/** What picking a gear needs of a GearSet (a lane's copy carries only this). */
export type GearRules = Pick<GearSet, 'gears' | 'inputs' | 'padValues' | 'batched'>;

export interface GearSource {
  readonly maxBatchSize: number;
  readonly input: readonly TensorConfig[];
  readonly output: readonly TensorConfig[];
  readonly parameters: ReadonlyMap<string, string>;
}

/**
 * Reads shape gears from the GE backend's keys, checked against the config's
 * inputs; undefined when there are none (no keys, or gears over the batch dim
 * only, which are tiers: see tiers.ts). Throws TierError naming the key.
 */
export function parseGearSet(src: GearSource): GearSet | undefined {
  const shapeText = src.parameters.get(GE_INPUT_SHAPE_KEY);
  const dimsText = src.parameters.get(GE_DYNAMIC_DIMS_KEY);
  const batched = src.maxBatchSize > 0;
  const ownKeys = [...src.parameters.keys()].filter((k) => k.startsWith(GEAR_PARAMETER_PREFIX));
  const shapes = shapeText !== undefined && dimsText !== undefined ? parseInputShape(shapeText, []) : undefined;
  const shapeGears = shapes?.some((s) => s.dims.some((d, i) => d === -1 && (i > 0 || !batched))) ?? false;
  if (!shapes || !shapeGears) {
    const key = ownKeys[0];
    if (key !== undefined) {
      throw new TierError(
        key,
        `parameter '${key}' applies to gears over non-batch dims, but '${GE_INPUT_SHAPE_KEY}' has no -1 beyond the batch dim; remove it or add such gears`,
      );
    }
    return undefined;
  }
  const holes = shapes.reduce((n, s) => n + s.dims.filter((d) => d === -1).length, 0);
  const values = parseGears(dimsText as string, holes);
  const configs = new Map(src.input.map((t) => [t.name, t]));
  const seen = new Set<string>();
  for (const s of shapes) {
    const cfg = configs.get(s.name);
    if (!cfg) {
      throw new TierError(
        GE_INPUT_SHAPE_KEY,
        `'${GE_INPUT_SHAPE_KEY}' names '${s.name}', which is not an input of the model (inputs: ${src.input.map((t) => t.name).join(', ')})`,
      );
    }
    if (seen.has(s.name)) throw new TierError(GE_INPUT_SHAPE_KEY, `'${GE_INPUT_SHAPE_KEY}' lists '${s.name}' twice`);
    seen.add(s.name);
    const full = batched ? [-1, ...cfg.dims] : cfg.dims;
    if (s.dims.length !== full.length) {
      throw new TierError(
        GE_INPUT_SHAPE_KEY,
        `'${GE_INPUT_SHAPE_KEY}' gives '${s.name}' ${s.dims.length} dims, but its config shape ${fullShapeText(full)} has ${full.length}${batched ? ' (the batch dim first)' : ''}`,
      );
    }
    s.dims.forEach((d, i) => {
      const c = full[i] as number;
      if (d !== -1 && c !== -1 && d !== c) {
        throw new TierError(
          GE_INPUT_SHAPE_KEY,
          `'${GE_INPUT_SHAPE_KEY}' gives '${s.name}' dim ${i} the size ${d}, but its config shape ${fullShapeText(full)} fixes it at ${c}`,
        );
      }
    });
  }
  for (const t of src.input) {
    if (!seen.has(t.name) && t.dims.some((d) => d < 0)) {
      throw new TierError(
        GE_INPUT_SHAPE_KEY,
        `input '${t.name}' has a variable dim ${fullShapeText(t.dims)} but '${GE_INPUT_SHAPE_KEY}' does not list it; list it with a -1 where the gears fill it, or fix the dim in config.pbtxt`,
      );
    }
  }

  const gears: Gear[] = [];
  const texts = new Set<string>();
  values.forEach((g, index) => {
    let cursor = 0;
    const filled = shapes.map((s) => ({
      name: s.name,
      dims: s.dims.map((d) => (d === -1 ? (g[cursor++] as number) : d)),
    }));
    const gearText = g.join(',');
    if (texts.has(gearText)) throw new TierError(GE_DYNAMIC_DIMS_KEY, `gear "${gearText}" is listed twice`);
    texts.add(gearText);
    const dims: Record<string, readonly number[]> = {};
    let batch = 1;
    filled.forEach((f, i) => {
      const cfg = configs.get(f.name) as TensorConfig;
      const full = batched ? [-1, ...cfg.dims] : cfg.dims;
      f.dims.forEach((d, k) => {
        const c = full[k] as number;
        if (c !== -1 && d !== c) {
          throw new TierError(
            GE_DYNAMIC_DIMS_KEY,
            `gear "${gearText}" gives '${f.name}' dim ${k} the size ${d}, but its config shape ${fullShapeText(full)} fixes it at ${c}`,
          );
        }
      });
      if (batched) {
        const b = f.dims[0] as number;
        if (i > 0 && b !== batch) {
          throw new TierError(
            GE_DYNAMIC_DIMS_KEY,
            `gear "${gearText}" gives the inputs different batch sizes (${batch} and ${b}); a gear gives every input the same one`,
          );
        }
        batch = b;
      }
      dims[f.name] = batched ? f.dims.slice(1) : f.dims;
    });
    for (const t of src.input) if (!(t.name in dims)) dims[t.name] = [...t.dims];
    gears.push({ index, batch, dims });
  });
  const largest = Math.max(...gears.map((g) => g.batch));
  if (batched && largest < src.maxBatchSize) {
    throw new TierError(
      GE_DYNAMIC_DIMS_KEY,
      `the largest batch size in '${GE_DYNAMIC_DIMS_KEY}' is ${largest}, below max_batch_size ${src.maxBatchSize}: a batch of ${src.maxBatchSize} would fit no gear; add a gear of ${src.maxBatchSize} rows or lower max_batch_size to ${largest}`,
    );
  }

  const padValues: Record<string, number> = {};
  const statedOutputDims: Record<string, readonly OutputDimLink[]> = {};
  const outputs = new Map(src.output.map((t) => [t.name, t]));
  for (const key of ownKeys) {
    const value = (src.parameters.get(key) as string).trim();
    if (key.startsWith(PAD_VALUE_PREFIX)) {
      const name = key.slice(PAD_VALUE_PREFIX.length);
      const cfg = configs.get(name);
      if (!cfg || !seen.has(name)) {
        throw new TierError(
          key,
          `parameter '${key}' names '${name}', which is not an input '${GE_INPUT_SHAPE_KEY}' lists (${shapes.map((s) => s.name).join(', ')})`,
        );
      }
      padValues[name] = readPadValue(key, value, cfg.dataType);
    } else if (key.startsWith(OUTPUT_DIMS_PREFIX)) {
      const name = key.slice(OUTPUT_DIMS_PREFIX.length);
      const cfg = outputs.get(name);
      if (!cfg) {
        throw new TierError(
          key,
          `parameter '${key}' names '${name}', which is not an output of the model (outputs: ${src.output.map((t) => t.name).join(', ')})`,
        );
      }
      statedOutputDims[name] = readOutputDims(key, value, cfg.dims.length + (batched ? 1 : 0), batched, configs, seen);
    } else {
      throw new TierError(
        key,
        `unknown parameter '${key}'; gear parameters are '${PAD_VALUE_PREFIX}<input>' and '${OUTPUT_DIMS_PREFIX}<output>'`,
      );
    }
  }
  return { gears, inputs: shapes.map((s) => s.name), padValues, statedOutputDims, batched };
}

function fullShapeText(dims: readonly number[]): string {
  return `[${dims.join(',')}]`;
}

const INTEGER_RANGES: Partial<Record<DataType, [number, number]>> = {
  BOOL: [0, 1],
  INT8: [-128, 127],
  UINT8: [0, 255],
  INT16: [-32768, 32767],
  UINT16: [0, 65535],
  INT32: [-(2 ** 31), 2 ** 31 - 1],
  UINT32: [0, 2 ** 32 - 1],
  INT64: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  UINT64: [0, Number.MAX_SAFE_INTEGER],
};

function readPadValue(key: string, text: string, dataType: DataType): number {
  const v = Number(text);
  if (text === '' || !Number.isFinite(v)) {
    throw new TierError(key, `parameter '${key}' is "${text}"; a pad value is a number, e.g. "0"`);
  }
  const range = INTEGER_RANGES[dataType];
  if (range && (!Number.isInteger(v) || v < range[0] || v > range[1])) {
    throw new TierError(
      key,
      `parameter '${key}' is "${text}", which is not a ${dataType} value (an integer in [${range[0]}, ${range[1]}])`,
    );
  }
  if (dataType === 'BYTES') throw new TierError(key, `parameter '${key}': BYTES inputs cannot be padded`);
  return v;
}

/** "1=input_ids[1],2=input_ids[1]": output dim 1 follows input_ids dim 1; "" states that none does. */
function readOutputDims(
  key: string,
  text: string,
  rank: number,
  batched: boolean,
  inputs: ReadonlyMap<string, TensorConfig>,
  gearInputs: ReadonlySet<string>,
): OutputDimLink[] {
  if (text === '') return [];
  return text.split(',').map((entry) => {
    const m = /^\s*(\d+)\s*=\s*(.+)\[(\d+)\]\s*$/.exec(entry);
    if (!m) {
      throw new TierError(
        key,
        `parameter '${key}' entry "${entry}" is not of the form <output dim>=<input>[<input dim>], e.g. "1=input_ids[1]" (dims counted with the batch dim as 0)`,
      );
    }
    const dim = Number(m[1]);
    const input = (m[2] as string).trim();
    const inputDim = Number(m[3]);
    const cfg = inputs.get(input);
    if (!cfg || !gearInputs.has(input)) {
      throw new TierError(key, `parameter '${key}' entry "${entry}" names '${input}', which the gears do not fill`);
    }
    const inputRank = cfg.dims.length + (batched ? 1 : 0);
    const first = batched ? 1 : 0;
    if (dim < first || dim >= rank || inputDim < first || inputDim >= inputRank) {
      throw new TierError(
        key,
        `parameter '${key}' entry "${entry}" is out of range: output dims run ${first}..${rank - 1}, '${input}' dims ${first}..${inputRank - 1}${batched ? ' (0, the batch dim, is always sliced by rows)' : ''}`,
      );
    }
    return { dim, input, inputDim };
  });
}

/** The row dims of a request (or sample), by input name. */
export type RowDims = Readonly<Record<string, readonly number[]>>;

/** A request's share of a batch: its rows and the dims of one row of each input. */
export interface GearMember {
  readonly rows: number;
  readonly dims: RowDims;
}

/** Whether a row of `dims` runs on a gear of row dims `gear`: equal, or smaller where its input may be padded. */
function holds(set: GearRules, gear: RowDims, dims: RowDims): boolean {
  for (const name of set.inputs) {
    const g = gear[name] as readonly number[];
    const d = dims[name];
    if (!d || d.length !== g.length) return false;
    const pads = name in set.padValues;
    for (let i = 0; i < g.length; i++) {
      const gi = g[i] as number;
      const di = d[i] as number;
      if (di > gi || (di < gi && !pads)) return false;
    }
  }
  return true;
}

/** Elements of one row across the inputs the gears fill (the cost of a row). */
function rowElements(set: GearRules, dims: RowDims): number {
  let n = 0;
  for (const name of set.inputs) n += (dims[name] ?? []).reduce((a, b) => a * b, 1);
  return n;
}

/** The gear a batch runs on: the one with the fewest elements that holds every member and all their rows. */
export function gearFor(set: GearRules, members: readonly GearMember[]): Gear | undefined {
  const rows = members.reduce((n, m) => n + m.rows, 0);
  let best: Gear | undefined;
  let bestCost = Number.POSITIVE_INFINITY;
  for (const g of set.gears) {
    if (g.batch < rows || !members.every((m) => holds(set, g.dims, m.dims))) continue;
    const cost = g.batch * rowElements(set, g.dims);
    if (cost < bestCost) {
      best = g;
      bestCost = cost;
    }
  }
  return best;
}

/**
 * Requests of one class share batches: the class is a gear's row dims, and
 * its tiers are the batch sizes of the gears that hold a row of those dims
 * (same dims, or larger where the input may be padded).
 */
export interface GearClass {
  readonly key: string;
  readonly dims: RowDims;
  /** Ascending. */
  readonly tiers: readonly number[];
  /** The gear a batch of `tier` rows of this class runs on. */
  readonly gearOf: ReadonlyMap<number, Gear>;
}

const classCache = new WeakMap<GearRules, GearClass[]>();

export function gearClasses(set: GearRules): readonly GearClass[] {
  let classes = classCache.get(set);
  if (classes) return classes;
  classes = [];
  const keys = new Set<string>();
  for (const g of set.gears) {
    const key = rowKey(set, g.dims);
    if (keys.has(key)) continue;
    keys.add(key);
    const gearOf = new Map<number, Gear>();
    for (const h of set.gears) {
      if (!holds(set, h.dims, g.dims)) continue;
      const prev = gearOf.get(h.batch);
      if (!prev || rowElements(set, h.dims) < rowElements(set, prev.dims)) gearOf.set(h.batch, h);
    }
    classes.push({ key, dims: g.dims, tiers: [...gearOf.keys()].sort((a, b) => a - b), gearOf });
  }
  classCache.set(set, classes);
  return classes;
}

function rowKey(set: GearRules, dims: RowDims): string {
  return set.inputs.map((n) => `${n}:${(dims[n] ?? []).join('x')}`).join('|');
}

/**
 * The class a request joins: of the classes that hold its rows (padding only
 * where allowed) and have a gear with enough rows, the one with the fewest
 * elements per row. Undefined: no gear can run it.
 */
export function gearClassOf(set: GearRules, member: GearMember): GearClass | undefined {
  let best: GearClass | undefined;
  for (const c of gearClasses(set)) {
    if (!holds(set, c.dims, member.dims)) continue;
    if ((c.tiers[c.tiers.length - 1] ?? 0) < member.rows) continue;
    if (!best || rowElements(set, c.dims) < rowElements(set, best.dims)) best = c;
  }
  return best;
}

/** The gears as a user reads them: `input_ids [1,32], attention_mask [1,32]; ...` (full shapes). */
export function describeGears(set: GearRules): string {
  return set.gears
    .map((g) =>
      set.inputs
        .map((n) => `${n} [${(set.batched ? [g.batch, ...(g.dims[n] ?? [])] : (g.dims[n] ?? [])).join(',')}]`)
        .join(', '),
    )
    .join('; ');
}

/** Input elements of a batch as it runs on a gear (padding included), across the inputs the gears fill. */
export function gearElements(set: GearRules, gear: Gear): number {
  return gear.batch * rowElements(set, gear.dims);
}

/** Input elements of a request's rows (no padding), across the inputs the gears fill. */
export function memberElements(set: GearRules, member: GearMember): number {
  return member.rows * rowElements(set, member.dims);
}

/** A model file's tensor with the symbolic names of its dims (ONNX dim_param). */
export interface SymbolicTensor {
  readonly name: string;
  readonly dims: readonly number[];
  readonly dimParams: readonly (string | null)[];
}

/**
 * Which output dims follow which padded input dims, so a lane can cut a
 * request's outputs back to its unpadded size. Per output: the links the
 * config states, else those the model file's symbolic dim names give (an
 * output dim named like an input dim the gears fill follows it). A dim that
 * varies but cannot be traced is an error: its padded part cannot be told
 * from the answer. Only needed when some input may be padded.
 */
export function traceOutputDims(
  set: GearSet,
  io: { inputs: readonly SymbolicTensor[]; outputs: readonly SymbolicTensor[] },
  outputs: readonly TensorConfig[],
): Record<string, readonly OutputDimLink[]> {
  const links: Record<string, readonly OutputDimLink[]> = {};
  const padding = Object.keys(set.padValues).length > 0;
  // Symbolic input dim name -> the padded input dim it is (the first one found).
  const byParam = new Map<string, { input: string; inputDim: number }>();
  const first = set.batched ? 1 : 0;
  // Sizes of gear-filled inputs that are never padded: an output dim of that size is as run.
  const unpadded = new Set<string>();
  for (const name of set.inputs) {
    const t = io.inputs.find((i) => i.name === name);
    t?.dimParams.forEach((p, k) => {
      if (p === null || k < first) return;
      if (!(name in set.padValues)) unpadded.add(p);
      else if (!byParam.has(p)) byParam.set(p, { input: name, inputDim: k });
    });
  }
  for (const out of outputs) {
    const stated = set.statedOutputDims[out.name];
    if (stated) {
      links[out.name] = stated;
      continue;
    }
    if (!padding) {
      links[out.name] = [];
      continue;
    }
    const t = io.outputs.find((o) => o.name === out.name);
    if (!t) throw new GearTraceError(out.name, `the model file has no output '${out.name}'`);
    const found: OutputDimLink[] = [];
    for (let k = first; k < t.dims.length; k++) {
      if ((t.dims[k] as number) >= 0) continue;
      const p = t.dimParams[k] ?? null;
      const link = p === null ? undefined : byParam.get(p);
      if (link) {
        found.push({ dim: k, ...link });
        continue;
      }
      if (p !== null && unpadded.has(p)) continue;
      const named = p === null ? 'an unnamed variable size' : `the symbolic size '${p}', which no padded input dim has`;
      throw new GearTraceError(
        out.name,
        `output '${out.name}' dim ${k} has ${named}, so its padded part cannot be cut off; name it like the input dim it follows in the model, or state it with parameter '${OUTPUT_DIMS_PREFIX}${out.name}' (e.g. "${k}=${Object.keys(set.padValues)[0]}[1]", or "" when it follows no input dim)`,
      );
    }
    links[out.name] = found;
  }
  return links;
}

export class GearTraceError extends Error {
  constructor(
    readonly output: string,
    detail: string,
  ) {
    super(detail);
  }
}

/** traceOutputDims over a model file's bytes (its graph inputs and outputs are read, weights skipped). */
export function traceModelOutputDims(
  set: GearSet,
  modelBytes: Uint8Array,
  outputs: readonly TensorConfig[],
): Record<string, readonly OutputDimLink[]> {
  return traceOutputDims(set, readModelIO(modelBytes), outputs);
}

/** A request's row dims for the inputs the gears fill, from its tensors (full shapes). */
export function rowDimsOf(set: GearRules, inputs: readonly { name: string; shape: readonly number[] }[]): RowDims {
  const dims: Record<string, readonly number[]> = {};
  for (const t of inputs) if (set.inputs.includes(t.name)) dims[t.name] = set.batched ? t.shape.slice(1) : t.shape;
  return dims;
}
