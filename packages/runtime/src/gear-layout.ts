import type { Gear, OutputDimLink } from '@ge-mesh/model-repository';
import { type DataType, elementCount, elementSize, MeshError, type WireTensor } from '@ge-mesh/protocol';
import type { BufferPool } from './buffer-pool.js';
import type { EngineTensor, EngineTensorSpec } from './engine.js';

// A gear and an output's dim links are what the model repository computes from the config (gears.ts).
export type { Gear, OutputDimLink };

export interface EngineGears {
  readonly gears: readonly Gear[];
  /** The inputs the gears fill. */
  readonly inputs: readonly string[];
  /** Inputs that may be padded up to a gear, and their pad value. */
  readonly padValues: Readonly<Record<string, number>>;
  readonly batched: boolean;
}

/** A member of a batch run on a gear: its inputs (full shapes) and rows. */
export interface GearMemberRows {
  readonly inputs: readonly WireTensor[];
  readonly rows: number;
}

/**
 * Writes the members' inputs into the gear's pooled buffers: a member whose
 * row is smaller than the gear's is padded, each row at its place, with the
 * input's pad value. Rows past the members (batch padding) keep whatever the
 * pool holds: rows are independent and their outputs are dropped.
 */
export function assembleGearBatch(
  specs: readonly EngineTensorSpec[],
  members: readonly GearMemberRows[],
  gear: Gear,
  gears: EngineGears,
  pool: BufferPool,
): Map<string, EngineTensor> {
  const out = new Map<string, EngineTensor>();
  for (const spec of specs) {
    const rowDims = gear.dims[spec.name];
    if (!rowDims) throw new MeshError('INTERNAL', `gear ${gear.index} has no shape for input '${spec.name}'`);
    const size = elementSize(spec.dataType);
    const rowBytes = elementCount(rowDims) * size;
    const buf = pool.get(`${spec.name}@g${gear.index}`, rowBytes * gear.batch);
    const pad = gears.padValues[spec.name];
    const padBytes = pad === undefined ? undefined : encodeScalar(spec.dataType, pad);
    let row = 0;
    for (const m of members) {
      const t = m.inputs.find((x) => x.name === spec.name);
      if (!t) throw new MeshError('INTERNAL', `batch member has no input '${spec.name}'`);
      const memberRow = gears.batched ? t.shape.slice(1) : t.shape;
      const memberRowBytes = elementCount(memberRow) * size;
      if (t.data.byteLength !== memberRowBytes * m.rows || memberRow.length !== rowDims.length) {
        throw new MeshError('INTERNAL', `batch member input '${spec.name}' does not match the batch layout`);
      }
      if (sameDims(memberRow, rowDims)) {
        buf.set(t.data, row * rowBytes);
      } else {
        if (!padBytes) {
          throw new MeshError(
            'INTERNAL',
            `input '${spec.name}' of shape [${memberRow.join(',')}] would need padding to gear [${rowDims.join(',')}], but it has no pad value`,
          );
        }
        for (let r = 0; r < m.rows; r++) {
          const dst = buf.subarray((row + r) * rowBytes, (row + r + 1) * rowBytes);
          fillPattern(dst, padBytes);
          copyBlock(t.data.subarray(r * memberRowBytes, (r + 1) * memberRowBytes), memberRow, dst, rowDims, size);
        }
      }
      row += m.rows;
    }
    out.set(spec.name, { data: buf, shape: gears.batched ? [gear.batch, ...rowDims] : [...rowDims] });
  }
  return out;
}

/**
 * Cuts each member's outputs out of a gear's outputs: its rows, and along
 * every linked dim its own size of the input dim it follows (the rest of
 * that dim is the padding's answer). Copies: outputs are reused.
 */
export function sliceGearOutputs(
  specs: readonly EngineTensorSpec[],
  outputs: ReadonlyMap<string, EngineTensor>,
  members: readonly GearMemberRows[],
  links: Readonly<Record<string, readonly OutputDimLink[]>>,
  batched: boolean,
): WireTensor[][] {
  const perMember: WireTensor[][] = members.map(() => []);
  for (const spec of specs) {
    const t = outputs.get(spec.name);
    if (!t) throw new MeshError('EXECUTION_FAILED', `the model produced no output '${spec.name}'`);
    const size = elementSize(spec.dataType);
    const runRow = batched ? t.shape.slice(1) : [...t.shape];
    const runRowBytes = elementCount(runRow) * size;
    let row = 0;
    members.forEach((m, i) => {
      const memberRow = [...runRow];
      for (const link of links[spec.name] ?? []) {
        const input = m.inputs.find((x) => x.name === link.input);
        const inputSize = input?.shape[link.inputDim];
        const at = batched ? link.dim - 1 : link.dim;
        if (inputSize !== undefined && at >= 0 && at < memberRow.length) {
          memberRow[at] = Math.min(memberRow[at] as number, inputSize);
        }
      }
      const rows = batched ? m.rows : 1;
      const src = t.data.subarray(row * runRowBytes, (row + rows) * runRowBytes);
      let data: Uint8Array;
      if (sameDims(memberRow, runRow)) {
        data = Uint8Array.prototype.slice.call(src);
      } else {
        const memberRowBytes = elementCount(memberRow) * size;
        data = new Uint8Array(memberRowBytes * rows);
        for (let r = 0; r < rows; r++) {
          copyBlock(
            src.subarray(r * runRowBytes, (r + 1) * runRowBytes),
            runRow,
            data.subarray(r * memberRowBytes, (r + 1) * memberRowBytes),
            memberRow,
            size,
            memberRow,
          );
        }
      }
      perMember[i]?.push({
        name: spec.name,
        datatype: spec.dataType,
        shape: batched ? [rows, ...memberRow] : memberRow,
        data,
      });
      row += rows;
    });
  }
  return perMember;
}

function sameDims(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

/**
 * Copies the block `extent` (default: the source's dims) from a row-major
 * tensor of `srcDims` to the same place in one of `dstDims`, one contiguous
 * innermost run at a time.
 */
function copyBlock(
  src: Uint8Array,
  srcDims: readonly number[],
  dst: Uint8Array,
  dstDims: readonly number[],
  size: number,
  extent: readonly number[] = srcDims,
): void {
  const rank = extent.length;
  if (rank === 0) {
    dst.set(src.subarray(0, size), 0);
    return;
  }
  const srcStrides = strides(srcDims, size);
  const dstStrides = strides(dstDims, size);
  const runBytes = (extent[rank - 1] as number) * size;
  const index = new Array<number>(rank - 1).fill(0);
  const outer = elementCount(extent.slice(0, rank - 1));
  for (let n = 0; n < outer; n++) {
    let s = 0;
    let d = 0;
    for (let k = 0; k < rank - 1; k++) {
      s += (index[k] as number) * (srcStrides[k] as number);
      d += (index[k] as number) * (dstStrides[k] as number);
    }
    dst.set(src.subarray(s, s + runBytes), d);
    for (let k = rank - 2; k >= 0; k--) {
      index[k] = (index[k] as number) + 1;
      if ((index[k] as number) < (extent[k] as number)) break;
      index[k] = 0;
    }
  }
}

function strides(dims: readonly number[], size: number): number[] {
  const s = new Array<number>(dims.length);
  let acc = size;
  for (let k = dims.length - 1; k >= 0; k--) {
    s[k] = acc;
    acc *= dims[k] as number;
  }
  return s;
}

/** Fills `dst` with repeats of `pattern` (one element), doubling the copied span. */
function fillPattern(dst: Uint8Array, pattern: Uint8Array): void {
  if (dst.byteLength === 0) return;
  dst.set(pattern, 0);
  let filled = pattern.byteLength;
  while (filled < dst.byteLength) {
    const n = Math.min(filled, dst.byteLength - filled);
    dst.copyWithin(filled, 0, n);
    filled += n;
  }
}

/** One element of `dataType` holding `value`, little-endian. */
export function encodeScalar(dataType: DataType, value: number): Uint8Array {
  const bytes = new Uint8Array(elementSize(dataType));
  const v = new DataView(bytes.buffer);
  switch (dataType) {
    case 'FP32':
      v.setFloat32(0, value, true);
      break;
    case 'FP64':
      v.setFloat64(0, value, true);
      break;
    case 'FP16':
      v.setUint16(0, toHalf(value), true);
      break;
    case 'BF16': {
      // bf16 is the top half of an fp32, rounded to nearest even.
      const f = new DataView(new ArrayBuffer(4));
      f.setFloat32(0, value, true);
      const u = f.getUint32(0, true);
      v.setUint16(0, ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) & 0xffff, true);
      break;
    }
    case 'INT8':
      v.setInt8(0, value);
      break;
    case 'UINT8':
    case 'BOOL':
      v.setUint8(0, value);
      break;
    case 'INT16':
      v.setInt16(0, value, true);
      break;
    case 'UINT16':
      v.setUint16(0, value, true);
      break;
    case 'INT32':
      v.setInt32(0, value, true);
      break;
    case 'UINT32':
      v.setUint32(0, value, true);
      break;
    case 'INT64':
      v.setBigInt64(0, BigInt(value), true);
      break;
    case 'UINT64':
      v.setBigUint64(0, BigInt(value), true);
      break;
    default:
      throw new MeshError('UNSUPPORTED', `inputs of type ${dataType} cannot be padded`);
  }
  return bytes;
}

/** fp32 → IEEE half, round to nearest (pad values are small exact numbers; subnormals flush to zero). */
function toHalf(value: number): number {
  const f = new DataView(new ArrayBuffer(4));
  f.setFloat32(0, value, true);
  const x = f.getUint32(0, true);
  const sign = (x >>> 16) & 0x8000;
  const exp = ((x >>> 23) & 0xff) - 127 + 15;
  const mant = x & 0x7fffff;
  if (((x >>> 23) & 0xff) === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  if (exp >= 0x1f) return sign | 0x7c00;
  if (exp <= 0) return sign;
  const half = sign | (exp << 10) | (mant >>> 13);
  return mant & 0x1000 ? half + 1 : half;
}
