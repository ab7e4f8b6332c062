import { parseArgs } from 'node:util';
import { startMesh } from './mesh-processes.js';

/**
 * `npm start`: the whole mesh on this machine (gateway, batcher, N CPU
 * workers) serving a model repository, until Ctrl-C.
 */
const { values } = parseArgs({
  options: {
    workers: { type: 'string', default: process.env.GEMESH_WORKERS ?? '1' },
    'http-port': { type: 'string', default: process.env.GEMESH_HTTP_PORT ?? '8000' },
    'model-repository': { type: 'string', default: process.env.GEMESH_MODEL_REPOSITORY ?? 'infra/model_repository' },
    namespace: { type: 'string', default: process.env.GEMESH_NAMESPACE ?? 'gemesh' },
    'log-level': { type: 'string', default: process.env.GEMESH_LOG_LEVEL ?? 'info' },
    // Workers on NPUs: each leases one of the machine's devices (ge), instead of a share of the CPU (ort).
    runtime: { type: 'string', default: process.env.GEMESH_RUNTIME ?? 'ort' },
  },
});
const workers = Number(values.workers);
const httpPort = Number(values['http-port']);
if (!Number.isInteger(workers) || workers < 1)
  throw new Error(`--workers must be a positive integer, got ${values.workers}`);

const mesh = await startMesh({
  namespace: values.namespace,
  modelRepository: values['model-repository'],
  httpPort,
  workers,
  logLevel: values['log-level'],
  flags: { worker: ['--runtime', values.runtime] },
});
const url = `http://localhost:${httpPort}`;
const x = Array.from({ length: 16 }, (_, i) => (i / 16).toFixed(4)).join(',');
process.stdout.write(`
GE Mesh is up: ${url}  (KServe v2 REST; ${workers} ${values.runtime === 'ge' ? 'NPU' : 'CPU'} worker${workers > 1 ? 's' : ''})

Try it:
  curl -s ${url}/v2/models/tiny
  curl -s -X POST ${url}/v2/models/tiny/infer -H 'Content-Type: application/json' \\
    -d '{"inputs":[{"name":"x","shape":[1,16],"datatype":"FP32","data":[${x}]}]}'

Ctrl-C stops every service.
`);

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await mesh.stop();
  process.exit(0);
};
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
// Workers are started again when they die; the gateway and the batcher stop the mesh.
for (const s of mesh.services.filter((x) => !x.name.startsWith('worker-'))) {
  void s.exited.then((code) => {
    if (!stopping) {
      process.stderr.write(`${s.name} exited with code ${code}; stopping the mesh\n`);
      void stop().then(() => process.exit(1));
    }
  });
}
