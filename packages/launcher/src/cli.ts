import { exitWithUsageError, parseCommandLine } from '@ge-mesh/settings';
import { type RunningMesh, startMesh } from './mesh-processes.js';
import { tryItLines } from './try-it.js';

/**
 * `npm start`: the whole mesh on this machine (gateway, batcher, N CPU
 * workers) serving a model repository, until Ctrl-C or SIGTERM. Every
 * service that exits is started again with capped exponential backoff, so a
 * broker or Redis outage that takes a service down heals by itself.
 */
const USAGE = `Usage: npm start -- [options]   (or: node --import tsx packages/launcher/src/cli.ts [options])

Runs the gateway, the batcher and N workers on this machine against the local RabbitMQ and Redis.
Options (flag, environment variable, default):
  --workers N              (GEMESH_WORKERS, 1) worker processes; CPU workers split the cores
  --http-port N            (GEMESH_HTTP_PORT, 8000) KServe v2 REST port
  --grpc-port N            (GEMESH_GRPC_PORT, 8001) KServe v2 gRPC port
  --worker-metrics-port N  (GEMESH_WORKER_METRICS_PORT, 8004) metrics port of worker 0; worker i uses N + i
                           (the gateway serves metrics on 8002, the batcher on 8003)
  --model-repository DIR   (GEMESH_MODEL_REPOSITORY, infra/model_repository) Triton-layout model repository
  --namespace NAME         (GEMESH_NAMESPACE, gemesh) prefix of every queue, exchange and Redis key
  --log-level LEVEL        (GEMESH_LOG_LEVEL, info) fatal, error, warn, info, debug or trace
  --runtime ort|ge         (GEMESH_RUNTIME, ort) ort: onnxruntime on CPU; ge: CANN GE on NPUs (one device per worker)
  -h, --help               this text
Every other service option is read from its GEMESH_* variable (see each service's --help).`;

const env = process.env;
const values = parseCommandLine('launcher', USAGE, {
  help: { type: 'boolean', short: 'h' },
  workers: { type: 'string', default: env.GEMESH_WORKERS ?? '1' },
  'http-port': { type: 'string', default: env.GEMESH_HTTP_PORT ?? '8000' },
  'grpc-port': { type: 'string', default: env.GEMESH_GRPC_PORT ?? '8001' },
  'worker-metrics-port': { type: 'string', default: env.GEMESH_WORKER_METRICS_PORT ?? '8004' },
  'model-repository': { type: 'string', default: env.GEMESH_MODEL_REPOSITORY ?? 'infra/model_repository' },
  namespace: { type: 'string', default: env.GEMESH_NAMESPACE ?? 'gemesh' },
  'log-level': { type: 'string', default: env.GEMESH_LOG_LEVEL ?? 'info' },
  // Workers on NPUs: each leases one of the machine's devices (ge), instead of a share of the CPU (ort).
  runtime: { type: 'string', default: env.GEMESH_RUNTIME ?? 'ort' },
});

function integer(flag: string, raw: string, min: number, max: number): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max)
    exitWithUsageError('launcher', `--${flag} must be an integer from ${min} to ${max}, got '${raw}'`);
  return n;
}
const workers = integer('workers', values.workers, 1, 256);
const httpPort = integer('http-port', values['http-port'], 0, 65535);
const grpcPort = integer('grpc-port', values['grpc-port'], 0, 65535);
const workerMetricsPort = integer('worker-metrics-port', values['worker-metrics-port'], 0, 65535);
const metricsPortFromEnv =
  env.GEMESH_METRICS_PORT !== undefined &&
  env.GEMESH_WORKER_METRICS_PORT === undefined &&
  !process.argv.some((a) => a.startsWith('--worker-metrics-port'));
if (values.runtime !== 'ort' && values.runtime !== 'ge')
  exitWithUsageError('launcher', `--runtime must be ort or ge, got '${values.runtime}'`);
if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace'].includes(values['log-level']))
  exitWithUsageError(
    'launcher',
    `--log-level must be fatal, error, warn, info, debug or trace, got '${values['log-level']}'`,
  );

// Ctrl-C or SIGTERM while the mesh starts stops the processes started so far; afterwards it stops the mesh.
const starting = new AbortController();
let mesh: RunningMesh | undefined;
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  if (!mesh) return starting.abort();
  await mesh.stop();
  process.exit(0);
};
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());

try {
  mesh = await startMesh({
    namespace: values.namespace,
    modelRepository: values['model-repository'],
    httpPort,
    grpcPort,
    workers,
    logLevel: values['log-level'],
    flags: { worker: ['--runtime', values.runtime] },
    // Worker i serves metrics on 8004 + i (gateway 8002, batcher 8003: their own defaults), unless
    // GEMESH_METRICS_PORT chooses one port for every service (0: each a free one).
    ...(metricsPortFromEnv ? {} : { workerMetricsPort }),
    restart: 'all',
    signal: starting.signal,
  });
} catch (err) {
  process.stderr.write(`${(err as Error).message}\n`);
  // Stopped on request is a clean exit, as it is once the mesh is up.
  process.exit(starting.signal.aborted ? 0 : 1);
}
const url = `http://localhost:${httpPort}`;
// With API keys configured the index needs one: fall back to a plain hint.
const tryIt = await tryItLines(url).catch(() => [`  curl -s ${url}/v2/health/ready`]);
process.stdout.write(`
GE Mesh is up: ${url}  (KServe v2 REST; ${workers} ${values.runtime === 'ge' ? 'NPU' : 'CPU'} worker${workers > 1 ? 's' : ''})
               localhost:${grpcPort}  (KServe v2 / Triton gRPC, inference.GRPCInferenceService)
${metricsPortFromEnv ? '' : `Metrics:       localhost:8002/metrics (gateway), :8003 (batcher), :${workerMetricsPort}${workers > 1 ? `-${workerMetricsPort + workers - 1}` : ''} (workers)\n`}
Try it:
${tryIt.join('\n')}

A service that exits is started again; Ctrl-C stops every service.
`);
