/**
 * Where one request's time goes, stage by stage across the processes: the
 * mesh runs with a fraction of requests traced (parent-based trace-id ratio
 * sampler, OTLP/HTTP to a sink in this process), a closed loop drives tiny,
 * and each sampled trace's spans are laid end to end. The hops between
 * processes are the gaps between one service's span end and the next one's
 * start (one host, one clock). Prints a table per concurrency and writes
 * bench-results/stage-breakdown.{json,md}.
 *
 *   node --import tsx test/bench/stage-breakdown.ts [--model tiny] [--levels 1,16] [--seconds 10] [--ratio 0.05]
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT } from '@ge-mesh/launcher';
import { httpTarget, LoadDriver, percentile } from '@ge-mesh/loadgen';
import protobuf from 'protobufjs';
import { startTestMesh } from '../support/mesh-harness.js';

const { values } = parseArgs({
  options: {
    model: { type: 'string', default: 'tiny' },
    levels: { type: 'string', default: '1,16' },
    seconds: { type: 'string', default: '10' },
    ratio: { type: 'string', default: '0.05' },
  },
});

// The fields of OTLP's ExportTraceServiceRequest this bench reads (field numbers as in
// opentelemetry-proto's trace.proto); protobufjs skips every other field.
const OTLP_SUBSET = `
syntax = "proto3";
message AnyValue { string string_value = 1; }
message KeyValue { string key = 1; AnyValue value = 2; }
message Resource { repeated KeyValue attributes = 1; }
message Span {
  bytes trace_id = 1; bytes span_id = 2; bytes parent_span_id = 4; string name = 5;
  fixed64 start_time_unix_nano = 7; fixed64 end_time_unix_nano = 8;
  repeated Event events = 11;
}
message Event { fixed64 time_unix_nano = 1; string name = 2; }
message ScopeSpans { repeated Span spans = 2; }
message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; }
message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
`;
const ExportRequest = protobuf.parse(OTLP_SUBSET).root.lookupType('ExportTraceServiceRequest');

interface SpanRecord {
  readonly service: string;
  readonly name: string;
  readonly spanId: string;
  readonly parentId: string;
  /** Microseconds since the epoch. */
  readonly start: number;
  readonly end: number;
  /** Its events' times by name, µs since the epoch. */
  readonly events: ReadonlyMap<string, number>;
}

interface DecodedSpan {
  traceId: Uint8Array;
  spanId: Uint8Array;
  parentSpanId: Uint8Array;
  name: string;
  startTimeUnixNano: { toNumber(): number } | number;
  endTimeUnixNano: { toNumber(): number } | number;
  events: Array<{ name: string; timeUnixNano: { toNumber(): number } | number }>;
}

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const micros = (n: DecodedSpan['startTimeUnixNano']) => (typeof n === 'number' ? n : n.toNumber()) / 1000;

/** An OTLP/HTTP (protobuf) endpoint that keeps every span, grouped by trace. */
async function collectingSink() {
  const traces = new Map<string, SpanRecord[]>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const msg = ExportRequest.toObject(ExportRequest.decode(Buffer.concat(chunks)), { defaults: true }) as {
        resourceSpans: Array<{
          resource?: { attributes: Array<{ key: string; value?: { stringValue: string } }> };
          scopeSpans: Array<{ spans: DecodedSpan[] }>;
        }>;
      };
      for (const rs of msg.resourceSpans) {
        const service = rs.resource?.attributes.find((a) => a.key === 'service.name')?.value?.stringValue ?? '?';
        for (const ss of rs.scopeSpans) {
          for (const s of ss.spans) {
            const id = hex(s.traceId);
            const list = traces.get(id) ?? [];
            list.push({
              service,
              name: s.name,
              spanId: hex(s.spanId),
              parentId: hex(s.parentSpanId),
              start: micros(s.startTimeUnixNano),
              end: micros(s.endTimeUnixNano),
              events: new Map(s.events.map((e) => [e.name, micros(e.timeUnixNano)])),
            });
            traces.set(id, list);
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    traces,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * One request's path as consecutive stages: [label, from, to] in µs. Undefined
 * for a trace that is not a one-request batch with every span present (a request
 * batched with others is parented by the batch's first member only).
 */
function stagesOf(spans: readonly SpanRecord[]): Array<[string, number]> | undefined {
  const one = (name: string) => {
    const found = spans.filter((s) => s.name === name);
    return found.length === 1 ? found[0] : undefined;
  };
  const infer = spans.find((s) => s.name.startsWith('infer '));
  const validate = one('gateway validate');
  const publish = one('gateway publish');
  const wait = one('gateway wait reply');
  const received = one('batcher queue wait')?.events.get('received by the batcher');
  const batch = one('batcher batch');
  const worker = one('worker batch');
  const laneWait = one('lane wait');
  const assemble = one('assemble');
  const run = one('device run');
  const slice = one('slice');
  const encode = one('encode');
  const reply = one('reply publish');
  if (!infer || !validate || !publish || !wait || !received || !batch || !worker || !reply) return undefined;
  if (!laneWait || !assemble || !run || !slice || !encode) return undefined;
  // Consecutive stages first (they add up to the total), then two that overlap them.
  const points: Array<[string, number, number]> = [
    ['gateway: accept → validate', infer.start, validate.start],
    ['gateway: validate', validate.start, validate.end],
    ['gateway: validate → publish (admission)', validate.end, publish.start],
    ['gateway → batcher: publish, broker', publish.start, received],
    ['batcher: receive → batch formed (queue, create-batch in Redis)', received, batch.start],
    ['batcher → worker: encode, publish, broker', batch.start, worker.start],
    ['worker: consume → lane starts', worker.start, laneWait.end],
    ['lane: assemble', assemble.start, assemble.end],
    ['lane: device run', run.start, run.end],
    ['lane: slice', slice.start, slice.end],
    ['lane: encode', encode.start, encode.end],
    ['worker: lane → reply publish', encode.end, reply.start],
    ['worker → gateway: publish, broker, reply routing', reply.start, wait.end],
    ['gateway: reply → answered', wait.end, infer.end],
    ['(beside) gateway publish until confirmed', publish.start, publish.end],
    ['(beside) batcher publish until confirmed', batch.start, batch.end],
  ];
  return [
    ...points.map(([label, from, to]): [string, number] => [label, to - from]),
    ['total', infer.end - infer.start],
  ];
}

interface StageRow {
  readonly stage: string;
  readonly p50Us: number;
  readonly p90Us: number;
  readonly meanUs: number;
}

function summarize(traces: Map<string, SpanRecord[]>): { rows: StageRow[]; traced: number } {
  const by = new Map<string, number[]>();
  let traced = 0;
  for (const spans of traces.values()) {
    const stages = stagesOf(spans);
    if (!stages) continue;
    traced++;
    for (const [label, us] of stages) {
      const list = by.get(label) ?? [];
      list.push(us);
      by.set(label, list);
    }
  }
  const rows = [...by].map(([stage, list]) => {
    const sorted = Float64Array.from(list).sort();
    return {
      stage,
      p50Us: percentile(sorted, 50),
      p90Us: percentile(sorted, 90),
      meanUs: list.reduce((a, b) => a + b, 0) / list.length,
    };
  });
  return { rows, traced };
}

const model = values.model;
const levels = values.levels.split(',').map(Number);
const seconds = Number(values.seconds);
const sink = await collectingSink();
const mesh = await startTestMesh({
  models: [model],
  logLevel: 'warn',
  flags: { batcher: ['--models', model], worker: ['--models', model] },
  env: {
    OTEL_EXPORTER_OTLP_ENDPOINT: sink.url,
    OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
    OTEL_TRACES_SAMPLER_ARG: values.ratio,
    OTEL_BSP_SCHEDULE_DELAY: '200',
  },
});
const report: Array<{ concurrency: number; inferPerSec: number; p50Ms: number; traced: number; rows: StageRow[] }> = [];
try {
  for (const concurrency of levels) {
    const target = await httpTarget({ url: mesh.url, model, batch: 1, inputData: 'random', binary: true });
    const d = new LoadDriver(target.send, { kind: 'concurrency', concurrency });
    d.start();
    await d.window(2_000);
    sink.traces.clear();
    process.stderr.write(`c=${concurrency}: measuring ${seconds} s\n`);
    const w = await d.window(seconds * 1000);
    await d.stop();
    await target.close();
    // Spans still in the services' export buffers arrive within a schedule delay or two.
    await new Promise((r) => setTimeout(r, 1_000));
    const { rows, traced } = summarize(sink.traces);
    const sorted = Float64Array.from(w.latenciesUs).sort();
    report.push({ concurrency, inferPerSec: w.inferPerSec, p50Ms: percentile(sorted, 50) / 1000, traced, rows });
  }
} finally {
  await mesh.teardown();
  await sink.close();
}

const md = [
  `# Stage breakdown: ${model}`,
  '',
  `A fraction (${values.ratio}) of requests traced; each row is one stage of a request that ran alone in its batch, µs. Stages that cross processes are measured on one clock (each process's high-resolution wall clock) and include the receiving process's delay in picking the message up; the two rows marked (beside) overlap the others.`,
  '',
];
for (const r of report) {
  md.push(
    `## concurrency ${r.concurrency}: ${r.inferPerSec.toFixed(0)} infer/s, client p50 ${r.p50Ms.toFixed(2)} ms, ${r.traced} one-request traces`,
    '',
    '| stage | p50 µs | p90 µs | mean µs |',
    '|---|---|---|---|',
    ...r.rows.map((s) => `| ${s.stage} | ${s.p50Us.toFixed(0)} | ${s.p90Us.toFixed(0)} | ${s.meanUs.toFixed(0)} |`),
    '',
  );
}
const text = md.join('\n');
process.stdout.write(`${text}\n`);
const dir = join(ROOT, 'bench-results');
await mkdir(dir, { recursive: true });
await writeFile(
  join(dir, 'stage-breakdown.json'),
  `${JSON.stringify({ model, ratio: values.ratio, report }, null, 2)}\n`,
);
await writeFile(join(dir, 'stage-breakdown.md'), `${text}\n`);
