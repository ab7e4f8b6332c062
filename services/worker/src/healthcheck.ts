import { hostname } from 'node:os';
import { BatchStore, WorkerRegistry } from '@ge-mesh/store';
import { loadWorkerSettings } from './settings.js';

/**
 * Docker healthcheck of a worker container: healthy while a worker of this
 * host (the container) is live in the registry and ready, i.e. it holds its
 * device lease, has warmed up its models and beats. A replica still waiting
 * for a free device (a standby) is reported unhealthy until it gets one.
 *
 *   node --import tsx services/worker/src/healthcheck.ts   (settings from GEMESH_* env)
 */
const settings = loadWorkerSettings([]);
const store = BatchStore.connect(settings.redisUrl, settings.namespace);
const redis = store.redis;
let healthy = false;
try {
  const workers = await new WorkerRegistry(redis, settings.namespace).liveWorkers();
  healthy = workers.some((w) => w.host === hostname() && w.state === 'ready');
  if (!healthy) process.stderr.write(`no ready worker of host ${hostname()} in the registry\n`);
} catch (err) {
  process.stderr.write(`registry not read: ${(err as Error).message}\n`);
} finally {
  redis.disconnect();
}
process.exit(healthy ? 0 : 1);
