/**
 * Input buffers reused across batches: one per (input, tier), grown only when
 * a larger shape arrives, so the steady state allocates nothing per request.
 */
export class BufferPool {
  private readonly buffers = new Map<string, Uint8Array>();

  /** A view of exactly `bytes` bytes for this key (zeros at first, reused contents after). */
  get(key: string, bytes: number): Uint8Array {
    let buf = this.buffers.get(key);
    if (!buf || buf.byteLength < bytes) {
      // 64-byte alignment keeps typed-array views legal for every element size.
      buf = new Uint8Array(new ArrayBuffer(Math.ceil(bytes / 64) * 64));
      this.buffers.set(key, buf);
    }
    return buf.subarray(0, bytes);
  }

  get totalBytes(): number {
    let n = 0;
    for (const b of this.buffers.values()) n += b.byteLength;
    return n;
  }
}
