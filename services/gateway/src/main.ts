import { readFile } from 'node:fs/promises';
import { Broker, type Durability, topology } from '@ge-mesh/broker';
import { loadRepository, overrideStagingDir, type RepositoryModel } from '@ge-mesh/model-repository';
import { loadedAtStart } from '@ge-mesh/settings';
import { BatchStore, ModelOverrides, ResponseCache, RuntimeSettings, WorkerRegistry } from '@ge-mesh/store';
import { createLogger, type LogFormat } from '@ge-mesh/telemetry';
import {
  InferenceMetrics,
  type MetricsServer,
  registerConnectionMetrics,
  serveMetricsOrWarn,
} from '@ge-mesh/telemetry/metrics';
import { startTracing, tracingActive } from '@ge-mesh/telemetry/tracing';
import { Admission } from './admission.js';
import { AmqpIngress } from './amqp/ingress.js';
import { AuthConfigError, Authorizer } from './auth.js';
import { GrpcFrontend } from './grpc/server.js';
import { buildApp } from './http/app.js';
import { registerRepositoryRoutes } from './http/repository-routes.js';
import { registerSettingsRoutes } from './http/settings-routes.js';
import type { ModelStates } from './model-states.js';
import { CachedResponses } from './pipeline/cached-responses.js';
import { Dispatch } from './pipeline/dispatch.js';
import { InferPipeline } from './pipeline/infer-pipeline.js';
import { LOGGING_SECTION, LoggingControl } from './pipeline/logging-control.js';
import { MeshQueries } from './pipeline/queries.js';
import { RepositoryControl } from './pipeline/repository-control.js';
import { RequestBundles } from './pipeline/request-bundles.js';
import { TRACE_SECTION, TraceControl } from './pipeline/trace-control.js';
import { ReplyRouter } from './reply-router.js';
import { RepositoryPoller } from './repository-poller.js';
import { loadGatewaySettings } from './settings.js';
import { InferenceStats } from './stats/inference-stats.js';
import { REGISTRY_REFILL_MS, WorkerModelStates } from './worker-model-states.js';

const settings = loadGatewaySettings();
const log = createLogger('gateway', settings.logLevel, settings.logFormat as LogFormat);
// Only when OTEL_* asks for traces (an exporter endpoint or OTEL_TRACES_EXPORTER): otherwise nothing loads.
// Which requests start a sampled trace is the trace settings' call (Triton's trace extension, below).
let sampleRequest: (model: string) => boolean = () => true;
const stopTracing = await startTracing('gateway', log, {
  rootSampler: (attributes) => sampleRequest(String(attributes['gemesh.model'] ?? '')),
});
const topo = topology(settings.namespace, settings.durability as Durability);

const repository = await loadRepository(settings.modelRepository);
for (const [name, err] of repository.errors) log.error({ model: name, err: err.message }, 'model not loaded');
for (const [name, m] of repository.models) {
  for (const w of m.config.warnings ?? []) log.warn({ model: name }, w);
}
// Model readiness follows the worker registry: a model is ready while a live worker serves it.
const registryStore = BatchStore.connect(settings.redisUrl, settings.namespace, log);
const workerStates = await WorkerModelStates.start(
  repository,
  new WorkerRegistry(registryStore.redis, settings.namespace),
  log,
  loadedAtStart(settings),
);
const states: ModelStates = workerStates;

let auth: Authorizer;
try {
  auth = await Authorizer.load(settings, states);
} catch (err) {
  if (!(err instanceof AuthConfigError)) throw err;
  log.fatal({ err: err.message }, 'invalid API key configuration');
  process.exit(1);
}
if (!auth.enabled) log.warn('no API key configured: every endpoint is open (set --api-keys or --api-keys-file)');

const metrics = settings.allowMetrics ? new InferenceMetrics({ processMetricsPrefix: 'gemesh_gateway_' }) : undefined;
const addMetrics = (name: string) => {
  for (const v of states.model(name)?.versions ?? []) metrics?.addModel(name, v.version);
};
for (const name of states.names()) addMetrics(name);

const broker = await Broker.connect(settings.rabbitmqUrl, topo, log, `gateway-${process.pid}`);
// Declared again after every reconnect (a broker that lost its definitions gets them back).
await broker.onReady(async () => {
  const setup = await broker.channel();
  // An ensemble has no queue: its steps go to their models' queues.
  for (const name of states.names()) {
    if (!states.model(name)?.config.ensemble) await broker.assertWorkQueue(setup, topo.requests(name));
  }
  await setup.close();
});
const replies = new ReplyRouter(broker, log);
// max_queue_size is counted in Redis, shared by every gateway.
const admission = new Admission(registryStore);
let stopping = false;
// Not ready while the broker or Redis is away: infer requests get 503 at once instead of waiting
// for a deadline. After Redis comes back, the worker registry refills with the workers' next
// heartbeats (entries lapse during a long outage, or vanish with the data): until then a model
// would look unserved, so readiness waits that long too. A first connection waits for nothing:
// the registry is as the workers keep it.
const redisUp = () => !registryStore.health || registryStore.health.upSinceRestoreMs >= REGISTRY_REFILL_MS;
const isReady = () => !stopping && broker.connected && redisUp() && !workerStates.rebuilding;
const limits = { maxBodyBytes: settings.maxBodyBytes, maxTensorElements: settings.maxTensorElements };
const stats = new InferenceStats();
// Triton's response cache, in Redis so every gateway of the namespace shares it.
const cache =
  settings.responseCacheBytes > 0
    ? new CachedResponses(
        new ResponseCache(registryStore.redis, settings.namespace, {
          maxBytes: settings.responseCacheBytes,
          ttlMs: settings.responseCacheTtlSecs * 1000,
        }),
        log,
      )
    : undefined;
if (!cache) {
  for (const name of states.names()) {
    if (states.model(name)?.config.responseCache)
      log.warn({ model: name }, 'response_cache is on but --response-cache-bytes is 0: not cached');
  }
}
const pipeline = new InferPipeline({
  states,
  auth,
  dispatch: new Dispatch(
    broker,
    replies,
    settings.requestTimeoutMs,
    admission,
    { store: registryStore, minBytes: settings.largeRequestBytes },
    settings.bundleRequests ? new RequestBundles(broker, replies.queue) : undefined,
  ),
  stats,
  isReady,
  metrics,
  ...(cache ? { cache } : {}),
});
replies.onReply = pipeline.observeReply;
const queries = new MeshQueries({ states, auth, stats, isReady });
/** A model about to be loaded: its request queue declared (so requests are routable) and its metrics. */
const prepareModel = async (model: RepositoryModel) => {
  if (!model.config.ensemble) {
    const ch = await broker.channel();
    await broker.assertWorkQueue(ch, topo.requests(model.name));
    await ch.close();
  }
  addMetrics(model.name);
};
const polling = settings.modelControlMode === 'poll';
const control = new RepositoryControl({
  states: workerStates,
  overrides: new ModelOverrides(registryStore.redis, settings.namespace),
  stagingDir: overrideStagingDir(settings.namespace),
  auth,
  repositoryDir: settings.modelRepository,
  prepareModel,
  polling,
  log,
});
const poller = polling
  ? new RepositoryPoller({
      dir: settings.modelRepository,
      registry: workerStates.registry,
      log,
      prepare: async (model) => {
        workerStates.setModel(model);
        await prepareModel(model);
      },
      onLoadError: (name, err) => workerStates.setLoadError(name, err),
    })
  : undefined;
await poller?.start(repository, settings.repositoryPollSecs * 1000);

// Triton's logging and trace extensions: settings shared through Redis with every service.
const runtimeSettings = new RuntimeSettings(registryStore.redis, settings.namespace);
const logging = new LoggingControl({ auth, runtime: runtimeSettings, log });
const traceControl = new TraceControl({
  auth,
  runtime: runtimeSettings,
  tracing: tracingActive(),
  knownModel: (name) => states.model(name) !== undefined,
});
sampleRequest = (model) => traceControl.sample(model);
await runtimeSettings.follow((section, value) => {
  if (section === LOGGING_SECTION) logging.applyShared(value);
  else if (section === TRACE_SECTION) traceControl.applyShared(value);
});

if (metrics && registryStore.health)
  registerConnectionMetrics(metrics.registry, { broker, redis: registryStore.health });
await replies.start();

let metricsServer: MetricsServer | undefined;
if (metrics)
  metricsServer = await serveMetricsOrWarn(metrics.registry, settings.metricsHost, settings.metricsPort, log);

const ingress = settings.amqpIngress
  ? new AmqpIngress({
      broker,
      pipeline,
      ...limits,
      prefetch: settings.amqpPrefetch,
      log,
      metrics,
    })
  : undefined;
await ingress?.start();

// TLS for both front ends; a key without a certificate (or the reverse) is a configuration error.
if ((settings.tlsCert === '') !== (settings.tlsKey === '')) {
  log.fatal('--tls-cert and --tls-key go together');
  process.exit(1);
}
const tls =
  settings.tlsCert === ''
    ? undefined
    : {
        cert: await readFile(settings.tlsCert),
        key: await readFile(settings.tlsKey),
        ...(settings.tlsClientCa !== '' ? { clientCa: await readFile(settings.tlsClientCa) } : {}),
      };

const grpc = settings.grpc
  ? new GrpcFrontend({
      pipeline,
      queries,
      control,
      logging,
      trace: traceControl,
      maxTensorElements: settings.maxTensorElements,
      maxMessageBytes: settings.grpcMaxMessageBytes,
      keepaliveTimeMs: settings.grpcKeepaliveTimeMs,
      keepaliveTimeoutMs: settings.grpcKeepaliveTimeoutMs,
      ...(tls ? { tls } : {}),
      log,
      metrics,
    })
  : undefined;
const grpcPort = await grpc?.listen(settings.grpcHost, settings.grpcPort);

const app = buildApp({
  pipeline,
  queries,
  ...limits,
  ...(tls ? { https: { cert: tls.cert, key: tls.key, ...(tls.clientCa ? { ca: tls.clientCa } : {}) } } : {}),
  log,
  metrics,
});
registerRepositoryRoutes(app, { control, maxBodyBytes: settings.maxBodyBytes, log });
registerSettingsRoutes(app, { logging, trace: traceControl, maxBodyBytes: settings.maxBodyBytes, log });
const address = await app.listen({ host: settings.host, port: settings.httpPort });
log.info(
  {
    address,
    grpcPort: grpcPort ?? null,
    tls: tls !== undefined,
    metricsPort: metricsServer?.port ?? null,
    amqpIngress: ingress?.queue ?? null,
    apiKeys: auth.keyCount,
    models: states.names(),
  },
  'gateway ready',
);

async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  log.info({ signal, pending: replies.pendingCount }, 'stopping');
  await Promise.all([ingress?.stop(), app.close(), grpc?.close(settings.grpcDrainMs)]);
  await poller?.stop();
  await metricsServer?.close();
  await broker.close();
  await workerStates.close();
  await runtimeSettings.close();
  await registryStore.close();
  await stopTracing();
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
