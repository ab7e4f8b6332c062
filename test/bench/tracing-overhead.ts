import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestMesh, type TestMesh } from '../support/mesh-harness.js';
import { meshSide, sideBySide } from './side-by-side.js';

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
  /** OTLP exports the sink received during the measured windows (0 when off). */
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
  const meshes: TestMesh[] = [];
  const rows: TracingRow[] = [];
  try {
    meshes.push(await startTestMesh(base));
    meshes.push(
      await startTestMesh({
        ...base,
        env: { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_TRACES_SAMPLER: 'parentbased_always_on' },
      }),
    );
    const sides = (['off', 'on (100 % sampled)'] as const).map((label, i) =>
      meshSide(label, meshes[i] as TestMesh, 'tiny'),
    );
    const loads = levels.map((c) => ({ name: `c=${c}`, load: { kind: 'concurrency' as const, concurrency: c } }));
    const measured = await sideBySide(sides, loads, { rounds, windowMs, log, count: sink.exports });
    rows.push(
      ...measured.map((r) => ({
        tracing: r.side as TracingRow['tracing'],
        concurrency: Number(r.load.slice(2)),
        inferPerSec: r.inferPerSec,
        p50Ms: r.p50Ms,
        p99Ms: r.p99Ms,
        cpuMsPerRequest: r.cpuMsPerRequest,
        spans: r.counted,
      })),
    );
  } finally {
    for (const mesh of meshes) await mesh.teardown();
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
