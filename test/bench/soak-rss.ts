import { rssMiB } from './process-metrics.js';

/**
 * Resident memory of the mesh's processes over a long run: one sample per
 * process every interval, and per service the growth once warm-up is over
 * (what a leak shows up as: a steady climb, not a one-off step).
 */

export interface RssSample {
  /** Seconds since the run started. */
  t: number;
  service: string;
  pid: number;
  rssMiB: number;
}

export interface RssGrowth {
  service: string;
  /** RSS at the first sample after warm-up, at the end, and the highest after warm-up, MiB. */
  afterWarmupMiB: number;
  endMiB: number;
  maxMiB: number;
  /** endMiB − afterWarmupMiB. */
  growthMiB: number;
  /** Least-squares slope over the samples after warm-up, MiB per minute. */
  slopeMiBPerMin: number;
  samples: number;
  /** Distinct process ids seen: more than one means the service was restarted. */
  pids: number;
}

/** One sample of every process now; a process that is gone reads 0 and is skipped. */
export function sampleRss(t: number, procs: Array<{ service: string; pid: number | undefined }>): RssSample[] {
  const out: RssSample[] = [];
  for (const p of procs) {
    if (p.pid === undefined) continue;
    const mib = rssMiB(p.pid);
    if (mib > 0) out.push({ t, service: p.service, pid: p.pid, rssMiB: mib });
  }
  return out;
}

function slope(points: Array<{ x: number; y: number }>): number {
  const n = points.length;
  if (n < 2) return Number.NaN;
  const mx = points.reduce((a, p) => a + p.x, 0) / n;
  const my = points.reduce((a, p) => a + p.y, 0) / n;
  let num = 0;
  let den = 0;
  for (const p of points) {
    num += (p.x - mx) * (p.y - my);
    den += (p.x - mx) ** 2;
  }
  return den === 0 ? Number.NaN : num / den;
}

/** Growth per service over the samples taken at or after `warmupS`. */
export function rssGrowth(samples: RssSample[], warmupS: number): RssGrowth[] {
  const services = [...new Set(samples.map((s) => s.service))];
  return services.map((service) => {
    const own = samples.filter((s) => s.service === service);
    const after = own.filter((s) => s.t >= warmupS);
    const first = after[0]?.rssMiB ?? Number.NaN;
    const last = after[after.length - 1]?.rssMiB ?? Number.NaN;
    return {
      service,
      afterWarmupMiB: first,
      endMiB: last,
      maxMiB: after.reduce((m, s) => Math.max(m, s.rssMiB), 0),
      growthMiB: last - first,
      slopeMiBPerMin: slope(after.map((s) => ({ x: s.t / 60, y: s.rssMiB }))),
      samples: after.length,
      pids: new Set(own.map((s) => s.pid)).size,
    };
  });
}
