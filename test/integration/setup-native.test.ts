import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ROOT } from '@ge-mesh/launcher';

/**
 * setup's native step (infra/scripts/native.sh) in a scratch copy of the
 * repository's native/ folder, with its build dir left broken the ways a
 * newcomer's was: a failed configure's cache and no Makefile, a cache from
 * another checkout, a corrupt cache. Each run must configure again by
 * itself. Only the configure step runs (GEMESH_NATIVE_CONFIGURE_ONLY=1), so
 * the test takes seconds; the full build is the same command.
 */
const hasToolchain = ['cmake', 'g++'].every((c) => spawnSync('sh', ['-c', `command -v ${c}`]).status === 0);

describe('setup: native step recovers a broken build dir', { skip: !hasToolchain && 'cmake/g++ not installed' }, () => {
  let scratch: string;
  let build: string;

  before(() => {
    scratch = mkdtempSync(join(tmpdir(), 'gemesh-setup-'));
    mkdirSync(join(scratch, 'infra/scripts'), { recursive: true });
    cpSync(join(ROOT, 'infra/scripts/native.sh'), join(scratch, 'infra/scripts/native.sh'));
    cpSync(join(ROOT, 'native'), join(scratch, 'native'), {
      recursive: true,
      filter: (src) => !src.startsWith(join(ROOT, 'native/build')),
    });
    build = join(scratch, 'native/build');
  });
  after(() => rmSync(scratch, { recursive: true, force: true }));

  function runNativeStep(): string {
    const env: NodeJS.ProcessEnv = { ...process.env, GEMESH_NATIVE_CONFIGURE_ONLY: '1' };
    delete env.GEMESH_NATIVE_BUILD_DIR;
    const r = spawnSync('bash', [join(scratch, 'infra/scripts/native.sh')], { encoding: 'utf8', env });
    const out = `${r.stdout}${r.stderr}`;
    assert.equal(r.status, 0, out);
    return out;
  }

  function assertConfigured(out: string): void {
    assert.doesNotMatch(out, /skipped|not built/, out);
    for (const f of ['CMakeCache.txt', 'Makefile', 'cmake_install.cmake'])
      assert.ok(existsSync(join(build, f)), `${f}\n${out}`);
  }

  it('a cache left by a failed configure (no Makefile): configured again', () => {
    assertConfigured(runNativeStep());
    rmSync(join(build, 'Makefile'));
    rmSync(join(build, 'cmake_install.cmake'));
    assertConfigured(runNativeStep());
  });

  it('a cache written for another checkout: configured again from scratch', () => {
    rmSync(build, { recursive: true, force: true });
    mkdirSync(build);
    writeFileSync(
      join(build, 'CMakeCache.txt'),
      'CMAKE_CACHEFILE_DIR:INTERNAL=/elsewhere/native/build\nCMAKE_HOME_DIRECTORY:INTERNAL=/elsewhere/native\n',
    );
    assertConfigured(runNativeStep());
  });

  it('a corrupt cache and stray files: configured again from scratch', () => {
    rmSync(build, { recursive: true, force: true });
    mkdirSync(join(build, 'CMakeFiles'), { recursive: true });
    writeFileSync(join(build, 'CMakeCache.txt'), Buffer.from([0, 159, 146, 150, 10, 255, 0]));
    writeFileSync(join(build, 'CMakeFiles', 'junk'), 'junk');
    assertConfigured(runNativeStep());
  });
});
