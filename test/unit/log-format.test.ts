import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { prettyLogLine } from '@ge-mesh/telemetry';

/** Logs are JSON for collectors and readable for people (a terminal, or the launcher on one). */
describe('log format', () => {
  const line = (format: string) => {
    const script = `import { createLogger } from '@ge-mesh/telemetry'; createLogger('gateway', 'info', '${format}').info({ model: 'tiny' }, 'gateway ready');`;
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      cwd: new URL('../../packages/telemetry/', import.meta.url).pathname,
    });
    assert.equal(r.status, 0, r.stderr);
    return r.stdout.trim();
  };

  it('auto on a pipe is one JSON object per line', () => {
    const obj = JSON.parse(line('auto')) as Record<string, unknown>;
    assert.equal(obj.msg, 'gateway ready');
    assert.equal(obj.model, 'tiny');
  });

  it('pretty is a readable line: level, message, fields', () => {
    const out = line('pretty');
    assert.match(out, /INFO.*gateway ready/);
    assert.match(out, /model.*tiny/);
    assert.throws(() => JSON.parse(out));
  });

  it('the launcher turns a JSON line readable and leaves other lines alone', () => {
    const pretty = prettyLogLine(false);
    assert.match(
      pretty('{"level":40,"time":0,"msg":"broker not reachable","attempt":2}'),
      /WARN.*broker not reachable.*attempt.*2/,
    );
    assert.equal(pretty('plain text'), 'plain text');
  });
});
