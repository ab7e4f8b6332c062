import { mkdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { DEMO_MODELS, ensureDemoModels } from '@ge-mesh/demo-models';
import { defineAccuracySuite } from '../support/accuracy-suite.js';
import { DEMO_REPOSITORY, startTestMesh, uniqueNamespace } from '../support/mesh-harness.js';

/**
 * The same end-to-end accuracy suite with the worker on runtime `ge`: the
 * native bridge over CANN GE, here linked against the CANN simulator. The
 * demo models are served as GE backend models (`backend: "npu_ge"`) at
 * precision `origin` (fp32): without a precision key they would run at GE's
 * inference default, fp16 (mesh-ge-precision.test.ts checks a low precision).
 *
 * Tolerance: 2e-3 + 2e-3·|reference|: the simulator's kernels accumulate in
 * a different order than onnxruntime's (observed ~1e-5 relative on resnet18).
 */
const FP32_PARAMETER = '\nparameters { key: "session.ge.exec.precision_mode_v2" value: { string_value: "origin" } }\n';
const repo = join(tmpdir(), uniqueNamespace('ge-repo'));

async function geRepository(): Promise<string> {
  await ensureDemoModels(DEMO_REPOSITORY);
  for (const m of DEMO_MODELS) {
    await mkdir(join(repo, m.name, '1'), { recursive: true });
    await symlink(join(DEMO_REPOSITORY, m.name, '1', 'model.onnx'), join(repo, m.name, '1', 'model.onnx'));
    const config = await readFile(join(DEMO_REPOSITORY, m.name, 'config.pbtxt'), 'utf8');
    await writeFile(
      join(repo, m.name, 'config.pbtxt'),
      config.replace('backend: "onnxruntime"', 'backend: "npu_ge"') + FP32_PARAMETER,
    );
  }
  return repo;
}

after(() => rm(repo, { recursive: true, force: true }));

defineAccuracySuite({
  title: 'end to end: gateway → batcher → worker (ge on the CANN simulator)',
  start: async () =>
    startTestMesh({
      workers: 1,
      modelRepository: await geRepository(),
      flags: { worker: ['--runtime', 'ge'] },
    }),
  atol: 2e-3,
  rtol: 2e-3,
});
