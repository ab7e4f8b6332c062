import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ROOT } from '@ge-mesh/launcher';

/**
 * Every command a newcomer runs answers --help with its options and turns
 * a wrong option into one line on stderr and exit 2: never a stack trace.
 */
const CLIS: Record<string, { entry: string; mentions: string[] }> = {
  launcher: { entry: 'packages/launcher/src/cli.ts', mentions: ['--workers', '--model-repository', '--runtime'] },
  gateway: { entry: 'services/gateway/src/main.ts', mentions: ['--http-port', '--metrics-port', '--log-format'] },
  batcher: { entry: 'services/batcher/src/main.ts', mentions: ['--policy', '--metrics-port'] },
  worker: { entry: 'services/worker/src/main.ts', mentions: ['--runtime', '--metrics-port'] },
  loadgen: { entry: 'packages/loadgen/src/cli.ts', mentions: ['--model', '--concurrency-range'] },
  models: { entry: 'packages/demo-models/src/cli.ts', mentions: ['--out', '--only', '--npu-out'] },
};

function run(entry: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, entry), ...args], {
      cwd: ROOT,
      // No broker or Redis is reached: the command line is checked first.
      env: { ...process.env, GEMESH_RABBITMQ_URL: 'amqp://127.0.0.1:1', GEMESH_REDIS_URL: 'redis://127.0.0.1:1' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d;
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d;
    });
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('command lines', { concurrency: 3, timeout: 120_000 }, () => {
  for (const [name, cli] of Object.entries(CLIS)) {
    it(`${name} --help lists its options and exits 0`, async () => {
      const r = await run(cli.entry, ['--help']);
      assert.equal(r.code, 0, r.stderr);
      for (const m of cli.mentions) assert.ok(r.stdout.includes(m), `${name} --help mentions ${m}:\n${r.stdout}`);
    });
    it(`${name} --no-such-option: one line, exit 2, no stack trace`, async () => {
      const r = await run(cli.entry, ['--no-such-option']);
      assert.equal(r.code, 2, r.stderr);
      assert.equal(r.stdout, '');
      const lines = r.stderr.trimEnd().split('\n');
      assert.equal(lines.length, 1, r.stderr);
      assert.match(lines[0] ?? '', /--no-such-option/);
      assert.doesNotMatch(r.stderr, /\n\s+at /);
    });
  }
  it('a bad option value is one line too (gateway --http-port x)', async () => {
    const r = await run(CLIS.gateway?.entry ?? '', ['--http-port', 'x']);
    assert.equal(r.code, 2);
    assert.equal(r.stderr.trimEnd().split('\n').length, 1, r.stderr);
    assert.match(r.stderr, /httpPort/);
  });
});
