import { Broker, type Durability, topology } from '@ge-mesh/broker';
import { loadRepository } from '@ge-mesh/model-repository';
import { BatchStore } from '@ge-mesh/store';
import { createLogger } from '@ge-mesh/telemetry';
import type { PolicyName } from './batch-policy.js';
import { ModelBatcher } from './model-batcher.js';
import { loadBatcherSettings } from './settings.js';

const settings = loadBatcherSettings();
const log = createLogger('batcher', settings.logLevel);
const topo = topology(settings.namespace, settings.durability as Durability);

const repo = await loadRepository(settings.modelRepository);
for (const [name, err] of repo.errors) log.error({ model: name, err: err.message }, 'model not loaded');
const wanted = settings.models === '*' ? null : new Set(settings.models.split(',').map((s) => s.trim()));
const models = [...repo.models.values()].filter((m) => !wanted || wanted.has(m.name));

const broker = await Broker.connect(settings.rabbitmqUrl, topo, log, `batcher-${process.pid}`);
const store = BatchStore.connect(settings.redisUrl, settings.namespace, log);
const batchers = models.map(
  (m) =>
    new ModelBatcher(
      m,
      broker,
      store,
      topo,
      { stagedBatches: settings.stagedBatches, policy: settings.policy as PolicyName },
      log,
    ),
);
for (const b of batchers) await b.start();
log.info(
  { models: models.map((m) => `${m.name} tiers=[${m.config.tiers.join(',')}]`), policy: settings.policy },
  'batcher ready',
);

let stopping = false;
async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  log.info({ signal }, 'stopping');
  await Promise.all(batchers.map((b) => b.stop()));
  await broker.close();
  await store.close();
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
