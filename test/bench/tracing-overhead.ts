import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { httpTarget, LoadDriver, percentile } from '@ge-mesh/loadgen';
import { startTestMesh, type TestMesh } from '../support/mesh-harness.js';
import { brokerAndRedisPids, cpuSeconds } from './process-metrics.js';

/**
 * What tracing costs: two meshes side by side on tiny, one as a default run
 * (no OTEL_* set: the SDK never starts) and one exporting every request's
 * spans (OTLP/HTTP to a local sink that discards them, the default
 * parent-based always-on sampler, so 100 % sampled). Windows alternate
 * between the two at each concurrency, so the machine's noise falls on both.
 */
export interface TracingRow {
  readonly tracing: 'off' | 'on (100 % sampled)';
  readonly concurrency: number;
  readonly inferPerSec: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Every mesh process, RabbitMQ and Redis, per answered request. */
  readonly cpuMsPerRequest: number;
  /** Spans the sink received while measuring (0 when off). */
  readonly spans: number;
}

export interface TracingOptions {
  readonly levels?: readonly number[];
  readonly rounds?: number;
  readonly windowMs?: number;
  readonly log?: (line: string) => void;
}

/** An OTLP/HTTP endpoint that accepts every export and counts its bytes as a sign of life. */
async function discardingSink(): Promise<{ url: string; exports: () => number; close: () => Promise<void> }> {
  let exports = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      exports++;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    exports: () => exports,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

export async function measureTracingOverhead(opts: TracingOptions = {}): Promise<TracingRow[]> {
  const levels = opts.levels ?? [1, 16, 64];
  const rounds = opts.rounds ?? 3;
  const windowMs = opts.windowMs ?? 3_000;
  const log = opts.log ?? (() => undefined);
  const sink = await discardingSink();
  const base = {
    models: ['tiny'],
    logLevel: 'warn',
    flags: { batcher: ['--models', 'tiny'], worker: ['--models', 'tiny'] },
  };
  const sides: Array<{ tracing: TracingRow['tracing']; mesh: TestMesh }> = [];
  const rows: TracingRow[] = [];
  try {
    sides.push({ tracing: 'off', mesh: await startTestMesh(base) });
    sides.push({
      tracing: 'on (100 % sampled)',
      mesh: await startTestMesh({
        ...base,
        env: { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_TRACES_SAMPLER: 'parentbased_always_on' },
      }),
    });
    const shared = brokerAndRedisPids().map((p) => p.pid);
    for (const concurrency of levels) {
      const acc = new Map<string, { lat: number[]; answered: number; secs: number; cpu: number; exports: number }>();
      for (let round = 0; round < rounds; round++) {
        for (const side of sides) {
          const target = await httpTarget({
            url: side.mesh.url,
            model: 'tiny',
            batch: 1,
            inputData: 'random',
            binary: true,
          });
          const d = new LoadDriver(target.send, { kind: 'concurrency', concurrency });
          d.start();
          await d.window(500);
          const pids = [...side.mesh.services.map((s) => s.child.pid ?? 0), ...shared];
          const c0 = pids.reduce((n, p) => n + cpuSeconds(p), 0);
          const e0 = sink.exports();
          const w = await d.window(windowMs);
          const c1 = pids.reduce((n, p) => n + cpuSeconds(p), 0);
          const e1 = sink.exports();
          await d.stop();
          await target.close();
          const a = acc.get(side.tracing) ?? { lat: [], answered: 0, secs: 0, cpu: 0, exports: 0 };
          a.lat.push(...w.latenciesUs);
          a.answered += w.requests - w.errors;
          a.secs += windowMs / 1000;
          a.cpu += c1 - c0;
          a.exports += e1 - e0;
          acc.set(side.tracing, a);
          log(
            `tracing ${side.tracing}, c=${concurrency}, round ${round + 1}/${rounds}: ${w.inferPerSec.toFixed(0)} infer/s`,
          );
        }
      }
      for (const side of sides) {
        const a = acc.get(side.tracing);
        if (!a) continue;
        const sorted = Float64Array.from(a.lat).sort();
        rows.push({
          tracing: side.tracing,
          concurrency,
          inferPerSec: a.answered / a.secs,
          p50Ms: percentile(sorted, 50) / 1000,
          p99Ms: percentile(sorted, 99) / 1000,
          cpuMsPerRequest: (a.cpu * 1000) / Math.max(1, a.answered),
          spans: a.exports,
        });
      }
    }
  } finally {
    for (const s of sides) await s.mesh.teardown();
    await sink.close();
  }
  return rows;
}

/** The report's section: both sides per concurrency, and on / off ratios. */
export function tracingSection(rows: readonly TracingRow[]): string[] {
  if (rows.length === 0) return [];
  const lines = [
    '## Tracing overhead (tiny, default run vs every request traced)',
    '',
    'Two meshes side by side, windows alternating: one with no `OTEL_*` set (the SDK never starts), one exporting every span over OTLP/HTTP to a local sink that discards them (parent-based always-on sampler). "exports" counts the OTLP requests the sink received during the measured windows.',
    '',
    '| tracing | concurrency | infer/s | p50 ms | p99 ms | CPU ms per request, all processes | exports | throughput on / off |',
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const r of rows) {
    const off = rows.find((o) => o.tracing === 'off' && o.concurrency === r.concurrency);
    const ratio = r.tracing === 'off' || !off ? '' : `${(r.inferPerSec / off.inferPerSec).toFixed(2)}×`;
    lines.push(
      `| ${r.tracing} | ${r.concurrency} | ${r.inferPerSec.toFixed(0)} | ${r.p50Ms.toFixed(2)} | ${r.p99Ms.toFixed(2)} | ${r.cpuMsPerRequest.toFixed(3)} | ${r.spans} | ${ratio} |`,
    );
  }
  return lines;
}
