import { LoadDriver, type LoadMode, type Send } from './driver.js';
import { mergeBreakdowns, type ServerBreakdown } from './server-stats.js';
import { measureUntilStable, type WindowResult } from './stability.js';
import { summarize } from './stats.js';

/** One level of a sweep (a concurrency or a request rate), measured to stability. */
export interface LevelResult {
  level: number;
  mode: 'concurrency' | 'rate';
  stable: boolean;
  windows: number;
  inferPerSec: number;
  requests: number;
  errors: number;
  avgUs: number;
  p50Us: number;
  p90Us: number;
  p95Us: number;
  p99Us: number;
  server?: ServerBreakdown;
}

export interface SweepOptions {
  send: Send;
  mode: 'concurrency' | 'rate';
  levels: number[];
  distribution?: 'constant' | 'poisson';
  batch?: number;
  windowMs: number;
  stabilityPercent?: number;
  maxTrials?: number;
  /** 0 = average latency for the stability rule, else that percentile. */
  latencyPercentile?: number;
  /** Stop the sweep once p-latency (ms) passes this. */
  latencyThresholdMs?: number;
  /** Server-side breakdown of a window: called before and after it. */
  serverSnapshot?: () => Promise<unknown>;
  serverDelta?: (before: unknown, after: unknown) => ServerBreakdown | undefined;
  log?: (line: string) => void;
}

/**
 * Load a server at `concurrency` for `ms` before it is measured, as
 * perf_analyzer's warm-up requests do: a JIT-compiled server reaches its
 * steady speed only after seconds of load (on this machine the mesh's
 * c=1 p50 falls from 3.4 ms in its first 5 s to about 1.7 ms after 15 s), and
 * a sweep whose first level is measured cold reports the warm-up, not the
 * server. Nothing of it is measured.
 */
export async function warmUp(send: Send, concurrency: number, ms: number): Promise<void> {
  if (ms <= 0) return;
  const driver = new LoadDriver(send, { kind: 'concurrency', concurrency });
  driver.start();
  await driver.window(ms);
  await driver.stop();
}

/**
 * A server's warm-up before its first measured level, unmeasured: two thirds
 * of `ms` at the highest of `levels`, then the rest at the lowest.
 */
export async function warmUpAcross(send: Send, levels: readonly number[], ms: number): Promise<void> {
  await warmUp(send, Math.max(...levels), Math.round((ms * 2) / 3));
  await warmUp(send, Math.min(...levels), Math.round(ms / 3));
}

export async function sweep(o: SweepOptions): Promise<LevelResult[]> {
  const results: LevelResult[] = [];
  for (const level of o.levels) {
    const mode: LoadMode =
      o.mode === 'concurrency'
        ? { kind: 'concurrency', concurrency: level }
        : { kind: 'rate', perSec: level, distribution: o.distribution ?? 'constant' };
    const driver = new LoadDriver(o.send, mode, o.batch ?? 1);
    driver.start();
    // Warm up for one window before measuring, as the first window of a level carries the ramp.
    await driver.window(Math.min(o.windowMs, 2000));
    let before = await o.serverSnapshot?.();
    // Each window's server breakdown, so the level reports the windows it merges, not only the last.
    const perWindow = new Map<WindowResult, ServerBreakdown>();
    const stable = await measureUntilStable(
      async () => {
        const w = await driver.window(o.windowMs, o.latencyPercentile ?? 0);
        const after = await o.serverSnapshot?.();
        const d = o.serverDelta?.(before, after);
        before = after;
        if (d) perWindow.set(w, d);
        return w;
      },
      {
        stabilityPercent: o.stabilityPercent ?? 10,
        maxTrials: o.maxTrials ?? 10,
        onWindow: (w, i) =>
          o.log?.(
            `  ${o.mode} ${level}: window ${i + 1}: ${w.inferPerSec.toFixed(1)} infer/s, ` +
              `latency ${(w.latencyUs / 1000).toFixed(2)} ms, ${w.errors} errors`,
          ),
      },
    );
    await driver.stop();
    const all = stable.merged.flatMap((w) => w.latenciesUs);
    const s = summarize(all);
    const seconds = stable.merged.reduce((a, w) => a + w.seconds, 0);
    const server = mergeBreakdowns(stable.merged.flatMap((w) => perWindow.get(w) ?? []));
    const r: LevelResult = {
      level,
      mode: o.mode,
      stable: stable.stable,
      windows: stable.windows.length,
      inferPerSec: (all.length * (o.batch ?? 1)) / seconds,
      requests: all.length,
      errors: stable.merged.reduce((a, w) => a + w.errors, 0),
      avgUs: s.avgUs,
      p50Us: s.p50Us,
      p90Us: s.p90Us,
      p95Us: s.p95Us,
      p99Us: s.p99Us,
      ...(server ? { server } : {}),
    };
    results.push(r);
    o.log?.(
      `${o.mode === 'concurrency' ? 'Concurrency' : 'Request rate'}: ${level}, throughput: ${r.inferPerSec.toFixed(1)} infer/sec, ` +
        `latency ${Math.round(r.avgUs)} usec${r.stable ? '' : ' (not stable)'}`,
    );
    if (o.latencyThresholdMs && r.p99Us / 1000 > o.latencyThresholdMs) break;
  }
  return results;
}
