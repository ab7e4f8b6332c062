import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  LoadDriver,
  measureUntilStable,
  mergeBreakdowns,
  percentile,
  type ServerBreakdown,
  summarize,
  sweep,
  toCsv,
  type WindowResult,
  warmUp,
} from '@ge-mesh/loadgen';

describe('load generator', () => {
  it('percentiles by nearest rank, index = round(p/100 × (n − 1)), as perf_analyzer', () => {
    const xs = Array.from({ length: 101 }, (_, i) => i * 10);
    assert.equal(percentile(xs, 50), 500);
    assert.equal(percentile(xs, 99), 990);
    assert.equal(percentile([5, 7], 50), 7); // round(0.5) = 1
    const s = summarize([4, 1, 3, 2]);
    assert.deepEqual([s.count, s.avgUs, s.p50Us, s.maxUs], [4, 2.5, 3, 4]);
  });

  const w = (inferPerSec: number, latencyUs: number): WindowResult => ({
    inferPerSec,
    latencyUs,
    latenciesUs: [latencyUs],
    requests: 1,
    errors: 0,
    seconds: 1,
  });

  it('stops at the first three windows within the stability percentage', async () => {
    const seq = [w(100, 1000), w(200, 900), w(210, 950), w(205, 940), w(208, 945), w(1, 1)];
    let i = 0;
    const r = await measureUntilStable(async () => seq[i++] as WindowResult, { stabilityPercent: 10, maxTrials: 10 });
    assert.equal(r.stable, true);
    assert.equal(r.windows.length, 4);
    assert.deepEqual(
      r.merged.map((x) => x.inferPerSec),
      [200, 210, 205],
    );
  });

  it('gives up after max trials, unstable', async () => {
    let i = 0;
    const r = await measureUntilStable(async () => w(++i * 100, 1000), { stabilityPercent: 10, maxTrials: 5 });
    assert.equal(r.stable, false);
    assert.equal(r.windows.length, 5);
  });

  it('closed loop keeps exactly `concurrency` requests open', async () => {
    let open = 0;
    let most = 0;
    const d = new LoadDriver(
      async () => {
        open++;
        most = Math.max(most, open);
        await new Promise((r) => setTimeout(r, 5));
        open--;
        return true;
      },
      { kind: 'concurrency', concurrency: 4 },
    );
    d.start();
    const win = await d.window(200);
    await d.stop();
    assert.equal(most, 4);
    assert.ok(win.requests > 20, `${win.requests} requests`);
  });

  it('a warm-up holds `concurrency` requests open and leaves none open when it returns', async () => {
    let open = 0;
    let most = 0;
    let sent = 0;
    await warmUp(
      async () => {
        open++;
        sent++;
        most = Math.max(most, open);
        await new Promise((r) => setTimeout(r, 5));
        open--;
        return true;
      },
      3,
      100,
    );
    assert.equal(most, 3);
    assert.equal(open, 0);
    assert.ok(sent >= 3, `${sent} requests`);
    const before = sent;
    await warmUp(async () => ++sent > 0, 3, 0);
    assert.equal(sent, before, 'no warm-up asked, none sent');
  });

  it('fixed rate sends on schedule whatever the answers do', async () => {
    let sent = 0;
    const d = new LoadDriver(
      async () => {
        sent++;
        await new Promise((r) => setTimeout(r, 50));
        return true;
      },
      { kind: 'rate', perSec: 200, distribution: 'constant' },
    );
    d.start();
    await new Promise((r) => setTimeout(r, 500));
    await d.stop();
    // 200/s for 0.5 s with 50 ms answers: ~100 sent, far more than a closed loop of one could.
    assert.ok(sent >= 80 && sent <= 110, `${sent} sent`);
  });

  const part = (requests: number, queueUs: number): ServerBreakdown => ({
    requests,
    requestUs: queueUs + 100,
    queueUs,
    computeInputUs: 0,
    computeInferUs: 100,
    computeOutputUs: 0,
    overheadUs: 0,
  });

  it('merges window breakdowns weighted by their requests', () => {
    const m = mergeBreakdowns([part(1, 10), part(3, 30)]);
    assert.equal(m?.requests, 4);
    assert.equal(m?.queueUs, 25);
    assert.equal(m?.computeInferUs, 100);
    assert.equal(mergeBreakdowns([]), undefined);
  });

  it("a level's server breakdown covers every window it merges, not only the last", async () => {
    // Window i (1-based, after the warmup snapshot) reports a queue time of i ms.
    let snapshots = 0;
    const [r] = await sweep({
      send: async () => {
        await new Promise((res) => setTimeout(res, 2));
        return true;
      },
      mode: 'concurrency',
      levels: [1],
      windowMs: 40,
      stabilityPercent: 10_000,
      maxTrials: 3,
      serverSnapshot: async () => snapshots++,
      serverDelta: (_a, b) => part(1, (b as number) * 1000),
    });
    assert.equal(r?.windows, 3);
    assert.equal(r?.server?.requests, 3);
    assert.equal(r?.server?.queueUs, 2000);
  });

  it("CSV has perf_analyzer's leading columns and rows sorted by throughput", () => {
    const row = (level: number, inferPerSec: number) => ({
      level,
      mode: 'concurrency' as const,
      stable: true,
      windows: 3,
      inferPerSec,
      requests: 10,
      errors: 0,
      avgUs: 1000,
      p50Us: 900,
      p90Us: 1100,
      p95Us: 1200,
      p99Us: 1500,
    });
    const lines = toCsv([row(4, 300), row(1, 100)])
      .trim()
      .split('\n');
    assert.equal(lines[0]?.split(',').slice(0, 2).join(','), 'Concurrency,Inferences/Second');
    assert.deepEqual(
      lines.slice(1).map((l) => l.split(',')[0]),
      ['1', '4'],
    );
  });
});
