/**
 * Error bounds for one dot product (a MatMul/Gemm/Conv output element) computed
 * the way the NPU's cube unit does at low precision, which the CANN simulator
 * emulates: the inputs, weights and bias rounded to the format, the products
 * summed in fp32, the result rounded to the format. The reference it is
 * compared with is onnxruntime's fp32, which carries its own summation error.
 */

/** Unit roundoff (half the spacing of the numbers in [1, 2)) of each format. */
export const UNIT_ROUNDOFF = { fp16: 2 ** -11, bf16: 2 ** -8, fp32: 2 ** -24 } as const;

export type FloatFormat = keyof typeof UNIT_ROUNDOFF;

/** Absolute error floor of rounding to the format: half its smallest subnormal step (bf16 shares fp32's range). */
const ABSOLUTE_FLOOR: Record<FloatFormat, number> = { fp16: 2 ** -25, bf16: 2 ** -150, fp32: 2 ** -150 };

/** γ_n = n·u/(1 − n·u): relative bound on summing n fp32 terms, in any order (FMA included). */
export function gamma(n: number): number {
  const nu = n * UNIT_ROUNDOFF.fp32;
  return nu / (1 - nu);
}

/**
 * Bound on |computed − reference| for y = Σ a_k·b_k + bias, where `computed`
 * rounds a, b and bias to `format` (each off by at most u·|x| + floor), sums
 * the exact products in fp32 (γ_{K+1}), then rounds y to `format`, and
 * `reference` is fp32 on the original values (γ_{K+1} again). So the bound grows
 * with the format's unit roundoff and with the reduction length K.
 */
export function dotErrorBound(
  format: FloatFormat,
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  bias: number,
  reference: number,
): number {
  const u = UNIT_ROUNDOFF[format];
  const floor = ABSOLUTE_FLOOR[format];
  const g = gamma(a.length + 1);
  let sum = Math.abs(bias); // Σ|a·b| + |bias|
  let rounding = u * Math.abs(bias) + floor; // what rounding the operands moves y by
  for (let k = 0; k < a.length; k++) {
    const x = Math.abs(a[k] as number);
    const y = Math.abs(b[k] as number);
    sum += x * y;
    rounding += (u * x + floor) * ((1 + u) * y + floor) + x * (u * y + floor);
  }
  const accumulation = g * (sum + rounding);
  const reference32 = g * sum;
  const output = u * (Math.abs(reference) + reference32 + rounding + accumulation) + floor;
  return rounding + accumulation + output + reference32;
}

export interface ErrorSummary {
  /** max |computed − reference| */
  maxAbs: number;
  /** maxAbs / max |reference| */
  maxRelative: number;
  /** The largest per-element bound. */
  maxBound: number;
  /** max over elements of |error| / bound: must stay ≤ 1. */
  worstRatio: number;
  /** Elements whose error exceeds the fp32-only bound: > 0 shows the emulation is not a no-op. */
  beyondFp32: number;
}

export function summarize(
  computed: ArrayLike<number>,
  reference: ArrayLike<number>,
  bounds: ArrayLike<number>,
  fp32Bounds: ArrayLike<number>,
): ErrorSummary {
  let maxAbs = 0;
  let maxRef = 0;
  let maxBound = 0;
  let worstRatio = 0;
  let beyondFp32 = 0;
  for (let i = 0; i < reference.length; i++) {
    const err = Math.abs((computed[i] as number) - (reference[i] as number));
    maxAbs = Math.max(maxAbs, err);
    maxRef = Math.max(maxRef, Math.abs(reference[i] as number));
    maxBound = Math.max(maxBound, bounds[i] as number);
    worstRatio = Math.max(worstRatio, err / (bounds[i] as number));
    if (err > (fp32Bounds[i] as number)) beyondFp32++;
  }
  return { maxAbs, maxRelative: maxAbs / maxRef, maxBound, worstRatio, beyondFp32 };
}

export function formatSummary(s: ErrorSummary): string {
  const e = (x: number) => x.toExponential(2);
  return `max abs ${e(s.maxAbs)}, max rel ${e(s.maxRelative)} (of max |ref|), bound ≤ ${e(s.maxBound)}, worst error/bound ${s.worstRatio.toFixed(3)}, ${s.beyondFp32} beyond fp32`;
}
