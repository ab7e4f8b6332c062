/**
 * Latency statistics as perf_analyzer reports them: percentiles by nearest
 * rank, index = round(p/100 × (n − 1)) over the sorted samples.
 */
export interface LatencySummary {
  count: number;
  avgUs: number;
  p50Us: number;
  p90Us: number;
  p95Us: number;
  p99Us: number;
  maxUs: number;
}

export function percentile(sortedUs: Float64Array | number[], p: number): number {
  if (sortedUs.length === 0) return Number.NaN;
  const i = Math.round((p / 100) * (sortedUs.length - 1));
  return sortedUs[i] as number;
}

export function summarize(latenciesUs: number[]): LatencySummary {
  const sorted = Float64Array.from(latenciesUs).sort();
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    count: sorted.length,
    avgUs: sorted.length ? sum / sorted.length : Number.NaN,
    p50Us: percentile(sorted, 50),
    p90Us: percentile(sorted, 90),
    p95Us: percentile(sorted, 95),
    p99Us: percentile(sorted, 99),
    maxUs: sorted.length ? (sorted[sorted.length - 1] as number) : Number.NaN,
  };
}
