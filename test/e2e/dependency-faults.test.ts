import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FaultProxy } from '../support/fault-proxy.js';
import { assertRecovered, runFaultScenario, type ScenarioSetup } from '../support/fault-scenario.js';
import { RABBITMQ_URL, REDIS_URL, startTestMesh, type TestMesh } from '../support/mesh-harness.js';
import { Reference } from '../support/reference.js';

/**
 * The broker, then Redis, goes away under steady load and comes back: every
 * service reaches it through a TCP fault proxy, so the test cuts and
 * black-holes the mesh's connections without touching the machine's shared
 * RabbitMQ and Redis. Every request gets exactly one answer (200 with the right
 * outputs, or a typed 503), no service exits, readiness and 200s come back
 * soon after the fault ends.
 */
const RATE = 40;
/** Each request's deadline; one with no answer by it + 1 s is lost. */
const REQUEST_TIMEOUT_MS = 5_000;

/** Each dependency, reached through its own proxy: the URL variable the services read and its default port. */
const DEPENDENCIES = {
  broker: { url: RABBITMQ_URL, env: 'GEMESH_RABBITMQ_URL', port: 5672 },
  redis: { url: REDIS_URL, env: 'GEMESH_REDIS_URL', port: 6379 },
} as const;

for (const [dependency, dep] of Object.entries(DEPENDENCIES)) {
  describe(`${dependency} faults under load (real ${dependency === 'broker' ? 'RabbitMQ' : 'Redis'} through a fault proxy)`, {
    timeout: 240_000,
  }, () => {
    let mesh: TestMesh;
    let proxy: FaultProxy;
    const ref = new Reference();

    before(async () => {
      const target = new URL(dep.url);
      proxy = await FaultProxy.start({ target: { host: target.hostname, port: Number(target.port || dep.port) } });
      const url = new URL(dep.url);
      url.host = proxy.address;
      mesh = await startTestMesh({
        models: ['tiny'],
        env: { [dep.env]: url.toString() },
        flags: {
          gateway: ['--request-timeout-ms', String(REQUEST_TIMEOUT_MS)],
          batcher: ['--models', 'tiny'],
          worker: ['--models', 'tiny'],
        },
      });
    });
    after(async () => {
      await mesh?.teardown();
      await proxy?.close();
      await ref.close();
    });

    const setup = (): ScenarioSetup => ({ mesh, ref, rate: RATE, requestTimeoutMs: REQUEST_TIMEOUT_MS });

    /** The proxy's fault for `ms`, healed at its end, under load; held to the common bar. */
    async function scenario(name: string, fault: () => void, ms: number) {
      const r = await runFaultScenario(setup(), { name, begin: fault, end: () => proxy.heal(), ms });
      assertRecovered(mesh, r);
    }

    it(`a 3-second ${dependency} outage (connections reset, new ones refused): nothing lost, no exit, back at once`, async () => {
      await scenario(
        'outage',
        () => {
          proxy.blackhole({ newConnections: 'refuse' });
          proxy.cut('reset');
        },
        3_000,
      );
      // The gateway counts the reconnect and reports the dependency connected again.
      const ready = mesh.lines.find((l) => l.startsWith('[gateway]') && l.includes('"msg":"gateway ready"')) ?? '';
      const port = Number(/"metricsPort":(\d+)/.exec(ready)?.[1]);
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      assert.match(text, new RegExp(`^gemesh_dependency_connected\\{dependency="${dependency}"\\} 1$`, 'm'));
      const reconnects = Number(
        new RegExp(`^gemesh_dependency_reconnects_total\\{dependency="${dependency}"\\} (\\d+)$`, 'm').exec(text)?.[1],
      );
      assert.ok(reconnects >= 1, `${reconnects} reconnects counted`);
      for (const svc of ['gateway', 'batcher', 'worker-0']) {
        const lines = mesh.lines.filter((l) => l.startsWith(`[${svc}]`));
        assert.ok(
          lines.some((l) => l.includes(`${dependency} connection lost`)),
          `${svc} logged the loss`,
        );
        assert.ok(
          lines.some((l) => l.includes(`${dependency} connection restored`)),
          `${svc} logged the recovery`,
        );
      }
    });

    it(`a silent ${dependency} (half-open connections, 14 s): probes notice it, the mesh recovers`, async () => {
      const lostBefore = mesh.lines.filter((l) => l.includes(`${dependency} connection lost`)).length;
      await scenario('black hole', () => proxy.blackhole({ newConnections: 'hang' }), 14_000);
      const lost = mesh.lines.filter((l) => l.includes(`${dependency} connection lost`)).length - lostBefore;
      assert.ok(lost >= 3, `${lost} services noticed the silent ${dependency}`);
    });
  });
}
