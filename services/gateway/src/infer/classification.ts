import { type DataType, elementSize, MeshError, packBytesElements, type WireTensor } from '@ge-mesh/protocol';
import { MSG } from './messages.js';
import { typedView } from './tensor-to-json.js';
import type { ClassificationRequest } from './types.js';

/**
 * Triton's `classification` output parameter: the tensor is replaced, per
 * batch row, by its top-K entries as BYTES "value:index" or
 * "value:index:label", highest value first; the shape becomes [batch, K] (or
 * [K] for a model without batching).
 */
export function classify(t: WireTensor, req: ClassificationRequest, labels: readonly string[] | undefined): WireTensor {
  const size = elementSize(t.datatype);
  const read = reader(t.datatype, t.data);
  if (read === null || size === 0) throw new MeshError('INVALID_ARGUMENT', MSG.classificationType(t.datatype));
  const batch = req.batched && t.shape.length > 0 ? (t.shape[0] as number) : 0;
  let rowCount = 1;
  for (let i = batch > 0 ? 1 : 0; i < t.shape.length; i++) rowCount *= t.shape[i] as number;
  const k = Math.min(req.count, rowCount);

  const strings: string[] = [];
  for (let row = 0, start = 0; row < Math.max(1, batch); row++, start += rowCount) {
    // A row the data does not hold ranks nothing, as in Triton.
    const n = (start + rowCount) * size > t.data.length ? 0 : rowCount;
    const order = Array.from({ length: n }, (_, i) => i);
    // Stable: equal values keep index order.
    order.sort((a, b) => compareDesc(read.value(start + a), read.value(start + b)));
    for (let j = 0; j < Math.min(k, n); j++) {
      const idx = order[j] as number;
      const label = labels?.[idx];
      strings.push(`${read.format(start + idx)}:${idx}${label ? `:${label}` : ''}`);
    }
  }
  return {
    name: t.name,
    datatype: 'BYTES',
    shape: batch > 0 ? [batch, k] : [k],
    data: packBytesElements(strings),
  };
}

function compareDesc(a: number | bigint, b: number | bigint): number {
  return a < b ? 1 : a > b ? -1 : 0;
}

interface Reader {
  value(i: number): number | bigint;
  format(i: number): string;
}

function reader(dt: DataType, data: Uint8Array): Reader | null {
  const n = Math.floor(data.length / Math.max(1, elementSize(dt)));
  const plain = (v: ArrayLike<number>): Reader => ({ value: (i) => v[i] as number, format: (i) => String(v[i]) });
  switch (dt) {
    case 'UINT8':
      return plain(data);
    case 'INT8':
      return plain(typedView(Int8Array, data, n));
    case 'UINT16':
      return plain(typedView(Uint16Array, data, n));
    case 'INT16':
      return plain(typedView(Int16Array, data, n));
    case 'UINT32':
      return plain(typedView(Uint32Array, data, n));
    case 'INT32':
      return plain(typedView(Int32Array, data, n));
    case 'UINT64': {
      const v = typedView(BigUint64Array, data, n);
      return { value: (i) => v[i] as bigint, format: (i) => String(v[i]) };
    }
    case 'INT64': {
      const v = typedView(BigInt64Array, data, n);
      return { value: (i) => v[i] as bigint, format: (i) => String(v[i]) };
    }
    case 'FP32': {
      const v = typedView(Float32Array, data, n);
      return { value: (i) => v[i] as number, format: (i) => formatCFixed6(v[i] as number) };
    }
    case 'FP64': {
      const v = typedView(Float64Array, data, n);
      return { value: (i) => v[i] as number, format: (i) => formatCFixed6(v[i] as number) };
    }
    default:
      return null;
  }
}

const F64 = new Float64Array(1);
const BITS = new BigUint64Array(F64.buffer);

/**
 * A double as C's printf("%f") prints it (what Triton's std::to_string gives):
 * six decimals, rounded half-to-even from the exact binary value.
 */
export function formatCFixed6(x: number): string {
  F64[0] = x;
  const bits = BITS[0] as bigint;
  const sign = bits >> 63n === 1n ? '-' : '';
  if (Number.isNaN(x)) return `${sign}nan`;
  if (!Number.isFinite(x)) return `${sign}inf`;
  const biased = Number((bits >> 52n) & 0x7ffn);
  const fraction = bits & 0xfffffffffffffn;
  const mantissa = biased === 0 ? fraction : fraction | (1n << 52n);
  const exponent = biased === 0 ? -1074 : biased - 1075;
  let q: bigint;
  if (exponent >= 0) {
    q = (mantissa << BigInt(exponent)) * 1_000_000n;
  } else {
    const num = mantissa * 1_000_000n;
    const den = 1n << BigInt(-exponent);
    q = num / den;
    const twice = (num - q * den) * 2n;
    if (twice > den || (twice === den && (q & 1n) === 1n)) q += 1n;
  }
  const digits = q.toString().padStart(7, '0');
  return `${sign}${digits.slice(0, -6)}.${digits.slice(-6)}`;
}
