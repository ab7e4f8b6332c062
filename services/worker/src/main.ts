import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { Broker, type Durability, topology } from '@ge-mesh/broker';
import { loadRepository, parseGlobalGeOptions } from '@ge-mesh/model-repository';
import { loadedAtStart } from '@ge-mesh/settings';
import {
  BatchStore,
  CoalescedPasses,
  ModelOverrides,
  RuntimeSettings,
  type WorkerInfo,
  WorkerRegistry,
  type WorkerState,
} from '@ge-mesh/store';
import { applyLogSettings, createLogger, isLogSettings, type LogFormat } from '@ge-mesh/telemetry';
import {
  type MetricsServer,
  registerConnectionMetrics,
  serveMetricsOrWarn,
  WorkerMetrics,
} from '@ge-mesh/telemetry/metrics';
import { startTracing } from '@ge-mesh/telemetry/tracing';
import { BatchClaims } from './batch-claims.js';
import { DeadLetters } from './dead-letters.js';
import { detectDeviceCount, deviceKind, explicitDevices } from './devices.js';
import { ModelController } from './model-controller.js';
import type { ServedModelDeps } from './served-model.js';
import { loadWorkerSettings } from './settings.js';
import { TEST_CRASH_ON_REQUEST, TEST_LANE_DELAY_MS, TEST_LOAD_DELAY_MS } from './test-faults.js';
import { WorkerPresence } from './worker-presence.js';

/**
 * A worker: one process per device (or per few devices when told to). It
 * leases its devices in Redis, loads and warms up the models placed on them,
 * registers what it serves with heartbeats, consumes each model's batch queue
 * with prefetch = 2 × lanes, follows the repository API's load/unload requests,
 * answers dead-lettered batches, and drains on SIGTERM.
 */
const settings = loadWorkerSettings();
const log = createLogger('worker', settings.logLevel, settings.logFormat as LogFormat);
// Only when OTEL_* asks for traces (an exporter endpoint or OTEL_TRACES_EXPORTER): otherwise nothing loads.
const stopTracing = await startTracing('worker', log);
const topo = topology(settings.namespace, settings.durability as Durability);

if (settings.runtime === 'ge') {
  // Checked here, once, so a bad value stops the worker before any lane starts.
  parseGlobalGeOptions(process.env.GE_NPU_CONFIG, settings.geOptions);
}
if (TEST_LANE_DELAY_MS > 0) log.warn({ ms: TEST_LANE_DELAY_MS }, 'test fault injection: every batch is held');
if (TEST_CRASH_ON_REQUEST) log.warn({ id: TEST_CRASH_ON_REQUEST }, 'test fault injection: a marked request crashes');
if (TEST_LOAD_DELAY_MS > 0) log.warn({ ms: TEST_LOAD_DELAY_MS }, 'test fault injection: every model load is held');

const repo = await loadRepository(settings.modelRepository);
for (const [name, err] of repo.errors) log.error({ model: name, err: err.message }, 'model not loaded');
const filter = settings.models === '*' ? null : new Set(settings.models.split(',').map((s) => s.trim()));
const allowed = (name: string) => !filter || filter.has(name);
// A model with no model control entry yet: loaded, except in explicit mode unless named by --load-model.
const startsLoaded = loadedAtStart(settings);
/** The models this worker knows, re-read from disk when the repository API loads one. */
const view = new Map([...repo.models].filter(([name, m]) => allowed(name) && m.config.runtime === settings.runtime));
if (view.size === 0) {
  log.fatal({ repository: settings.modelRepository, runtime: settings.runtime }, 'no model to serve');
  process.exit(1);
}

const id = `${settings.node}-${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
const kind = deviceKind(settings.runtime);
const deviceCount = settings.deviceCount || detectDeviceCount(settings.runtime);
const explicit = explicitDevices(settings.deviceIds, settings.deviceId);
const broker = await Broker.connect(settings.rabbitmqUrl, topo, log, `worker-${id}`);
const store = BatchStore.connect(settings.redisUrl, settings.namespace, log);
// Triton's logging extension: the gateway stores the log settings in Redis and announces them.
const runtimeSettings = new RuntimeSettings(store.redis, settings.namespace);
await runtimeSettings.follow((section, value) => {
  if (section === 'logging' && isLogSettings(value)) applyLogSettings(log, value);
});
const registry = new WorkerRegistry(store.redis, settings.namespace);
// Models pushed through the load API: in Redis, so a worker on any host loads the same files.
const overrides = new ModelOverrides(store.redis, settings.namespace);
const claims = new BatchClaims(store, log);
const metrics = settings.allowMetrics ? await workerMetrics() : undefined;
const deadLetters = new DeadLetters(broker, topo, store, log, (kind, reason) => metrics?.deadLettered(kind, reason));
const deps: ServedModelDeps = {
  broker,
  topo,
  claims,
  log,
  runtime: settings.runtime,
  runtimeOptions: { geOptions: settings.geOptions, geCompileCache: settings.geCompileCache },
  onChange: () => presence.changed(),
  ...(metrics
    ? {
        onBatchRan: (model: string, device: number, tier: number, laneMs: number) =>
          metrics.batchRan(model, device, tier, laneMs),
      }
    : {}),
  onChannelLost: (model) => {
    log.fatal({ model }, 'batch channel closed under a served model; stopping');
    void shutdown('channel lost', 1);
  },
};
const models = new ModelController({
  settings,
  registry,
  overrides,
  view,
  allowed,
  startsLoaded,
  deviceCount,
  served: deps,
  changed: () => presence.changed(),
  stopping: () => stopping,
  log,
});
let devices: number[] = [];
let state: WorkerState = 'starting';
let stopping = false;
let sub: BatchStore['redis'] | undefined;
const startedAt = Date.now();

const describe = (): WorkerInfo => ({
  id,
  node: settings.node,
  host: hostname(),
  pid: process.pid,
  runtime: settings.runtime,
  kind,
  devices,
  state,
  eligible: models.eligible(),
  models: models.infos(),
  startedAt,
  beatAt: 0,
});

const presence = new WorkerPresence(
  registry,
  describe,
  { heartbeatMs: settings.heartbeatMs },
  log,
  (lost) => {
    log.error({ lost }, 'device lease taken by another worker while this one stalled; stopping');
    void shutdown('lease lost', 1);
  },
  () => scheduleReconcile(),
);

process.on('SIGTERM', () => void shutdown('SIGTERM', 0));
process.on('SIGINT', () => void shutdown('SIGINT', 0));

// Devices: explicit ids (leased too, so two workers never drive one device) or free ones.
const candidates = explicit ?? Array.from({ length: deviceCount }, (_, i) => i);
const claimed = await presence.claim(
  id,
  settings.node,
  kind,
  candidates,
  explicit ? explicit.length : Math.min(settings.devices, candidates.length),
  () => stopping,
);
if (!claimed) {
  await new Promise(() => undefined); // stopping: shutdown() exits
}
devices = claimed ?? [];
models.lease(devices);
log.info({ id, node: settings.node, kind, devices, deviceCount }, 'devices leased');

/** The worker's Prometheus families; device memory is read only from a runtime that has it (ge). */
async function workerMetrics(): Promise<WorkerMetrics> {
  const readMemory = settings.runtime === 'ge' ? (await import('@ge-mesh/runtime-ge')).readDeviceMemory : undefined;
  const m = new WorkerMetrics({
    *lanes() {
      for (const s of models.served.values()) {
        if (s.state !== 'ready') continue;
        const lanes = s.placement.lanesPerDevice * s.model.versions.length;
        for (const device of s.placement.devices) yield { model: s.name, device, lanes };
      }
    },
    deviceMemory() {
      // Only while every model is ready: a read waits behind a model load (serialised in the bridge).
      const loaded = [...models.served.values()];
      if (!readMemory || devices.length === 0 || loaded.length === 0) return [];
      if (loaded.some((s) => s.state !== 'ready' && s.state !== 'failed')) return [];
      if (!loaded.some((s) => s.state === 'ready')) return [];
      try {
        return readMemory(devices);
      } catch (err) {
        log.warn({ err: (err as Error).message }, 'device memory not read');
        return [];
      }
    },
  });
  if (store.health) registerConnectionMetrics(m.registry, { broker, redis: store.health });
  return m;
}

const reconciles = new CoalescedPasses(
  () => models.reconcile(),
  (err) => log.warn({ err: err.message }, 'model control not applied; retrying on the next heartbeat'),
  () => stopping,
);
function scheduleReconcile(): Promise<void> {
  return reconciles.run();
}

// Model control changes arrive on the registry channel at once, and are re-read on every heartbeat.
sub = store.redis.duplicate();
sub.on('error', (err: Error) => log.warn({ err: err.message }, 'registry notifications: redis error'));
sub.on('message', (_ch: string, msg: string) => {
  if (msg.startsWith('control:')) void scheduleReconcile();
});
await sub.subscribe(registry.channel);

// Register as starting (the models it will load become wanted), load everything, then report ready.
const wanted = [...view.values()].filter((m) => models.placeable(m) && startsLoaded(m.name)).map((m) => m.name);
let metricsServer: MetricsServer | undefined;
if (metrics)
  metricsServer = await serveMetricsOrWarn(metrics.registry, settings.metricsHost, settings.metricsPort, log);
await presence.start(wanted);
await scheduleReconcile();
if (!stopping) {
  await deadLetters.start();
  // After a broker reconnect: consume every served model and the dead letters again.
  await broker.onReady(async () => {
    for (const s of models.served.values()) await s.resume();
    if (!stopping) await deadLetters.start();
  }, false);
  state = 'ready';
  await presence.flush();
  log.info(
    {
      models: [...models.served.values()].filter((s) => s.state === 'ready').map((s) => s.name),
      failed: [...models.served.values()].filter((s) => s.state === 'failed').map((s) => s.name),
      runtime: settings.runtime,
      devices,
      id,
      metricsPort: metricsServer?.port ?? null,
    },
    'worker ready',
  );
}

/**
 * Graceful drain: report draining (the registry stops counting these lanes),
 * stop consuming, finish and publish every batch in hand, release the
 * leases, exit. Batches still running after drainTimeoutMs go back to the
 * broker when the connection closes.
 */
async function shutdown(signal: string, code: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  const inFlight = [...models.served.values()].reduce((n, s) => n + s.inflight, 0);
  log.info({ signal, inFlight }, 'draining');
  if (devices.length > 0) {
    state = 'draining';
    presence.changed();
  }
  await deadLetters.stop();
  await Promise.all([...models.served.values()].map((s) => s.stopConsuming()));
  const drained = await Promise.all([...models.served.values()].map((s) => s.drained(settings.drainTimeoutMs)));
  const until = Date.now() + 2_000;
  while (deadLetters.inflight > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
  for (const s of models.served.values()) await s.close();
  if (devices.length > 0) await presence.release({ id, node: settings.node, kind, devices });
  else presence.stop();
  await sub?.quit().catch(() => undefined);
  await metricsServer?.close();
  await broker.close();
  await runtimeSettings.close();
  await store.close();
  log.info({ drained: drained.every(Boolean) }, 'stopped');
  await stopTracing();
  process.exit(code);
}
