import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { type Durability, topology } from '@ge-mesh/broker';
import { ingressNames } from '@ge-mesh/client';
import { ensureDemoModels } from '@ge-mesh/demo-models';
import { type MeshOptions, ROOT, type RunningMesh, startMesh } from '@ge-mesh/launcher';
import { BatchStore } from '@ge-mesh/store';
import amqp from 'amqplib';

export const RABBITMQ_URL = process.env.GEMESH_RABBITMQ_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
export const REDIS_URL = process.env.GEMESH_REDIS_URL ?? 'redis://127.0.0.1:6379';
export const DEMO_REPOSITORY = join(ROOT, 'infra/model_repository');
export const DEMO_MODELS = ['ocr_cls', 'preprocess', 'resnet18', 'text_encoder', 'tiny'];
/**
 * Durability mode of the meshes tests start (the services read GEMESH_DURABILITY
 * from the environment they inherit); the suite runs once per mode.
 */
export const DURABILITY = (process.env.GEMESH_DURABILITY ?? 'fast') as Durability;

/** The lowest port the kernel gives outgoing connections (Linux), or its usual default. */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (low > 0) return low;
  } catch {
    // not Linux: the default below
  }
  return 32768;
}

/**
 * A port a service can listen on. Chosen below the kernel's ephemeral range: a port the OS hands
 * out (listen on 0) may become the local port of any outgoing connection before the service binds
 * it (the mesh's own RabbitMQ and Redis connections), and the service then fails with EADDRINUSE.
 * Checked free on every address, as the gateway binds.
 */
export async function freePort(): Promise<number> {
  const low = ephemeralLow();
  const from = low > 12_000 ? 10_000 : 1_024;
  const to = low > 12_000 ? low : 10_000;
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = from + Math.floor(Math.random() * (to - from));
    const free = await new Promise<boolean>((resolve) => {
      const srv = createServer();
      srv.once('error', () => resolve(false));
      srv.listen(port, '0.0.0.0', () => srv.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error(`no free port found in ${from}..${to - 1}`);
}

export function uniqueNamespace(prefix: string): string {
  return `${prefix}-${randomBytes(4).toString('hex')}`;
}

export interface TestMesh extends RunningMesh {
  readonly namespace: string;
  /** Output of every service, for assertions and for failure reports. */
  readonly lines: string[];
  /** Stop the processes and remove the namespace's queues and Redis keys. */
  teardown(): Promise<void>;
}

/**
 * The real mesh as separate processes on a private namespace and port.
 * `purge: false` leaves the namespace's queues and keys at teardown: for a mesh on private
 * RabbitMQ and Redis instances, which go away with the test anyway.
 */
export async function startTestMesh(
  opts: Partial<MeshOptions> & { models?: string[]; purge?: boolean } = {},
): Promise<TestMesh> {
  await ensureDemoModels(DEMO_REPOSITORY);
  const namespace = opts.namespace ?? uniqueNamespace('t');
  const lines: string[] = [];
  const purge = async () => {
    if (opts.purge === false) return;
    // The gateway declares a request queue for every model of the repository, not only `models`.
    const repository = await readdir(opts.modelRepository ?? DEMO_REPOSITORY).catch(() => DEMO_MODELS);
    await purgeNamespace(namespace, [...new Set([...(opts.models ?? []), ...repository])]);
  };
  const starting = startMesh({
    namespace,
    modelRepository: opts.modelRepository ?? DEMO_REPOSITORY,
    httpPort: opts.httpPort ?? (await freePort()),
    ...(opts.grpcPort !== undefined ? { grpcPort: opts.grpcPort } : {}),
    workers: opts.workers ?? 1,
    logLevel: opts.logLevel ?? 'info',
    // Metrics on an ephemeral port: meshes of parallel tests must not fight over 8002.
    env: { GEMESH_RABBITMQ_URL: RABBITMQ_URL, GEMESH_REDIS_URL: REDIS_URL, GEMESH_METRICS_PORT: '0', ...opts.env },
    ...(opts.flags ? { flags: opts.flags } : {}),
    ...(opts.nodeArgs ? { nodeArgs: opts.nodeArgs } : {}),
    onLine: (svc, line) => {
      lines.push(`[${svc}] ${line}`);
      if (process.env.GEMESH_TEST_VERBOSE) process.stderr.write(`[${svc}] ${line}\n`);
    },
  });
  // A start that fails has stopped its processes: what they declared goes too.
  const mesh = await starting.catch(async (err: unknown) => {
    await purge().catch(() => undefined);
    throw err;
  });
  return {
    ...mesh,
    namespace,
    lines,
    async teardown() {
      await mesh.stop();
      await purge();
    },
  };
}

export async function purgeNamespace(namespace: string, models: string[]): Promise<void> {
  const topo = topology(namespace);
  const conn = await amqp.connect(RABBITMQ_URL);
  try {
    const ingress = ingressNames(namespace);
    for (const q of [...models.flatMap((m) => topo.workQueues(m)), topo.deadLetterQueue, ingress.queue]) {
      const ch = await conn.createChannel();
      await ch.deleteQueue(q).catch(() => undefined);
      await ch.close().catch(() => undefined);
    }
    const ch = await conn.createChannel();
    await ch.deleteExchange(topo.deadLetterExchange).catch(() => undefined);
    await ch.deleteExchange(ingress.exchange).catch(() => undefined);
    await ch.close().catch(() => undefined);
  } finally {
    await conn.close();
  }
  const store = BatchStore.connect(REDIS_URL, namespace);
  await store.purgeNamespace();
  await store.close();
}
