import { Broker, type Durability, topology } from '@ge-mesh/broker';
import { loadModelOrOverride, loadRepository } from '@ge-mesh/model-repository';
import { loadedAtStart } from '@ge-mesh/settings';
import { BatchStore, ModelOverrides, RuntimeSettings, WorkerRegistry } from '@ge-mesh/store';
import { applyLogSettings, createLogger, isLogSettings, type LogFormat } from '@ge-mesh/telemetry';
import {
  BatcherMetrics,
  type MetricsServer,
  type PendingSnapshot,
  registerConnectionMetrics,
  serveMetricsOrWarn,
} from '@ge-mesh/telemetry/metrics';
import { startTracing } from '@ge-mesh/telemetry/tracing';
import type { PolicyName } from './batch-policy.js';
import { ModelBatcher } from './model-batcher.js';
import { ModelFleet } from './model-fleet.js';
import { loadBatcherSettings } from './settings.js';

const settings = loadBatcherSettings();
const log = createLogger('batcher', settings.logLevel, settings.logFormat as LogFormat);
// Only when OTEL_* asks for traces (an exporter endpoint or OTEL_TRACES_EXPORTER): otherwise nothing loads.
const stopTracing = await startTracing('batcher', log);
const topo = topology(settings.namespace, settings.durability as Durability);

const repo = await loadRepository(settings.modelRepository);
for (const [name, err] of repo.errors) log.error({ model: name, err: err.message }, 'model not loaded');
const wanted = settings.models === '*' ? null : new Set(settings.models.split(',').map((s) => s.trim()));
const allowed = (model: string) => !wanted || wanted.has(model);

const broker = await Broker.connect(settings.rabbitmqUrl, topo, log, `batcher-${process.pid}`);
const store = BatchStore.connect(settings.redisUrl, settings.namespace, log);
// Triton's logging extension: the gateway stores the log settings in Redis and announces them.
const runtimeSettings = new RuntimeSettings(store.redis, settings.namespace);
await runtimeSettings.follow((section, value) => {
  if (section === 'logging' && isLogSettings(value)) applyLogSettings(log, value);
});
const metrics: BatcherMetrics | undefined = settings.allowMetrics
  ? new BatcherMetrics(() => fleet.batchers.map((b): [string, PendingSnapshot] => [b.model.name, b.pending()]))
  : undefined;
const registry = new WorkerRegistry(store.redis, settings.namespace);
const overrides = new ModelOverrides(store.redis, settings.namespace);
const fleet: ModelFleet = new ModelFleet(repo.models, {
  loadModel: async (name) =>
    loadModelOrOverride(settings.modelRepository, name, await overrides.get(name), settings.namespace),
  registry,
  allowed,
  startsLoaded: loadedAtStart(settings),
  log,
  create: (m) =>
    new ModelBatcher(
      m,
      broker,
      store,
      topo,
      {
        stagedBatches: settings.stagedBatches,
        policy: settings.policy as PolicyName,
        ...(metrics
          ? { onBatchPublished: (tier, rows, elements) => metrics.batchPublished(m.name, tier, rows, elements) }
          : {}),
      },
      log,
    ),
  ...(metrics ? { onStarted: (m) => metrics.addModel(m.name, m.config.tiers) } : {}),
});
if (metrics && store.health) registerConnectionMetrics(metrics.registry, { broker, redis: store.health });
let metricsServer: MetricsServer | undefined;
if (metrics)
  metricsServer = await serveMetricsOrWarn(metrics.registry, settings.metricsHost, settings.metricsPort, log);
// Model control: loads and unloads by the repository API, and workers reporting a new generation ready.
const controlSub = store.redis.duplicate();
controlSub.on('error', (err: Error) => log.warn({ err: err.message }, 'model control notifications: redis error'));
controlSub.on('message', () => fleet.notify());
await controlSub.subscribe(registry.channel);
await fleet.start();
log.info(
  {
    models: fleet.batchers.map((b) => `${b.model.name} tiers=[${b.model.config.tiers.join(',')}]`),
    policy: settings.policy,
    metricsPort: metricsServer?.port ?? null,
  },
  'batcher ready',
);

let stopping = false;
async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  log.info({ signal }, 'stopping');
  await fleet.stop();
  await controlSub.quit().catch(() => undefined);
  await metricsServer?.close();
  await broker.close();
  await runtimeSettings.close();
  await store.close();
  await stopTracing();
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
