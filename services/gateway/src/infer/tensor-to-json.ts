import { decodeBytesElements, elementSize, MeshError, type WireTensor } from '@ge-mesh/protocol';
import { MSG } from './messages.js';

type TypedCtor<T> = {
  new (buffer: ArrayBufferLike, byteOffset: number, length: number): T;
  readonly BYTES_PER_ELEMENT: number;
};

/**
 * A typed view of tensor bytes. Bytes decoded from msgpack may sit at any
 * offset; a misaligned tensor is copied once into an aligned buffer.
 */
export function typedView<T>(Ctor: TypedCtor<T>, data: Uint8Array, count: number): T {
  const bpe = Ctor.BYTES_PER_ELEMENT;
  if (data.byteOffset % bpe === 0) return new Ctor(data.buffer, data.byteOffset, count);
  // Not data.slice(): on a Buffer that is a view, not a copy.
  const copy = new Uint8Array(count * bpe);
  copy.set(data.subarray(0, count * bpe));
  return new Ctor(copy.buffer, 0, count);
}

/**
 * A double as Triton's JSON writer (rapidjson, NaN/Inf allowed) prints it:
 * shortest round-trip digits, integral values with ".0", exponents without
 * "+", and bare NaN / Infinity / -Infinity tokens.
 */
export function formatJsonDouble(v: number): string {
  if (v === 0) return Object.is(v, -0) ? '-0.0' : '0.0';
  const s = String(v);
  if (!Number.isFinite(v)) return s;
  const e = s.indexOf('e');
  if (e !== -1) return s[e + 1] === '+' ? s.slice(0, e + 1) + s.slice(e + 2) : s;
  return s.includes('.') ? s : `${s}.0`;
}

function floatsToJson(values: Float32Array | Float64Array): string {
  const parts = new Array<string>(values.length);
  for (let i = 0; i < values.length; i++) parts[i] = formatJsonDouble(values[i] as number);
  return `[${parts.join(',')}]`;
}

/**
 * The JSON `data` array (flat, as Triton writes it) for an output tensor.
 * INT64/UINT64 are written exactly, whatever their size. BYTES elements are
 * read as UTF-8 (outputs that are not text should be asked as binary).
 * FP16/BF16 have no JSON form: Triton refuses them, and so does this.
 */
export function tensorToJson(t: WireTensor): string {
  let count = 1;
  for (const d of t.shape) count *= d;
  const { datatype: dt, data } = t;
  if (dt === 'FP16' || dt === 'BF16') throw new MeshError('INVALID_ARGUMENT', MSG.jsonHalfOutput(dt));
  if (dt === 'BYTES') {
    const strings = decodeBytesElements(data, count);
    if (strings === null) throw new MeshError('INTERNAL', MSG.outputSize(t.name));
    return `[${strings.map((s) => JSON.stringify(s)).join(',')}]`;
  }
  if (data.length !== count * elementSize(dt)) throw new MeshError('INTERNAL', MSG.outputSizeJson(t.name));
  switch (dt) {
    case 'BOOL': {
      const parts = new Array<string>(count);
      for (let i = 0; i < count; i++) parts[i] = data[i] === 0 ? 'false' : 'true';
      return `[${parts.join(',')}]`;
    }
    case 'FP32':
      return floatsToJson(typedView(Float32Array, data, count));
    case 'FP64':
      return floatsToJson(typedView(Float64Array, data, count));
    // Integer typed arrays (BigInt ones included) print exact decimals through join.
    case 'UINT8':
      return `[${data.join(',')}]`;
    case 'INT8':
      return `[${typedView(Int8Array, data, count).join(',')}]`;
    case 'UINT16':
      return `[${typedView(Uint16Array, data, count).join(',')}]`;
    case 'INT16':
      return `[${typedView(Int16Array, data, count).join(',')}]`;
    case 'UINT32':
      return `[${typedView(Uint32Array, data, count).join(',')}]`;
    case 'INT32':
      return `[${typedView(Int32Array, data, count).join(',')}]`;
    case 'UINT64':
      return `[${typedView(BigUint64Array, data, count).join(',')}]`;
    case 'INT64':
      return `[${typedView(BigInt64Array, data, count).join(',')}]`;
  }
}
