import { httpTarget, LoadDriver, percentile } from '@ge-mesh/loadgen';
import type { TestMesh } from '../support/mesh-harness.js';
import { brokerAndRedisPids, cpuSeconds } from './process-metrics.js';

/**
 * Two (or more) meshes measured side by side in one run: at each load, the
 * windows alternate between them round after round, so the noise of a
 * shared machine falls on every side alike and the ratios hold. CPU is every
 * process of the side's mesh plus RabbitMQ and Redis, per answered request.
 */
export interface Side {
  readonly label: string;
  readonly mesh: TestMesh;
}

export type Load = { kind: 'concurrency'; concurrency: number } | { kind: 'rate'; perSec: number };

export interface SideRow {
  readonly load: string;
  readonly side: string;
  readonly inferPerSec: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly cpuMsPerRequest: number;
  readonly errors: number;
  /** What `count` rose by over the side's measured windows (0 without it). */
  readonly counted: number;
}

export interface SideBySideOptions {
  readonly model: string;
  readonly rounds: number;
  readonly windowMs: number;
  readonly log: (line: string) => void;
  /** A counter read around each window (e.g. spans exported). */
  readonly count?: () => number;
}

export async function sideBySide(
  sides: readonly Side[],
  loads: ReadonlyArray<{ name: string; load: Load }>,
  o: SideBySideOptions,
): Promise<SideRow[]> {
  const shared = brokerAndRedisPids().map((p) => p.pid);
  const rows: SideRow[] = [];
  for (const { name, load } of loads) {
    const acc = new Map<
      string,
      { lat: number[]; answered: number; errors: number; secs: number; cpu: number; counted: number }
    >();
    for (let round = 0; round < o.rounds; round++) {
      // Each side goes first in every other round, so neither always runs on the heels of the other.
      for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
        const target = await httpTarget({
          url: side.mesh.url,
          model: o.model,
          batch: 1,
          inputData: 'random',
          binary: true,
        });
        const mode = load.kind === 'rate' ? { ...load, distribution: 'constant' as const } : load;
        const d = new LoadDriver(target.send, mode);
        d.start();
        await d.window(500);
        // Only this side's processes and the shared broker and Redis run now.
        const pids = [...side.mesh.services.map((s) => s.child.pid ?? 0), ...shared];
        const c0 = pids.reduce((n, p) => n + cpuSeconds(p), 0);
        const k0 = o.count?.() ?? 0;
        const w = await d.window(o.windowMs);
        const c1 = pids.reduce((n, p) => n + cpuSeconds(p), 0);
        const k1 = o.count?.() ?? 0;
        await d.stop();
        await target.close();
        const a = acc.get(side.label) ?? { lat: [], answered: 0, errors: 0, secs: 0, cpu: 0, counted: 0 };
        a.lat.push(...w.latenciesUs);
        a.answered += w.requests - w.errors;
        a.errors += w.errors;
        a.secs += o.windowMs / 1000;
        a.cpu += c1 - c0;
        a.counted += k1 - k0;
        acc.set(side.label, a);
        o.log(`${name} round ${round + 1}/${o.rounds} ${side.label}: ${w.inferPerSec.toFixed(0)} infer/s`);
      }
    }
    for (const side of sides) {
      const a = acc.get(side.label);
      if (!a) continue;
      const sorted = Float64Array.from(a.lat).sort();
      rows.push({
        load: name,
        side: side.label,
        inferPerSec: a.answered / a.secs,
        p50Ms: percentile(sorted, 50) / 1000,
        p99Ms: percentile(sorted, 99) / 1000,
        cpuMsPerRequest: (a.cpu * 1000) / Math.max(1, a.answered),
        errors: a.errors,
        counted: a.counted,
      });
    }
  }
  return rows;
}
