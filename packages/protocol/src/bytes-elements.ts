/**
 * The BYTES tensor layout: each element is a uint32 little-endian length
 * followed by that many bytes, elements back to back. Every writer and reader
 * of it (gateway codecs, the AMQP client) uses these.
 */

/** Packs BYTES elements; strings are written as UTF-8 in place, with no buffer of their own. */
export function packBytesElements(items: readonly (string | Uint8Array)[]): Buffer {
  let total = 0;
  for (const v of items) total += 4 + (typeof v === 'string' ? Buffer.byteLength(v, 'utf8') : v.length);
  const out = Buffer.allocUnsafe(total);
  let pos = 0;
  for (const v of items) {
    let n: number;
    if (typeof v === 'string') n = out.write(v, pos + 4, 'utf8');
    else {
      out.set(v, pos + 4);
      n = v.length;
    }
    out.writeUInt32LE(n, pos);
    pos += 4 + n;
  }
  return pos === total ? out : out.subarray(0, pos);
}

/** The elements of a BYTES buffer, as views on it (a partial element at the end is left out). */
export function splitBytesElements(data: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let pos = 0; pos + 4 <= data.length; ) {
    const n = readU32LE(data, pos);
    if (pos + 4 + n > data.length) break;
    out.push(data.subarray(pos + 4, pos + 4 + n));
    pos += 4 + n;
  }
  return out;
}

export function readU32LE(b: Uint8Array, at: number): number {
  return (
    ((b[at] as number) | ((b[at + 1] as number) << 8) | ((b[at + 2] as number) << 16)) +
    (b[at + 3] as number) * 0x1000000
  );
}

/** How a BYTES buffer failed to hold the expected elements. */
export type BytesLayoutError =
  | { kind: 'incomplete-length'; available: number }
  | { kind: 'too-many'; checked: number }
  | { kind: 'truncated'; element: number; length: number; available: number }
  | { kind: 'count'; got: number };

/**
 * Walks a BYTES buffer and checks it holds exactly `expected` whole elements;
 * returns null when it does. Stops at the first problem, in Triton's order.
 */
export function checkBytesLayout(data: Uint8Array, expected: number): BytesLayoutError | null {
  let pos = 0;
  let checked = 0;
  while (pos < data.length) {
    if (data.length - pos < 4) return { kind: 'incomplete-length', available: data.length - pos };
    const len = readU32LE(data, pos);
    checked++;
    if (checked > expected) return { kind: 'too-many', checked };
    pos += 4;
    if (len > data.length - pos)
      return { kind: 'truncated', element: checked - 1, length: len, available: data.length - pos };
    pos += len;
  }
  return checked === expected ? null : { kind: 'count', got: checked };
}

/**
 * The elements as strings (UTF-8; invalid sequences become U+FFFD): the
 * first `count`, or null when the buffer ends before them; every whole
 * element without `count`.
 */
export function decodeBytesElements(data: Uint8Array, count: number): string[] | null;
export function decodeBytesElements(data: Uint8Array): string[];
export function decodeBytesElements(data: Uint8Array, count?: number): string[] | null {
  const parts = splitBytesElements(data);
  if (count !== undefined && parts.length < count) return null;
  return (count === undefined ? parts : parts.slice(0, count)).map((p) =>
    Buffer.from(p.buffer, p.byteOffset, p.byteLength).toString('utf8'),
  );
}
