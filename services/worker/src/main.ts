import { availableParallelism } from 'node:os';
import { Broker, type Channel, topology } from '@ge-mesh/broker';
import { loadRepository, parseGlobalGeOptions, type RepositoryModel } from '@ge-mesh/model-repository';
import { type BatchMessage, decode } from '@ge-mesh/protocol';
import type { EngineModelSpec } from '@ge-mesh/runtime';
import { BatchStore } from '@ge-mesh/store';
import { createLogger } from '@ge-mesh/telemetry';
import { BatchClaims, TEST_LANE_DELAY_MS } from './batch-claims.js';
import { LanePool } from './lane-pool.js';
import { loadWorkerSettings } from './settings.js';

const settings = loadWorkerSettings();
const log = createLogger('worker', settings.logLevel);
const topo = topology(settings.namespace);

if (settings.runtime === 'ge') {
  // Checked here, once, so a bad value stops the worker before any lane starts.
  parseGlobalGeOptions(process.env.GE_NPU_CONFIG, settings.geOptions);
}
const repo = await loadRepository(settings.modelRepository);
for (const [name, err] of repo.errors) log.error({ model: name, err: err.message }, 'model not loaded');
const wanted = settings.models === '*' ? null : new Set(settings.models.split(',').map((s) => s.trim()));
const models = [...repo.models.values()].filter(
  (m) => m.config.runtime === settings.runtime && (!wanted || wanted.has(m.name)),
);
if (models.length === 0) {
  log.fatal({ repository: settings.modelRepository, runtime: settings.runtime }, 'no model to serve');
  process.exit(1);
}

const laneCount = (m: RepositoryModel) => m.config.instanceGroup.reduce((n, g) => n + g.count, 0) || 1;
const totalLanes = models.reduce((n, m) => n + laneCount(m) * m.versions.length, 0);
const cores = settings.cpuThreads || availableParallelism();
// Lanes × threads must fit the cores, or lanes fight over them.
const threadsPerLane = Math.max(1, Math.floor(cores / totalLanes));

function laneSpecs(m: RepositoryModel, version: RepositoryModel['versions'][number]): EngineModelSpec[] {
  return Array.from({ length: laneCount(m) }, (_, stream) => ({
    name: m.name,
    version: version.version,
    modelPath: version.modelPath,
    inputs: m.config.input,
    outputs: m.config.output,
    tiers: m.config.tiers,
    batched: m.config.maxBatchSize > 0,
    parameters: Object.fromEntries(m.config.parameters),
    threads: threadsPerLane,
    stream,
    deviceId: settings.deviceId,
    runtime: settings.runtime,
    runtimeOptions: { geOptions: settings.geOptions },
  }));
}

const broker = await Broker.connect(settings.rabbitmqUrl, topo, log, `worker-${settings.deviceId}-${process.pid}`);
const store = BatchStore.connect(settings.redisUrl, settings.namespace);
const claims = new BatchClaims(store, log);
if (TEST_LANE_DELAY_MS > 0)
  log.warn({ ms: TEST_LANE_DELAY_MS }, 'test fault injection: every batch is held before it runs');
const served: Array<{ ch: Channel; tag: string; pools: Map<string, LanePool> }> = [];
let inFlight = 0;
let stopping = false;

for (const m of models) {
  const pools = new Map<string, LanePool>();
  for (const v of m.versions) pools.set(v.version, await LanePool.start(laneSpecs(m, v), log));
  const lanes = [...pools.values()].reduce((n, p) => n + p.size, 0);
  // Prefetch = lanes: a batch is delivered only when a lane can start it.
  const ch = await broker.channel(lanes);
  const queue = topo.batches(m.name);
  await broker.assertWorkQueue(ch, queue);
  const tag = await broker.consume(ch, queue, (msg) => {
    inFlight++;
    void (async () => {
      try {
        const batch = decode<BatchMessage>(msg.content);
        const pool = pools.get(batch.version);
        if (!pool) throw new Error(`version ${batch.version} of '${m.name}' is not served here`);
        // Only the members this batch still answers (null: none, e.g. it was answered before a redelivery).
        const body = await claims.start(batch, msg.content);
        if (body) {
          if (TEST_LANE_DELAY_MS > 0) await new Promise((r) => setTimeout(r, TEST_LANE_DELAY_MS));
          const replies = await pool.run(body);
          await Promise.all(
            replies.map((r) =>
              broker.send(r.replyTo, Buffer.from(r.body.buffer, r.body.byteOffset, r.body.byteLength), {
                correlationId: r.correlationId,
              }),
            ),
          );
        }
        await claims.finish(batch);
        ch.ack(msg);
      } catch (err) {
        log.error({ err, model: m.name }, 'batch failed; returned for redelivery');
        ch.nack(msg, false, true);
      } finally {
        inFlight--;
      }
    })();
  });
  served.push({ ch, tag, pools });
  log.info({ model: m.name, versions: [...pools.keys()], lanes, threadsPerLane, tiers: m.config.tiers }, 'serving');
}
log.info({ models: models.map((m) => m.name), runtime: settings.runtime, device: settings.deviceId }, 'worker ready');

async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  log.info({ signal, inFlight }, 'draining');
  for (const s of served) await s.ch.cancel(s.tag).catch(() => undefined);
  while (inFlight > 0) await new Promise((r) => setTimeout(r, 10));
  for (const s of served) for (const p of s.pools.values()) await p.close();
  await broker.close();
  await store.close();
  log.info('stopped');
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
broker.onLost = () => {
  if (!stopping) process.exit(1);
};
