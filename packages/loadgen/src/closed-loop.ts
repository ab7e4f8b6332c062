import { type LatencySummary, summarize } from './stats.js';

/**
 * Fixed-concurrency load: `concurrency` loops, each sending its next request
 * as soon as the previous one answered, for `durationMs` after a warmup.
 */
export interface ClosedLoopOptions {
  concurrency: number;
  durationMs: number;
  warmupMs?: number;
  /** Sends one request; resolves true on success. */
  send: (loop: number, seq: number) => Promise<boolean>;
  /** Rows per request, for infer/s. */
  batch?: number;
  onProgress?: (done: number, elapsedMs: number) => void;
}

export interface ClosedLoopResult extends LatencySummary {
  concurrency: number;
  seconds: number;
  requests: number;
  errors: number;
  inferPerSec: number;
}

export async function runClosedLoop(o: ClosedLoopOptions): Promise<ClosedLoopResult> {
  const warmupEnd = performance.now() + (o.warmupMs ?? 0);
  let measureStart = 0;
  let stopAt = Number.POSITIVE_INFINITY;
  const latencies: number[] = [];
  let errors = 0;
  let seq = 0;
  let progressTimer: NodeJS.Timeout | undefined;
  const loops = Array.from({ length: o.concurrency }, async (_, loop) => {
    for (;;) {
      const t0 = performance.now();
      if (t0 >= stopAt) return;
      const ok = await o.send(loop, seq++).catch(() => false);
      const t1 = performance.now();
      if (t0 >= measureStart && measureStart > 0 && t1 <= stopAt) {
        if (ok) latencies.push((t1 - t0) * 1000);
        else errors++;
      }
    }
  });
  const warmup = Math.max(0, warmupEnd - performance.now());
  await new Promise((r) => setTimeout(r, warmup));
  measureStart = performance.now();
  stopAt = measureStart + o.durationMs;
  if (o.onProgress) {
    progressTimer = setInterval(() => o.onProgress?.(latencies.length, performance.now() - measureStart), 1000);
  }
  await Promise.all(loops);
  clearInterval(progressTimer);
  const seconds = o.durationMs / 1000;
  const s = summarize(latencies);
  return {
    ...s,
    concurrency: o.concurrency,
    seconds,
    requests: latencies.length,
    errors,
    inferPerSec: (latencies.length * (o.batch ?? 1)) / seconds,
  };
}
