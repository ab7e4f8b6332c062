import type { Pool } from 'undici';

/**
 * The server-side breakdown perf_analyzer prints: `/stats` read before and
 * after a window; the difference gives per-request queue and compute times.
 */
interface Duration {
  count: number;
  ns: number;
}
export interface InferenceStatsSnapshot {
  success: Duration;
  fail: Duration;
  queue: Duration;
  compute_input: Duration;
  compute_infer: Duration;
  compute_output: Duration;
}
export interface ServerBreakdown {
  requests: number;
  /** Average per request, µs. */
  requestUs: number;
  queueUs: number;
  computeInputUs: number;
  computeInferUs: number;
  computeOutputUs: number;
  overheadUs: number;
}

export async function readStats(
  pool: Pool,
  model: string,
  headers: Record<string, string> = {},
): Promise<InferenceStatsSnapshot | null> {
  const res = await pool.request({ path: `/v2/models/${encodeURIComponent(model)}/stats`, method: 'GET', headers });
  const text = await res.body.text();
  if (res.statusCode !== 200) return null;
  const s = JSON.parse(text) as { model_stats?: Array<{ inference_stats?: InferenceStatsSnapshot }> };
  return s.model_stats?.[0]?.inference_stats ?? null;
}

export function breakdown(a: InferenceStatsSnapshot, b: InferenceStatsSnapshot): ServerBreakdown {
  const n = b.success.count - a.success.count;
  const per = (k: keyof InferenceStatsSnapshot) => (n > 0 ? (b[k].ns - a[k].ns) / n / 1000 : 0);
  const requestUs = per('success');
  const queueUs = per('queue');
  const ci = per('compute_input');
  const cf = per('compute_infer');
  const co = per('compute_output');
  return {
    requests: n,
    requestUs,
    queueUs,
    computeInputUs: ci,
    computeInferUs: cf,
    computeOutputUs: co,
    overheadUs: Math.max(0, requestUs - queueUs - ci - cf - co),
  };
}

/**
 * Several windows' breakdowns as one, weighted by each window's requests, so
 * a level's server figures cover the same windows as its client figures.
 */
export function mergeBreakdowns(parts: readonly ServerBreakdown[]): ServerBreakdown | undefined {
  const n = parts.reduce((a, p) => a + p.requests, 0);
  if (parts.length === 0) return undefined;
  const avg = (k: Exclude<keyof ServerBreakdown, 'requests'>) =>
    n > 0 ? parts.reduce((a, p) => a + p[k] * p.requests, 0) / n : 0;
  return {
    requests: n,
    requestUs: avg('requestUs'),
    queueUs: avg('queueUs'),
    computeInputUs: avg('computeInputUs'),
    computeInferUs: avg('computeInferUs'),
    computeOutputUs: avg('computeOutputUs'),
    overheadUs: avg('overheadUs'),
  };
}
