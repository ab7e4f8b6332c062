import { FaultProxy } from '../support/fault-proxy.js';
import { RABBITMQ_URL, REDIS_URL } from '../support/mesh-harness.js';
import { PrivateRabbit, PrivateRedis, privateServicesMissing } from '../support/private-services.js';

/**
 * RabbitMQ and Redis for the soak: a private node and server of its own when
 * they are installed here (so the broker restart in the middle is a real one
 * and their memory can be read), else the shared instances with the broker
 * behind a fault proxy, whose restart is a 3-second outage (connections
 * reset, new ones refused).
 */
export interface SoakDependencies {
  /** How the broker restart is done, for the report. */
  readonly how: string;
  readonly rabbitmqUrl: string;
  readonly redisUrl: string;
  /** Whether the namespace must be purged after (shared instances). */
  readonly shared: boolean;
  /** Takes the broker down for `outageMs` and back; how long stopping and starting took. */
  restartBroker(outageMs: number): Promise<{ stopMs: number; startMs: number }>;
  /** The dependencies' own processes, when they are this run's. */
  procs(): Array<{ service: string; pid: number | undefined }>;
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function timed(f: () => unknown): Promise<number> {
  const t = Date.now();
  await f();
  return Date.now() - t;
}

export async function startSoakDependencies(log: (line: string) => void): Promise<SoakDependencies> {
  const missing = privateServicesMissing();
  if (!missing) {
    const [rabbit, redis] = await Promise.all([PrivateRabbit.start(), PrivateRedis.start()]);
    log(`private RabbitMQ node ${rabbit.node} ready in ${rabbit.startMs} ms; redis-server in ${redis.startMs} ms`);
    return {
      how: `a private RabbitMQ node (rabbitmqctl stop_app, outage, start_app) and a private redis-server`,
      rabbitmqUrl: rabbit.url,
      redisUrl: redis.url,
      shared: false,
      async restartBroker(outageMs) {
        const stopMs = await timed(() => rabbit.stopApp());
        await sleep(outageMs);
        return { stopMs, startMs: await timed(() => rabbit.startApp()) };
      },
      procs: () => [
        { service: 'rabbitmq (private)', pid: rabbit.pid },
        { service: 'redis (private)', pid: redis.pid },
      ],
      async stop() {
        await Promise.all([rabbit.stop(), redis.stop()]);
      },
    };
  }
  log(`no private RabbitMQ here (${missing}): the broker restart is an outage through a fault proxy`);
  const target = new URL(RABBITMQ_URL);
  const proxy = await FaultProxy.start({ target: { host: target.hostname, port: Number(target.port || 5672) } });
  target.host = proxy.address;
  return {
    how: 'the shared RabbitMQ behind a TCP fault proxy (connections reset and new ones refused for the outage)',
    rabbitmqUrl: target.toString(),
    redisUrl: REDIS_URL,
    shared: true,
    async restartBroker(outageMs) {
      const stopMs = await timed(() => {
        proxy.blackhole({ newConnections: 'refuse' });
        proxy.cut('reset');
      });
      await sleep(outageMs);
      return { stopMs, startMs: await timed(() => proxy.heal()) };
    },
    procs: () => [],
    stop: () => proxy.close(),
  };
}
