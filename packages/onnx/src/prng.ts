/**
 * A small seeded PRNG (mulberry32) for reproducible weights and test data:
 * Math.random cannot be seeded. Only integer ops and one division, so the
 * sequence is bit-identical on every platform.
 */
export interface Prng {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform in [lo, hi). */
  uniform(lo: number, hi: number): number;
  /** Integer uniform in [lo, hi). */
  int(lo: number, hi: number): number;
  /** n float32 values uniform in [lo, hi). */
  floats(n: number, lo: number, hi: number): Float32Array;
}

export function createPrng(seed: number): Prng {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const uniform = (lo: number, hi: number) => lo + (hi - lo) * next();
  return {
    next,
    uniform,
    int: (lo, hi) => lo + Math.floor((hi - lo) * next()),
    floats(n, lo, hi) {
      const out = new Float32Array(n);
      for (let i = 0; i < n; i++) out[i] = uniform(lo, hi);
      return out;
    },
  };
}
