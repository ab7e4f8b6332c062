import { rewriteGraphValueInfos, type ValueInfoKind } from './graph-splice.js';
import { initializerNames, readGraphIOView } from './model-io.js';
import type { DimensionProto, ValueInfoProto } from './types.js';

/**
 * Returns the model with the leading dim of each graph input and output set
 * to `batch` where that dim is symbolic or unknown, so a runtime compiles a
 * static graph for one batch tier (onnxruntime-node ignores
 * freeDimensionOverrides). Every other dim, in inputs, outputs and
 * value_info alike, that carries one of the replaced dim_param names is
 * fixed too, since equal names must mean equal sizes. Fixed leading dims and
 * inputs that are initializers are left alone; nothing else in the file
 * changes.
 */
export function fixLeadingDim(bytes: Uint8Array, batch: number): Uint8Array {
  if (!Number.isSafeInteger(batch) || batch < 1) {
    throw new RangeError(`batch must be a positive integer, got ${batch}`);
  }
  const constants = initializerNames(readGraphIOView(bytes));
  const isConstant = (kind: ValueInfoKind, v: ValueInfoProto) => kind === 'input' && constants.has(v.name ?? '');

  // First pass (read only): which symbolic names stand for the batch dim.
  const batchParams = new Set<string>();
  rewriteGraphValueInfos(bytes, (kind, v) => {
    const lead = v.type?.tensorType?.shape?.dim?.[0];
    if (kind !== 'valueInfo' && !isConstant(kind, v) && lead?.dimParam !== undefined && isFree(lead)) {
      batchParams.add(lead.dimParam);
    }
    return undefined;
  });

  return rewriteGraphValueInfos(bytes, (kind, v) => {
    const dims = v.type?.tensorType?.shape?.dim;
    if (!dims || dims.length === 0 || isConstant(kind, v)) return undefined;
    let changed = false;
    const fixed = dims.map((d, i) => {
      const isLeadingIO = i === 0 && kind !== 'valueInfo' && isFree(d);
      if (!isLeadingIO && !(d.dimParam !== undefined && batchParams.has(d.dimParam))) return d;
      changed = true;
      return withValue(d, batch);
    });
    return changed ? withDims(v, fixed) : undefined;
  });
}

function isFree(d: DimensionProto): boolean {
  return d.dimValue === undefined;
}

function withValue(d: DimensionProto, value: number): DimensionProto {
  return d.denotation === undefined ? { dimValue: value } : { dimValue: value, denotation: d.denotation };
}

function withDims(v: ValueInfoProto, dim: DimensionProto[]): ValueInfoProto {
  const tensorType = v.type?.tensorType ?? {};
  return { ...v, type: { ...v.type, tensorType: { ...tensorType, shape: { ...tensorType.shape, dim } } } };
}

/**
 * Returns the model with every graph input's free dims set to `shapes[input]`
 * (full shapes, batch dim included), for a runtime to compile one static
 * graph per gear. Dims elsewhere (outputs, value_info) that carry a symbolic
 * name of a fixed input dim are fixed too. Throws when two inputs give one
 * symbolic name different sizes, or a shape does not fit the input's rank
 * or fixed dims. Inputs not named keep their shapes.
 */
export function fixInputDims(bytes: Uint8Array, shapes: Readonly<Record<string, readonly number[]>>): Uint8Array {
  const constants = initializerNames(readGraphIOView(bytes));
  const sizes = new Map<string, number>();
  rewriteGraphValueInfos(bytes, (kind, v) => {
    const name = v.name ?? '';
    const shape = shapes[name];
    if (kind !== 'input' || constants.has(name) || !shape) return undefined;
    const dims = v.type?.tensorType?.shape?.dim ?? [];
    if (dims.length !== shape.length) {
      throw new RangeError(
        `input '${name}' has rank ${dims.length} in the model, but the shape given is [${shape.join(',')}]`,
      );
    }
    dims.forEach((d, i) => {
      const want = shape[i] as number;
      if (!isFree(d)) {
        if (d.dimValue !== want) {
          throw new RangeError(
            `input '${name}' dim ${i} is ${d.dimValue} in the model, but the shape given has ${want}`,
          );
        }
        return;
      }
      if (d.dimParam === undefined) return;
      const prev = sizes.get(d.dimParam);
      if (prev !== undefined && prev !== want) {
        throw new RangeError(`the symbolic dim '${d.dimParam}' is given both ${prev} and ${want}`);
      }
      sizes.set(d.dimParam, want);
    });
    return undefined;
  });
  return rewriteGraphValueInfos(bytes, (kind, v) => {
    const name = v.name ?? '';
    const dims = v.type?.tensorType?.shape?.dim;
    if (!dims || dims.length === 0 || (kind === 'input' && constants.has(name))) return undefined;
    const shape = kind === 'input' ? shapes[name] : undefined;
    let changed = false;
    const fixed = dims.map((d, i) => {
      if (!isFree(d)) return d;
      const value = shape ? shape[i] : d.dimParam !== undefined ? sizes.get(d.dimParam) : undefined;
      if (value === undefined) return d;
      changed = true;
      return withValue(d, value);
    });
    return changed ? withDims(v, fixed) : undefined;
  });
}
