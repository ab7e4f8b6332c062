import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { ensureDemoModels } from '@ge-mesh/demo-models';
import { ROOT } from '@ge-mesh/launcher';
import {
  DEMO_MODELS,
  DEMO_REPOSITORY,
  freePort,
  purgeNamespace,
  RABBITMQ_URL,
  REDIS_URL,
  uniqueNamespace,
} from '../support/mesh-harness.js';
import { Reference, toleranceRatio } from '../support/reference.js';

/**
 * `npm start` as a user runs it (the launcher's CLI), on a private namespace
 * and port: a gateway or batcher killed with SIGKILL is started again by the
 * launcher, logged once, and the mesh serves right answers again; only
 * SIGTERM stops it.
 */
const RESTART_LINE =
  /^\[launcher\] (\S+) exited \((signal \w+|code -?\d+)\) after \d+\.\d s; restart (\d+) in (\d+\.\d) s$/;
const X = Float32Array.from({ length: 16 }, (_, i) => Math.sin(i + 1));

describe('npm start: the launcher restarts whatever dies', { timeout: 300_000 }, () => {
  const namespace = uniqueNamespace('sup');
  const lines: string[] = [];
  const ref = new Reference();
  let cli: ChildProcess;
  let url = '';

  /** Resolves with the first line (seen so far or to come) from index `from` that matches. */
  const waitLine = async (re: RegExp, timeoutMs: number, from = 0): Promise<string> => {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const hit = lines.slice(from).find((l) => re.test(l));
      if (hit) return hit;
      if (cli.exitCode !== null || cli.signalCode !== null)
        throw new Error(`the launcher exited while waiting for ${re}`);
      if (Date.now() > until)
        throw new Error(`no line matching ${re} within ${timeoutMs} ms:\n${lines.slice(-30).join('\n')}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const restartLines = () => lines.filter((l) => l.startsWith('[launcher] '));
  /** The pid a service logs with (pino's `pid`), from its latest line. */
  const pidOf = (service: string): number => {
    const line = lines.findLast((l) => l.startsWith(`[${service}] `) && l.includes('"pid":'));
    return Number(/"pid":(\d+)/.exec(line ?? '')?.[1]);
  };
  const ready = async (): Promise<number> => {
    try {
      const res = await fetch(`${url}/v2/health/ready`);
      await res.arrayBuffer();
      return res.status;
    } catch {
      return 0;
    }
  };
  const waitReady = async (timeoutMs: number) => {
    const until = Date.now() + timeoutMs;
    while ((await ready()) !== 200) {
      if (Date.now() > until) throw new Error(`not ready within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  /** One infer on `tiny`, checked against onnxruntime in this process. */
  const inferTiny = async () => {
    const res = await fetch(`${url}/v2/models/tiny/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: [{ name: 'x', shape: [1, 16], datatype: 'FP32', data: Array.from(X) }] }),
    });
    const body = (await res.json()) as { outputs?: Array<{ name: string; shape: number[]; data: number[] }> };
    assert.equal(res.status, 200, JSON.stringify(body));
    const y = body.outputs?.find((o) => o.name === 'y');
    assert.deepEqual(y?.shape, [1, 4]);
    const want = (await ref.run('tiny', [{ name: 'x', dataType: 'FP32', dims: [1, 16], data: X }])).y;
    assert.ok(want);
    assert.ok(toleranceRatio(y?.data ?? [], want.data, 1e-5, 1e-4) <= 1, `${y?.data} vs ${Array.from(want.data)}`);
  };

  before(async () => {
    await ensureDemoModels(DEMO_REPOSITORY);
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    cli = spawn(
      process.execPath,
      ['--import', 'tsx', 'packages/launcher/src/cli.ts', '--namespace', namespace, '--http-port', String(port)],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          GEMESH_RABBITMQ_URL: RABBITMQ_URL,
          GEMESH_REDIS_URL: REDIS_URL,
          // Only tiny (workers and batcher), metrics on an ephemeral port: fast, and no clash with 8002.
          GEMESH_MODELS: 'tiny',
          GEMESH_METRICS_PORT: '0',
          GEMESH_WORKERS: '1',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    for (const stream of [cli.stdout, cli.stderr]) {
      let rest = '';
      stream?.setEncoding('utf8');
      stream?.on('data', (chunk: string) => {
        const parts = (rest + chunk).split('\n');
        rest = parts.pop() ?? '';
        for (const l of parts) {
          lines.push(l);
          if (process.env.GEMESH_TEST_VERBOSE) process.stderr.write(`${l}\n`);
        }
      });
    }
    await waitLine(/^GE Mesh is up: /, 180_000);
    await waitReady(10_000);
    await inferTiny();
  });

  after(async () => {
    if (cli && cli.exitCode === null && cli.signalCode === null) {
      const exited = once(cli, 'exit');
      cli.kill('SIGTERM');
      const t = setTimeout(() => cli.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(t);
    }
    await ref.close();
    await purgeNamespace(namespace, DEMO_MODELS);
  });

  it('starts a SIGKILLed gateway again, twice, the second time after a doubled delay; ready again, right answers', async () => {
    assert.deepEqual(restartLines(), []);
    // Killed again soon after its restart (well within 30 s), the delay doubles: attempt 2 after 1 s.
    for (const [attempt, delay] of [
      ['1', '0.5'],
      ['2', '1.0'],
    ]) {
      const pid = pidOf('gateway');
      assert.ok(pid > 0);
      const from = lines.length;
      process.kill(pid, 'SIGKILL');
      const line = await waitLine(/^\[launcher\] gateway exited/, 10_000, from);
      assert.deepEqual(RESTART_LINE.exec(line)?.slice(1), ['gateway', 'signal SIGKILL', attempt, delay]);
      await waitReady(60_000);
      assert.notEqual(pidOf('gateway'), pid);
      await inferTiny();
    }
    assert.equal(restartLines().length, 2);
  });

  it('starts a SIGKILLed batcher again; a request sent while it is down is answered once it is back', async () => {
    const pid = pidOf('batcher');
    assert.ok(pid > 0);
    const from = lines.length;
    process.kill(pid, 'SIGKILL');
    const line = await waitLine(/^\[launcher\] batcher exited/, 10_000, from);
    assert.deepEqual(RESTART_LINE.exec(line)?.slice(1), ['batcher', 'signal SIGKILL', '1', '0.5']);
    // Queued in the broker until the new batcher takes it.
    await inferTiny();
    assert.notEqual(pidOf('batcher'), pid);
    assert.equal(await ready(), 200);
    await inferTiny();
    // Exactly the two kills were restarted: the worker and the other service never went down.
    assert.deepEqual(
      restartLines().map((l) => RESTART_LINE.exec(l)?.[1]),
      ['gateway', 'gateway', 'batcher'],
    );
  });

  it('stops on SIGTERM (exit 0, every service gone) and starts nothing again', async () => {
    const pids = ['gateway', 'batcher', 'worker-0'].map(pidOf);
    assert.ok(pids.every((p) => p > 0));
    const exited = once(cli, 'exit');
    cli.kill('SIGTERM');
    const [code] = await exited;
    assert.equal(code, 0);
    for (const p of pids) assert.throws(() => process.kill(p, 0), { code: 'ESRCH' }, `pid ${p} is still alive`);
    assert.equal(restartLines().length, 3);
  });
});
