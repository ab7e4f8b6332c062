import { createPrng } from '@ge-mesh/onnx/prng';
import type { WindowResult } from './stability.js';
import { percentile } from './stats.js';

/**
 * Keeps load on a target while consecutive measurement windows are taken,
 * as perf_analyzer does. Two modes:
 * - concurrency: N loops, each sending its next request when the previous
 *   one answered (closed loop);
 * - rate: requests start on a schedule, constant or Poisson, whatever the
 *   answers do (open loop); latency counts from the scheduled start, so a
 *   server that falls behind shows it (no coordinated omission).
 */
export type LoadMode =
  | { kind: 'concurrency'; concurrency: number }
  | { kind: 'rate'; perSec: number; distribution: 'constant' | 'poisson'; seed?: number };

export type Send = (seq: number) => Promise<boolean>;

interface Done {
  start: number;
  end: number;
  ok: boolean;
}

export class LoadDriver {
  private done: Done[] = [];
  private running = false;
  private seq = 0;
  private readonly loops: Promise<void>[] = [];
  private readonly inFlight = new Set<Promise<void>>();
  /** Requests sent and not answered yet. */
  open = 0;

  constructor(
    private readonly send: Send,
    readonly mode: LoadMode,
    /** Rows per request, for infer/s. */
    readonly batch = 1,
  ) {}

  start(): void {
    this.running = true;
    if (this.mode.kind === 'concurrency') {
      for (let i = 0; i < this.mode.concurrency; i++) this.loops.push(this.closedLoop());
    } else {
      this.loops.push(this.openLoop(this.mode.perSec, this.mode.distribution, this.mode.seed ?? 1));
    }
  }

  private async one(start: number): Promise<void> {
    this.open++;
    const ok = await this.send(this.seq++).catch(() => false);
    this.open--;
    this.done.push({ start, end: performance.now(), ok });
  }

  private async closedLoop(): Promise<void> {
    while (this.running) await this.one(performance.now());
  }

  private async openLoop(perSec: number, distribution: 'constant' | 'poisson', seed: number): Promise<void> {
    const meanMs = 1000 / perSec;
    const u = createPrng(seed).next;
    const gap = distribution === 'poisson' ? () => -Math.log(1 - u()) * meanMs : () => meanMs;
    let next = performance.now();
    while (this.running) {
      const wait = next - performance.now();
      if (wait > 1) await new Promise((r) => setTimeout(r, wait - 0.5));
      // Send everything already due (timers are coarse): the schedule, not the timer, sets the rate.
      while (this.running && next <= performance.now() + 0.5) {
        const p = this.one(next);
        this.inFlight.add(p);
        void p.finally(() => this.inFlight.delete(p));
        next += gap();
      }
    }
  }

  /** Measure one window of `ms`; `latencyPercentile` 0 = average. */
  async window(ms: number, latencyPercentile = 0): Promise<WindowResult> {
    const from = performance.now();
    this.done = this.done.filter((d) => d.end > from);
    await new Promise((r) => setTimeout(r, ms));
    const to = performance.now();
    const mine = this.done.filter((d) => d.end > from && d.end <= to);
    this.done = this.done.filter((d) => d.end > to);
    const latenciesUs = mine.filter((d) => d.ok).map((d) => (d.end - d.start) * 1000);
    const seconds = (to - from) / 1000;
    const sorted = Float64Array.from(latenciesUs).sort();
    const avg = latenciesUs.reduce((a, b) => a + b, 0) / Math.max(1, latenciesUs.length);
    return {
      inferPerSec: (latenciesUs.length * this.batch) / seconds,
      latencyUs: latencyPercentile > 0 ? percentile(sorted, latencyPercentile) : avg,
      latenciesUs,
      requests: latenciesUs.length,
      errors: mine.length - latenciesUs.length,
      seconds,
    };
  }

  /** Stop sending and wait (at most `drainMs`) for requests in flight. */
  async stop(drainMs = 10_000): Promise<void> {
    this.running = false;
    const drain = new Promise((r) => setTimeout(r, drainMs));
    await Promise.race([Promise.all([...this.loops, ...this.inFlight]), drain]);
  }
}
