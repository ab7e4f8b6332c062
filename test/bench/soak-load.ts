import { demoModel, sampleInputs } from '@ge-mesh/demo-models';
import { Pool } from 'undici';
import { jsonInferBody, type Reference, toleranceRatio } from '../support/reference.js';

/**
 * Open-loop HTTP load on `tiny` for a long run: requests fired on schedule
 * whatever the answers do, each answer counted as it comes and then dropped
 * (a soak sends far too many to keep them all, as the fault tests do). A set
 * of inputs is prepared once with their reference outputs, so every 200 is
 * checked without running the model again.
 */

/** Distinct inputs cycled through: enough that batches mix different rows. */
const INPUT_SETS = 256;

export interface PreparedInputs {
  bodies: string[];
  expected: Float32Array[];
}

export async function prepareTinyInputs(ref: Reference): Promise<PreparedInputs> {
  const bodies: string[] = [];
  const expected: Float32Array[] = [];
  for (let i = 0; i < INPUT_SETS; i++) {
    const inputs = sampleInputs(demoModel('tiny'), 1, 7_000 + i);
    bodies.push(jsonInferBody(inputs));
    const y = (await ref.run('tiny', inputs)).y?.data;
    if (!y) throw new Error('the reference gave no output y for tiny');
    expected.push(y);
  }
  return { bodies, expected };
}

export interface LoadCounts {
  sent: number;
  /** 200 with the right outputs. */
  ok: number;
  /** 503 with an error text: the mesh's typed refusal (not ready, timeout). */
  typed: number;
  /** Anything else (another status, a 200 with wrong outputs). */
  wrong: number;
  /** No answer by the deadline + 1 s, or a transport failure. */
  lost: number;
  /** Answers per error text or status, for the report. */
  codes: Record<string, number>;
}

export interface LoadWindow {
  /** Answers in the window and their latency percentiles, ms. */
  answered: number;
  p50Ms: number;
  p99Ms: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

export class OpenLoopLoad {
  private readonly pool: Pool;
  private readonly counts: LoadCounts = { sent: 0, ok: 0, typed: 0, wrong: 0, lost: 0, codes: {} };
  private readonly inflight = new Set<Promise<void>>();
  private latencies: number[] = [];
  private running = false;
  private loop: Promise<void> | undefined;

  constructor(
    url: string,
    private readonly rate: number,
    private readonly inputs: PreparedInputs,
    private readonly lostAfterMs: number,
  ) {
    // Connections for every request that may wait out a deadline at this rate, so none queues in the client.
    this.pool = new Pool(url, { connections: Math.min(1024, Math.ceil((rate * lostAfterMs) / 1000) + 16) });
  }

  start(): void {
    this.running = true;
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    const start = performance.now();
    while (this.running) {
      const due = Math.floor(((performance.now() - start) / 1000) * this.rate);
      while (this.counts.sent < due) this.fire(this.counts.sent);
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  private code(key: string): void {
    this.counts.codes[key] = (this.counts.codes[key] ?? 0) + 1;
  }

  private fire(seq: number): void {
    this.counts.sent++;
    const k = seq % this.inputs.bodies.length;
    const sentAt = performance.now();
    const p = this.pool
      .request({
        path: '/v2/models/tiny/infer',
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: this.inputs.bodies[k] as string,
        // Nothing waits forever: an answer this late is lost anyway.
        signal: AbortSignal.timeout(this.lostAfterMs + 5_000),
      })
      .then(async (res) => {
        const body = await res.body.text();
        const ms = performance.now() - sentAt;
        if (ms > this.lostAfterMs) {
          this.counts.lost++;
          this.code(`answered after ${Math.round(ms)} ms`);
          return;
        }
        this.latencies.push(ms);
        this.classify(res.statusCode, body, k);
      })
      .catch((err: Error) => {
        this.counts.lost++;
        this.code(`transport: ${err.message}`);
      })
      .finally(() => this.inflight.delete(p));
    this.inflight.add(p);
  }

  private classify(status: number, body: string, k: number): void {
    if (status === 200) {
      const y = (JSON.parse(body) as { outputs?: Array<{ name: string; data: number[] }> }).outputs?.find(
        (o) => o.name === 'y',
      )?.data;
      const want = this.inputs.expected[k] as Float32Array;
      if (y && toleranceRatio(y, want, 1e-4, 1e-3) <= 1) this.counts.ok++;
      else {
        this.counts.wrong++;
        this.code('200 with wrong outputs');
      }
      return;
    }
    let error: unknown;
    try {
      error = (JSON.parse(body) as { error?: unknown }).error;
    } catch {}
    if (status === 503 && typeof error === 'string') {
      this.counts.typed++;
      this.code(error);
    } else {
      this.counts.wrong++;
      this.code(`${status}: ${body.slice(0, 100)}`);
    }
  }

  /** Counts so far (a copy). */
  get totals(): LoadCounts {
    return { ...this.counts, codes: { ...this.counts.codes } };
  }

  /** Latency of the answers since the last call. */
  window(): LoadWindow {
    const l = this.latencies.sort((a, b) => a - b);
    this.latencies = [];
    return { answered: l.length, p50Ms: percentile(l, 50), p99Ms: percentile(l, 99) };
  }

  /** Stops sending and waits for every request still out (each ends by its abort signal at the latest). */
  async stop(): Promise<LoadCounts> {
    this.running = false;
    await this.loop;
    await Promise.all([...this.inflight]);
    await this.pool.close();
    return this.totals;
  }
}
