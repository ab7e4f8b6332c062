import { Broker, topology } from '@ge-mesh/broker';
import { loadRepository } from '@ge-mesh/model-repository';
import { createLogger } from '@ge-mesh/telemetry';
import { buildApp } from './http/app.js';
import { InferService } from './infer-service.js';
import { ReplyRouter } from './reply-router.js';
import { loadGatewaySettings } from './settings.js';

const settings = loadGatewaySettings();
const log = createLogger('gateway', settings.logLevel);
const topo = topology(settings.namespace);

const repository = await loadRepository(settings.modelRepository);
for (const [name, err] of repository.errors) log.error({ model: name, err: err.message }, 'model not loaded');

const broker = await Broker.connect(settings.rabbitmqUrl, topo, log, `gateway-${process.pid}`);
const setup = await broker.channel();
for (const name of repository.models.keys()) await broker.assertWorkQueue(setup, topo.requests(name));
await setup.close();
const replies = new ReplyRouter(broker, log);
await replies.start();

let stopping = false;
const app = buildApp({
  repository,
  infer: new InferService(broker, replies, settings.requestTimeoutMs),
  maxBodyBytes: settings.maxBodyBytes,
  isReady: () => !stopping,
});
const address = await app.listen({ host: settings.host, port: settings.httpPort });
log.info({ address, models: [...repository.models.keys()] }, 'gateway ready');

async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  log.info({ signal, pending: replies.pendingCount }, 'stopping');
  await app.close();
  await broker.close();
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
broker.onLost = () => {
  if (!stopping) process.exit(1);
};
