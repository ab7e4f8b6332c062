import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { demoModel, sampleInputs } from '@ge-mesh/demo-models';
import { FaultProxy } from '../support/fault-proxy.js';
import { driveHttp, type HttpSent } from '../support/http-load.js';
import { RABBITMQ_URL, REDIS_URL, startTestMesh, type TestMesh } from '../support/mesh-harness.js';
import { Reference, toleranceRatio } from '../support/reference.js';

/**
 * The broker, then Redis, goes away under steady load and comes back: every
 * service reaches it through a TCP fault proxy, so the test cuts and
 * black-holes the mesh's connections without touching the machine's shared
 * RabbitMQ and Redis. Every request gets exactly one answer (200 with the right
 * outputs, or a typed 503), no service exits, readiness and 200s come back
 * soon after the fault ends.
 */
const RATE = 40;
const REQUEST_TIMEOUT_MS = 5_000;
/** A request with no answer by its deadline + 1 s is lost. */
const LOST_AFTER_MS = REQUEST_TIMEOUT_MS + 1_000;

interface Phases {
  faultAt: number;
  healAt: number;
}

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

    /** Time from `from` until the gateway reports ready again (polled every 100 ms). */
    async function readyAfter(from: number, withinMs: number): Promise<number> {
      while (Date.now() - from < withinMs) {
        const res = await fetch(`${mesh.url}/v2/health/ready`).catch(() => null);
        if (res?.status === 200) return Date.now() - from;
        await new Promise((r) => setTimeout(r, 100));
      }
      return Number.POSITIVE_INFINITY;
    }

    /** Checks every answer and returns the counts per phase. */
    async function check(sent: HttpSent[], p: Phases) {
      const count = { ok: 0, typed: 0, lost: 0, wrong: 0, okBefore: 0, okAfter: 0, after: 0 };
      const codes = new Map<string, number>();
      for (const s of sent) {
        const late = s.at === undefined || s.at - s.sentAt > LOST_AFTER_MS;
        if (s.failure || late) {
          count.lost++;
          const e = `lost: sent ${((s.sentAt - p.faultAt) / 1000).toFixed(1)} s after the fault, ${s.failure ?? `answered after ${s.at === undefined ? '∞' : s.at - s.sentAt} ms (${s.status})`}`;
          codes.set(e, (codes.get(e) ?? 0) + 1);
          continue;
        }
        const afterWindow = s.sentAt >= p.healAt + 10_000;
        if (afterWindow) count.after++;
        if (s.status === 200) {
          const y = JSON.parse(s.body ?? '{}').outputs?.find((o: { name: string }) => o.name === 'y')?.data as number[];
          const want = (await ref.run('tiny', sampleInputs(demoModel('tiny'), 1, s.seed))).y;
          if (!want || !y || toleranceRatio(y, want.data, 1e-4, 1e-3) > 1) {
            count.wrong++;
            codes.set('200 with wrong outputs', (codes.get('200 with wrong outputs') ?? 0) + 1);
            continue;
          }
          count.ok++;
          if (s.sentAt < p.faultAt) count.okBefore++;
          if (afterWindow) count.okAfter++;
        } else if (s.status === 503 && typeof JSON.parse(s.body ?? '{}').error === 'string') {
          count.typed++;
          const e = JSON.parse(s.body ?? '{}').error as string;
          codes.set(e, (codes.get(e) ?? 0) + 1);
        } else {
          count.wrong++;
          const e = `${s.status}: ${s.body?.slice(0, 120)}`;
          codes.set(e, (codes.get(e) ?? 0) + 1);
        }
      }
      return { ...count, codes: Object.fromEntries(codes) };
    }

    function noExits(): void {
      for (const s of mesh.services) assert.equal(s.child.exitCode, null, `${s.name} exited`);
      assert.equal(mesh.restarts(), 0);
    }

    async function scenario(name: string, fault: () => void, faultMs: number) {
      const start = Date.now();
      const p: Phases = { faultAt: start + 3_000, healAt: start + 3_000 + faultMs };
      let faulted = false;
      let healed = false;
      let readyMs = Number.POSITIVE_INFINITY;
      let readyCheck: Promise<void> | undefined;
      const sent = await driveHttp(mesh.url, RATE, 3_000 + faultMs + 14_000, (elapsed) => {
        if (!faulted && elapsed >= 3_000) {
          faulted = true;
          fault();
        }
        if (!healed && elapsed >= 3_000 + faultMs) {
          healed = true;
          proxy.heal();
          const t = Date.now();
          readyCheck = readyAfter(t, 10_000).then((ms) => {
            readyMs = ms;
          });
        }
      });
      await readyCheck;
      const t = await check(sent, p);
      process.stderr.write(
        `${name}: ${sent.length} sent, ready again ${readyMs} ms after heal, ${JSON.stringify(t)}\n`,
      );
      assert.equal(t.lost, 0, 'every request answered by its deadline + 1 s');
      assert.equal(t.wrong, 0, 'every answer right or a typed 503');
      assert.ok(t.okBefore >= 100, `${t.okBefore} 200s before the fault`);
      assert.ok(t.okAfter >= 100, `${t.okAfter} 200s from 10 s after the fault`);
      assert.ok(t.okAfter >= 0.99 * t.after, `${t.okAfter} of ${t.after} 200s from 10 s after the fault`);
      assert.ok(readyMs < 10_000, 'ready again within 10 s of the fault ending');
      noExits();
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
