import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertRecovered, runFaultScenario, type ScenarioResult } from '../support/fault-scenario.js';
import { startTestMesh, type TestMesh } from '../support/mesh-harness.js';
import { PrivateRabbit, PrivateRedis, privateServicesMissing } from '../support/private-services.js';
import { Reference } from '../support/reference.js';

/**
 * The broker and Redis really restart under load: the mesh runs on a
 * RabbitMQ node and a redis-server of this test's own (private ports and data
 * folders), so the test can stop and start them as an operator or a crash
 * would, without touching the machine's shared instances. HTTP and AMQP
 * ingress load run throughout; the bar is the fault suite's (see
 * dependency-faults.test.ts), and every AMQP request gets exactly one reply.
 */
const RATE = 40;
const AMQP_RATE = 20;
const REQUEST_TIMEOUT_MS = 5_000;
const OUTAGE_MS = 3_000;

const missing = privateServicesMissing();
// The queue mode changes what a broker restart does, not what Redis faults do: npm test's durable
// pass runs only the broker scenario.
const redisSkip =
  process.env.GEMESH_DURABILITY === 'durable' ? { skip: 'Redis faults do not depend on the queue mode' } : {};

describe('dependency restarts under load (private RabbitMQ node and redis-server)', {
  timeout: 180_000,
  ...(missing ? { skip: missing } : {}),
}, () => {
  let rabbit: PrivateRabbit | undefined;
  let redis: PrivateRedis | undefined;
  let mesh: TestMesh;
  const ref = new Reference();

  before(async () => {
    const [r, d] = await Promise.allSettled([PrivateRabbit.start(), PrivateRedis.start()]);
    if (r.status === 'fulfilled') rabbit = r.value;
    if (d.status === 'fulfilled') redis = d.value;
    if (r.status === 'rejected') throw r.reason;
    if (d.status === 'rejected') throw d.reason;
    process.stderr.write(
      `private RabbitMQ node ${rabbit?.node} ready in ${rabbit?.startMs} ms, redis-server in ${redis?.startMs} ms\n`,
    );
    mesh = await startTestMesh({
      models: ['tiny'],
      purge: false,
      env: { GEMESH_RABBITMQ_URL: rabbit?.url, GEMESH_REDIS_URL: redis?.url },
      flags: {
        gateway: ['--request-timeout-ms', String(REQUEST_TIMEOUT_MS)],
        batcher: ['--models', 'tiny'],
        worker: ['--models', 'tiny'],
      },
    });
  });
  after(async () => {
    await mesh?.teardown();
    await Promise.all([rabbit?.stop(), redis?.stop()]);
    await ref.close();
  });

  const run = (name: string, begin: () => unknown, end: () => unknown, ms = OUTAGE_MS) =>
    runFaultScenario(
      {
        mesh,
        ref,
        rate: RATE,
        requestTimeoutMs: REQUEST_TIMEOUT_MS,
        amqp: { url: (rabbit as PrivateRabbit).url, rate: AMQP_RATE },
      },
      { name, begin, end, ms },
    );

  /** One line a person can read: recovery and counts. */
  function summary(r: ScenarioResult): void {
    const a = r.amqp;
    process.stderr.write(
      `${r.name}: recovered (ready) ${r.readyMs} ms after the dependency was back (restart took ${r.endMs} ms); ` +
        `HTTP ${r.sent} sent, ${r.http.ok + r.http.typed} answered (${r.http.ok} 200, ${r.http.typed} typed 503), ${r.http.lost} lost; ` +
        (a
          ? `AMQP ${a.sent} sent, ${a.ok + a.typed} answered once (${a.ok} results, ${a.typed} typed 503), ${a.lost} lost, ${a.duplicate} duplicate, ${a.unsent} not accepted while down, ${a.cutOff} cut off with the producer's connection\n`
          : '\n'),
    );
  }

  /** Every service logged losing the dependency and getting it back. */
  function loggedLossAndRecovery(dependency: 'broker' | 'redis', linesBefore: number): void {
    const lines = mesh.lines.slice(linesBefore);
    for (const svc of ['gateway', 'batcher', 'worker-0']) {
      const own = lines.filter((l) => l.startsWith(`[${svc}]`));
      assert.ok(
        own.some((l) => l.includes(`${dependency} connection lost`)),
        `${svc} logged the loss`,
      );
      assert.ok(
        own.some((l) => l.includes(`${dependency} connection restored`)),
        `${svc} logged the recovery`,
      );
    }
  }

  it('RabbitMQ stop_app for 3 s, then start_app: nothing lost, one answer each, no exit, ready within 10 s', async () => {
    const rmq = rabbit as PrivateRabbit;
    const from = mesh.lines.length;
    const r = await run(
      'rabbitmq stop_app / start_app',
      () => rmq.stopApp(),
      () => rmq.startApp(),
    );
    summary(r);
    assertRecovered(mesh, r);
    loggedLossAndRecovery('broker', from);
  });

  it(
    'Redis SHUTDOWN for 3 s, then started on its append-only file: nothing lost, one answer each, no exit, ready within 10 s',
    redisSkip,
    async () => {
      const rd = redis as PrivateRedis;
      const from = mesh.lines.length;
      const r = await run(
        'redis shutdown / start',
        () => rd.shutdown(),
        () => rd.start(),
      );
      summary(r);
      assertRecovered(mesh, r);
      loggedLossAndRecovery('redis', from);
    },
  );

  it(
    'Redis FLUSHALL under load: the registry is rebuilt from live workers, nothing lost, one answer each, no exit',
    redisSkip,
    async () => {
      const rd = redis as PrivateRedis;
      const from = mesh.lines.length;
      // Everything goes at once and Redis stays up: batch manifests, claims, admission queues, lane
      // slots, the worker registry. The fault has no duration; the bar is the same as for a restart.
      const r = await run(
        'redis flushall',
        () => rd.flushAll(),
        () => undefined,
        0,
      );
      summary(r);
      assertRecovered(mesh, r);
      const gateway = mesh.lines.slice(from).filter((l) => l.startsWith('[gateway]'));
      assert.ok(
        gateway.some((l) => l.includes('Redis lost the mesh state')),
        'the gateway noticed the lost state and waited for the workers to write the registry again',
      );
    },
  );
});
