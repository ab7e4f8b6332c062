import { httpTarget, LoadDriver, percentile, type Send, warmUpAcross } from '@ge-mesh/loadgen';
import type { TestMesh } from '../support/mesh-harness.js';
import { brokerAndRedisPids, cpuSeconds } from './process-metrics.js';

/**
 * Servers measured side by side in one run: each round measures every load,
 * and at each load every side, window by window, so the noise of a shared
 * machine falls on every side and every load alike and the ratios hold. CPU is every process of the
 * side plus RabbitMQ and Redis, per answered request.
 */
export interface Side {
  readonly label: string;
  /** A fresh load target for one window: what sends a request, and what closes it after. */
  readonly open: () => Promise<{ send: Send; close: () => Promise<void> }>;
  /** The side's own processes (RabbitMQ and Redis are metered with every side). */
  readonly pids: readonly number[];
  /** The side's own load in every row, where sides peak at different loads (its row is named after it). */
  readonly load?: Load;
  /** Inferences one request carries (the engine alone runs a whole tier per call); 1 when absent. */
  readonly rowsPerRequest?: number;
}

/** A server that speaks KServe v2 over HTTP (a mesh's gateway, a naive server, the shape's floor), fed binary tensors. */
export function httpSide(label: string, url: string, model: string, pids: readonly number[]): Side {
  return {
    label,
    pids,
    open: () => httpTarget({ url, model, batch: 1, inputData: 'random', binary: true }),
  };
}

/** A mesh's gateway, metered with every one of the mesh's processes. */
export function meshSide(label: string, mesh: TestMesh, model: string): Side {
  return httpSide(
    label,
    mesh.url,
    model,
    mesh.services.map((s) => s.child.pid ?? 0),
  );
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
  readonly rounds: number;
  readonly windowMs: number;
  readonly log: (line: string) => void;
  /** A counter read around each window (e.g. spans exported). */
  readonly count?: () => number;
  /** Load each side gets before the first measured window, unmeasured: two thirds at the loads' highest concurrency, then their lowest (the benchmark's rule). */
  readonly warmupMs?: number;
}

export async function sideBySide(
  sides: readonly Side[],
  loads: ReadonlyArray<{ name: string; load: Load }>,
  o: SideBySideOptions,
): Promise<SideRow[]> {
  const shared = brokerAndRedisPids().map((p) => p.pid);
  const rows: SideRow[] = [];
  const levelOf = (load: Load) => (load.kind === 'concurrency' ? load.concurrency : 1);
  const levels = loads.map(({ load }) => levelOf(load));
  if (o.warmupMs) {
    for (const side of sides) {
      const t = await side.open();
      await warmUpAcross(t.send, side.load ? [levelOf(side.load)] : levels, o.warmupMs);
      await t.close();
      o.log(`${side.label}: warmed up for ${o.warmupMs / 1000} s`);
    }
  }
  type Acc = { lat: number[]; answered: number; errors: number; secs: number; cpu: number; counted: number };
  const acc = new Map<string, Acc>();
  const key = (load: string, side: string) => `${load}\u0000${side}`;
  // Rounds outermost: every load's windows spread over the whole comparison, so a load measured
  // in a slow stretch of the host is not compared with another measured in a fast one.
  for (let round = 0; round < o.rounds; round++) {
    for (const { name, load } of round % 2 === 0 ? loads : [...loads].reverse()) {
      // Each side goes first in every other round, so neither always runs on the heels of the other.
      for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
        const target = await side.open();
        const own = side.load ?? load;
        const mode = own.kind === 'rate' ? { ...own, distribution: 'constant' as const } : own;
        const d = new LoadDriver(target.send, mode);
        d.start();
        await d.window(500);
        // Only this side's processes and the shared broker and Redis run now.
        const pids = [...side.pids, ...shared];
        const c0 = pids.reduce((n, p) => n + cpuSeconds(p), 0);
        const k0 = o.count?.() ?? 0;
        const w = await d.window(o.windowMs);
        const c1 = pids.reduce((n, p) => n + cpuSeconds(p), 0);
        const k1 = o.count?.() ?? 0;
        await d.stop();
        await target.close();
        const a = acc.get(key(name, side.label)) ?? { lat: [], answered: 0, errors: 0, secs: 0, cpu: 0, counted: 0 };
        a.lat.push(...w.latenciesUs);
        a.answered += (w.requests - w.errors) * (side.rowsPerRequest ?? 1);
        a.errors += w.errors;
        a.secs += o.windowMs / 1000;
        a.cpu += c1 - c0;
        a.counted += k1 - k0;
        acc.set(key(name, side.label), a);
        const perSec = w.inferPerSec * (side.rowsPerRequest ?? 1);
        o.log(`${name} round ${round + 1}/${o.rounds} ${side.label}: ${perSec.toFixed(perSec < 100 ? 1 : 0)} infer/s`);
      }
    }
  }
  for (const { name } of loads) {
    for (const side of sides) {
      const a = acc.get(key(name, side.label));
      if (!a) continue;
      const sorted = Float64Array.from(a.lat).sort();
      rows.push({
        load: side.load ? loadName(side.load) : name,
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

function loadName(load: Load): string {
  return load.kind === 'concurrency' ? `c=${load.concurrency}` : `${load.perSec} req/s`;
}
