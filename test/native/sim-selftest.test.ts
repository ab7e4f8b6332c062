import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { NATIVE_BUILD_DIR, skipUnlessSimulator } from './support.js';

// The C++ self-test covers what the bridge never does on purpose: GE rule
// violations (load before compile, execute before load, one graph on two
// streams), kernels against naive loops, and the ACL runtime's accounting.
test('the simulator self-test passes all 30 checks', { skip: skipUnlessSimulator }, () => {
  const run = spawnSync(join(NATIVE_BUILD_DIR, 'gemesh_sim_selftest'), { encoding: 'utf8', timeout: 60_000 });
  const failures = run.stdout.split('\n').filter((l) => l.startsWith('not ok'));
  assert.deepEqual(failures, []);
  assert.equal(run.status, 0, run.stdout + run.stderr);
  assert.match(run.stdout, /^30 passed, 0 failed$/m);
  assert.equal(run.stdout.split('\n').filter((l) => l.startsWith('ok - ')).length, 30);
});
