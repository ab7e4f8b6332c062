/**
 * ge-mesh-loadgen: perf_analyzer-style load against a KServe v2 endpoint.
 *
 *   node --import tsx packages/loadgen/src/cli.ts -m tiny --concurrency-range 1:16:2 -f out.csv --plot out.svg
 *   node --import tsx packages/loadgen/src/cli.ts -m resnet18 --request-rate-range 10:50:10 --request-distribution poisson
 */
import { writeFile } from 'node:fs/promises';
import { exitWithUsageError, parseCommandLine } from '@ge-mesh/settings';
import { Pool } from 'undici';
import { amqpTarget } from './amqp-target.js';
import { grpcTarget } from './grpc-target.js';
import { httpTarget } from './kserve-http.js';
import { lineChartSvg } from './plot.js';
import { toCsv, toMarkdownTable } from './report.js';
import { breakdown, type InferenceStatsSnapshot, readStats } from './server-stats.js';
import { sweep } from './sweep.js';

const HELP = `Usage: ge-mesh-loadgen -m MODEL [options]
  -u, --url URL                    server (default http://localhost:8000)
  -m, --model NAME                 model to load
  -x, --model-version N            version (default: latest)
  -b, --batch-size N               rows per request (default 1)
  --concurrency-range S[:E[:STEP]] closed-loop concurrency sweep (default 1)
  --request-rate-range S[:E[:STEP]] open-loop request rate sweep (req/s)
  --request-distribution D         constant | poisson (default constant)
  -p, --measurement-interval MS    window length (default 5000)
  -s, --stability-percentage P     windows agree within P% (default 10)
  --max-trials N                   windows per level at most (default 10)
  --percentile P                   latency used for stability (default: average)
  --latency-threshold MS           stop the sweep once p99 passes it
  --input-data zero|random         request data (default random)
  --shape NAME:D1,D2               dims for variable inputs (repeatable)
  --json-data                      send JSON tensors instead of the binary extension
  -H, --header K:V                 extra HTTP header (repeatable), e.g. "Authorization: Bearer t"
  -i, --protocol http|grpc|amqp    KServe v2 over HTTP (default), over gRPC, or the mesh's AMQP ingress
  --grpc-url HOST:PORT             for -i grpc (default localhost:8001)
  --streaming                      for -i grpc: one ModelStreamInfer stream instead of ModelInfer calls
  --rabbitmq-url URL               for -i amqp (default amqp://guest:guest@127.0.0.1:5672)
  --namespace NS                   for -i amqp: the mesh's namespace (default gemesh)
  --api-key KEY                    for -i amqp and -i grpc: the client's API key
  -f, --csv PATH                   perf_analyzer-style CSV
  --json PATH                      every figure as JSON
  --plot PATH.svg                  latency/throughput chart
  -h, --help                       this text
`;

function range(spec: string): number[] {
  const [s, e, st] = spec.split(':').map(Number);
  if (!Number.isFinite(s) || (s ?? 0) <= 0)
    exitWithUsageError('ge-mesh-loadgen', `bad range '${spec}': use start[:end[:step]] with positive numbers`);
  const start = s as number;
  const end = Number.isFinite(e) ? (e as number) : start;
  const step = Number.isFinite(st) && (st as number) > 0 ? (st as number) : 1;
  const out: number[] = [];
  for (let v = start; v <= end; v += step) out.push(v);
  return out;
}

const values = parseCommandLine('ge-mesh-loadgen', HELP, {
  help: { type: 'boolean', short: 'h' },
  url: { type: 'string', short: 'u', default: 'http://localhost:8000' },
  model: { type: 'string', short: 'm' },
  'model-version': { type: 'string', short: 'x' },
  'batch-size': { type: 'string', short: 'b', default: '1' },
  'concurrency-range': { type: 'string' },
  'request-rate-range': { type: 'string' },
  'request-distribution': { type: 'string', default: 'constant' },
  'measurement-interval': { type: 'string', short: 'p', default: '5000' },
  'stability-percentage': { type: 'string', short: 's', default: '10' },
  'max-trials': { type: 'string', default: '10' },
  percentile: { type: 'string', default: '0' },
  'latency-threshold': { type: 'string' },
  'input-data': { type: 'string', default: 'random' },
  shape: { type: 'string', multiple: true },
  'json-data': { type: 'boolean', default: false },
  header: { type: 'string', short: 'H', multiple: true },
  protocol: { type: 'string', short: 'i', default: 'http' },
  'grpc-url': { type: 'string', default: 'localhost:8001' },
  streaming: { type: 'boolean', default: false },
  'rabbitmq-url': { type: 'string', default: 'amqp://guest:guest@127.0.0.1:5672' },
  namespace: { type: 'string', default: 'gemesh' },
  'api-key': { type: 'string' },
  csv: { type: 'string', short: 'f' },
  json: { type: 'string' },
  plot: { type: 'string' },
});
if (!values.model) exitWithUsageError('ge-mesh-loadgen', 'a model is required (-m NAME)');
const model = values.model;
const batch = Number(values['batch-size']);
const rate = values['request-rate-range'];
const levels = rate ? range(rate) : range(values['concurrency-range'] ?? '1');
const headers = Object.fromEntries(
  (values.header ?? []).map((h) => {
    const i = h.indexOf(':');
    return [h.slice(0, i).trim().toLowerCase(), h.slice(i + 1).trim()];
  }),
);
const shapes = Object.fromEntries(
  (values.shape ?? []).map((s) => {
    const [name, dims] = s.split(':');
    return [name ?? '', (dims ?? '').split(',').map(Number)];
  }),
);
const distribution = values['request-distribution'] === 'poisson' ? 'poisson' : 'constant';

const common = {
  url: values.url,
  model,
  ...(values['model-version'] ? { version: values['model-version'] } : {}),
  batch,
  inputData: values['input-data'] === 'zero' ? ('zero' as const) : ('random' as const),
  shapes,
};
const target =
  values.protocol === 'amqp'
    ? await amqpTarget({
        ...common,
        rabbitmqUrl: values['rabbitmq-url'],
        namespace: values.namespace,
        ...(values['api-key'] ? { apiKey: values['api-key'] } : {}),
      })
    : values.protocol === 'grpc'
      ? await grpcTarget({
          ...common,
          grpcUrl: values['grpc-url'],
          streaming: values.streaming,
          ...(values['api-key'] ? { apiKey: values['api-key'] } : {}),
        })
      : await httpTarget({ ...common, binary: !values['json-data'], headers });
// The server-side breakdown comes from the gateway's HTTP statistics in both cases.
const statsPool = new Pool(values.url, { connections: 2 });
process.stderr.write(
  `*** Measurement settings ***\n  model ${model}, batch ${batch}, ${rate ? `request rate ${levels.join(',')} (${distribution})` : `concurrency ${levels.join(',')}`}, ` +
    `window ${values['measurement-interval']} ms, stability ${values['stability-percentage']}%\n`,
);
const results = await sweep({
  send: target.send,
  mode: rate ? 'rate' : 'concurrency',
  levels,
  distribution,
  batch,
  windowMs: Number(values['measurement-interval']),
  stabilityPercent: Number(values['stability-percentage']),
  maxTrials: Number(values['max-trials']),
  latencyPercentile: Number(values.percentile),
  ...(values['latency-threshold'] ? { latencyThresholdMs: Number(values['latency-threshold']) } : {}),
  serverSnapshot: () => readStats(statsPool, model, headers).catch(() => null),
  serverDelta: (a, b) => (a && b ? breakdown(a as InferenceStatsSnapshot, b as InferenceStatsSnapshot) : undefined),
  log: (l) => process.stderr.write(`${l}\n`),
});
await target.close();
await statsPool.close();

process.stdout.write(`\n${toMarkdownTable(results)}\n`);
if (values.csv) await writeFile(values.csv, toCsv(results));
if (values.json) await writeFile(values.json, JSON.stringify({ model, batch, results }, null, 2));
if (values.plot) {
  const rows = results.flatMap((r) => [
    { throughput: r.inferPerSec, latency: r.p50Us / 1000, series: 'p50' },
    { throughput: r.inferPerSec, latency: r.p99Us / 1000, series: 'p99' },
  ]);
  await writeFile(
    values.plot,
    await lineChartSvg({
      title: `${model}: latency vs throughput`,
      rows,
      x: 'throughput',
      y: 'latency',
      series: 'series',
      xTitle: 'infer/s',
      yTitle: 'latency (ms)',
    }),
  );
}
