/**
 * perf_analyzer's measurement rule: repeat windows until the last three agree
 * within `stabilityPercent` (max/min − 1) on both throughput and latency, at
 * most `maxTrials` windows; report the three merged.
 */
export interface WindowResult {
  inferPerSec: number;
  /** The latency the stability rule looks at (µs): average, or a percentile. */
  latencyUs: number;
  latenciesUs: number[];
  requests: number;
  errors: number;
  seconds: number;
}

export interface StableResult {
  stable: boolean;
  windows: WindowResult[];
  /** The last three windows (or all, when fewer were run). */
  merged: WindowResult[];
}

const spread = (xs: number[]) => Math.max(...xs) / Math.min(...xs) - 1;

export async function measureUntilStable(
  runWindow: () => Promise<WindowResult>,
  opts: { stabilityPercent?: number; maxTrials?: number; onWindow?: (w: WindowResult, i: number) => void } = {},
): Promise<StableResult> {
  const limit = (opts.stabilityPercent ?? 10) / 100;
  const maxTrials = opts.maxTrials ?? 10;
  const windows: WindowResult[] = [];
  for (let i = 0; i < maxTrials; i++) {
    const w = await runWindow();
    windows.push(w);
    opts.onWindow?.(w, i);
    if (windows.length >= 3) {
      const last = windows.slice(-3);
      if (
        spread(last.map((x) => x.inferPerSec)) <= limit &&
        spread(last.map((x) => x.latencyUs)) <= limit &&
        last.every((x) => x.requests > 0)
      ) {
        return { stable: true, windows, merged: last };
      }
    }
  }
  return { stable: false, windows, merged: windows.slice(-3) };
}
