/** The `parameters` keys through which the GE backend passes batch gears to GE's AddGraph. */
export const GE_INPUT_SHAPE_KEY = 'graph.ge.inputShape';
export const GE_DYNAMIC_DIMS_KEY = 'graph.ge.dynamicDims';
/** GE Mesh's own gear keys: `gear.pad_value.<input>`, `gear.output_dims.<output>` (gears.ts). */
export const GEAR_PARAMETER_PREFIX = 'gear.';

/** A tier rule violation, naming the parameters key at fault. */
export class TierError extends Error {
  constructor(
    readonly key: string,
    readonly detail: string,
  ) {
    super(detail);
  }
}

export interface TierSource {
  readonly maxBatchSize: number;
  /** `dynamic_batching.preferred_batch_size` as written (already checked to lie in [1, maxBatchSize]). */
  readonly preferredBatchSize: readonly number[];
  readonly parameters: ReadonlyMap<string, string>;
  /** The model's input names, to check the names `graph.ge.inputShape` uses. */
  readonly inputNames: readonly string[];
}

/**
 * Tiers are the static batch sizes a model's graphs are compiled for; the
 * batcher pads a batch up to the smallest tier that holds it and splits one
 * larger than the largest. They are sorted ascending, without duplicates:
 *
 * - `max_batch_size: 0` (no batch dim): `[1]`.
 * - (a) GE batch gears. When parameters `graph.ge.inputShape` gives every
 *   input it lists a -1 as its leading dim and nowhere else (e.g.
 *   `"image:-1,3,224,224"`) and `graph.ge.dynamicDims` lists gears (e.g.
 *   `"1;2;4;8"`: one gear per `;`, each with one value per -1, all equal),
 *   the tiers are those gears. A gear list whose largest gear is below
 *   `max_batch_size` is a load error naming `graph.ge.dynamicDims`: a request
 *   of the maximum size would fit no graph.
 * - (b) Otherwise, when `dynamic_batching.preferred_batch_size` is set: those
 *   sizes plus `max_batch_size`.
 * - (c) Otherwise: the powers of two below `max_batch_size`, plus
 *   `max_batch_size` (8 → 1, 2, 4, 8; 12 → 1, 2, 4, 8, 12).
 *
 * Gears over other dims (e.g. `"input_ids:-1,-1"` with `"1,32;8,128"`) are
 * shape gears (gears.ts): the tiers are then the gears' batch sizes, set by
 * the caller; here they are checked for form only.
 */
export function deriveTiers(src: TierSource): number[] {
  const gears = readGeGears(src);
  if (src.maxBatchSize === 0) return [1];
  if (gears) {
    const largest = gears[gears.length - 1] as number;
    if (largest < src.maxBatchSize) {
      throw new TierError(
        GE_DYNAMIC_DIMS_KEY,
        `the largest batch gear in '${GE_DYNAMIC_DIMS_KEY}' is ${largest}, below max_batch_size ${src.maxBatchSize}: a batch of ${src.maxBatchSize} would fit no graph; add a gear of ${src.maxBatchSize} or lower max_batch_size to ${largest}`,
      );
    }
    return gears;
  }
  if (src.preferredBatchSize.length > 0) return sortedUnique([...src.preferredBatchSize, src.maxBatchSize]);
  const tiers: number[] = [];
  for (let t = 1; t < src.maxBatchSize; t *= 2) tiers.push(t);
  tiers.push(src.maxBatchSize);
  return tiers;
}

function sortedUnique(xs: readonly number[]): number[] {
  return [...new Set(xs)].sort((a, b) => a - b);
}

export interface GeInputShape {
  readonly name: string;
  readonly dims: readonly number[];
}

/** The batch gears, sorted and unique; undefined when the GE keys describe no batch gears. */
function readGeGears(src: TierSource): number[] | undefined {
  const shapeText = src.parameters.get(GE_INPUT_SHAPE_KEY);
  const dimsText = src.parameters.get(GE_DYNAMIC_DIMS_KEY);
  if (dimsText === undefined) return undefined;
  if (shapeText === undefined) {
    throw new TierError(
      GE_DYNAMIC_DIMS_KEY,
      `'${GE_DYNAMIC_DIMS_KEY}' needs '${GE_INPUT_SHAPE_KEY}' to say which dims (-1) the gears fill, e.g. "input:-1,3,224,224"`,
    );
  }
  const shapes = parseInputShape(shapeText, src.inputNames);
  const holes = shapes.reduce((n, s) => n + s.dims.filter((d) => d === -1).length, 0);
  const gears = parseGears(dimsText, holes);
  const batchGears = shapes.every((s) => s.dims[0] === -1 && s.dims.indexOf(-1, 1) === -1);
  if (!batchGears) return undefined;
  return sortedUnique(
    gears.map((g) => {
      const first = g[0] as number;
      if (g.some((v) => v !== first)) {
        throw new TierError(
          GE_DYNAMIC_DIMS_KEY,
          `gear "${g.join(',')}" in '${GE_DYNAMIC_DIMS_KEY}' gives the inputs different batch sizes; a batch gear gives every input the same one`,
        );
      }
      return first;
    }),
  );
}

export function parseInputShape(text: string, inputNames: readonly string[]): GeInputShape[] {
  const entries = text
    .split(';')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  if (entries.length === 0) {
    throw new TierError(
      GE_INPUT_SHAPE_KEY,
      `'${GE_INPUT_SHAPE_KEY}' is empty; write "name:d0,d1,..." per input, joined by ';'`,
    );
  }
  return entries.map((entry) => {
    // Tensor names may themselves contain ':' (e.g. "x:0"), so the last one separates the dims.
    const colon = entry.lastIndexOf(':');
    if (colon <= 0) {
      throw new TierError(
        GE_INPUT_SHAPE_KEY,
        `'${GE_INPUT_SHAPE_KEY}' entry "${entry}" is not of the form name:d0,d1,...`,
      );
    }
    const name = entry.slice(0, colon).trim();
    const dimsText = entry.slice(colon + 1).trim();
    const dims = dimsText === '' ? [] : dimsText.split(',').map((d) => d.trim());
    const bad = dims.find((d) => !/^(-1|\d+)$/.test(d));
    if (bad !== undefined) {
      throw new TierError(
        GE_INPUT_SHAPE_KEY,
        `'${GE_INPUT_SHAPE_KEY}' entry "${entry}" has dim "${bad}"; a dim is a number, or -1 where a gear fills it`,
      );
    }
    if (inputNames.length > 0 && !inputNames.includes(name)) {
      throw new TierError(
        GE_INPUT_SHAPE_KEY,
        `'${GE_INPUT_SHAPE_KEY}' names '${name}', which is not an input of the model (inputs: ${inputNames.join(', ')})`,
      );
    }
    return { name, dims: dims.map(Number) };
  });
}

export function parseGears(text: string, holes: number): number[][] {
  const gears = text
    .split(';')
    .map((g) => g.trim())
    .filter((g) => g !== '');
  if (gears.length === 0) {
    throw new TierError(
      GE_DYNAMIC_DIMS_KEY,
      `'${GE_DYNAMIC_DIMS_KEY}' lists no gears; write them joined by ';', e.g. "1;2;4;8"`,
    );
  }
  return gears.map((gear) => {
    const values = gear.split(',').map((v) => v.trim());
    const bad = values.find((v) => !/^[1-9]\d*$/.test(v));
    if (bad !== undefined) {
      throw new TierError(
        GE_DYNAMIC_DIMS_KEY,
        `gear "${gear}" in '${GE_DYNAMIC_DIMS_KEY}' has "${bad}"; gear values are positive integers`,
      );
    }
    if (values.length !== holes) {
      throw new TierError(
        GE_DYNAMIC_DIMS_KEY,
        `gear "${gear}" in '${GE_DYNAMIC_DIMS_KEY}' has ${values.length} value(s), but '${GE_INPUT_SHAPE_KEY}' has ${holes} -1 dim(s) to fill`,
      );
    }
    return values.map(Number);
  });
}
