import { parseArgs } from 'node:util';
import { type RunningMesh, startMesh } from './mesh-processes.js';

/**
 * `npm start`: the whole mesh on this machine (gateway, batcher, N CPU
 * workers) serving a model repository, until Ctrl-C or SIGTERM. Every
 * service that exits is started again with capped exponential backoff, so a
 * broker or Redis outage that takes a service down heals by itself.
 */
const { values } = parseArgs({
  options: {
    workers: { type: 'string', default: process.env.GEMESH_WORKERS ?? '1' },
    'http-port': { type: 'string', default: process.env.GEMESH_HTTP_PORT ?? '8000' },
    'grpc-port': { type: 'string', default: process.env.GEMESH_GRPC_PORT ?? '8001' },
    'model-repository': { type: 'string', default: process.env.GEMESH_MODEL_REPOSITORY ?? 'infra/model_repository' },
    namespace: { type: 'string', default: process.env.GEMESH_NAMESPACE ?? 'gemesh' },
    'log-level': { type: 'string', default: process.env.GEMESH_LOG_LEVEL ?? 'info' },
    // Workers on NPUs: each leases one of the machine's devices (ge), instead of a share of the CPU (ort).
    runtime: { type: 'string', default: process.env.GEMESH_RUNTIME ?? 'ort' },
  },
});
const workers = Number(values.workers);
const httpPort = Number(values['http-port']);
const grpcPort = Number(values['grpc-port']);
if (!Number.isInteger(workers) || workers < 1)
  throw new Error(`--workers must be a positive integer, got ${values.workers}`);

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
    // Worker i serves metrics on 8004 + i (gateway 8002, batcher 8003: their own defaults).
    workerMetricsPort: Number(process.env.GEMESH_WORKER_METRICS_PORT ?? 8004),
    restart: 'all',
    signal: starting.signal,
  });
} catch (err) {
  process.stderr.write(`${(err as Error).message}\n`);
  // Stopped on request is a clean exit, as it is once the mesh is up.
  process.exit(starting.signal.aborted ? 0 : 1);
}
const url = `http://localhost:${httpPort}`;
const x = Array.from({ length: 16 }, (_, i) => (i / 16).toFixed(4)).join(',');
process.stdout.write(`
GE Mesh is up: ${url}  (KServe v2 REST; ${workers} ${values.runtime === 'ge' ? 'NPU' : 'CPU'} worker${workers > 1 ? 's' : ''})
               localhost:${grpcPort}  (KServe v2 / Triton gRPC, inference.GRPCInferenceService)

Try it:
  curl -s ${url}/v2/models/tiny
  curl -s -X POST ${url}/v2/models/tiny/infer -H 'Content-Type: application/json' \\
    -d '{"inputs":[{"name":"x","shape":[1,16],"datatype":"FP32","data":[${x}]}]}'

A service that exits is started again; Ctrl-C stops every service.
`);
