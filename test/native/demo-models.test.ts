import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  DEMO_MODEL_VERSION,
  DEMO_MODELS,
  DEMO_REPOSITORY_DIR,
  ensureDemoModels,
  sampleInputs,
} from '@ge-mesh/demo-models';
import { batchTiers, finalizeGe, GeModel, initGe } from '@ge-mesh/ge-bridge';
import * as ort from 'onnxruntime-node';
import { ORT_TYPES } from '../support/reference.js';
import { FP32, f32, maxAbs, maxAbsDiff, skipNative } from './support.js';

/**
 * Each demo model runs on the bridge (the CANN simulator here) and in
 * onnxruntime-node on the same inputs. Tolerances: absolute for the small
 * models, and for resnet18 relative to the largest logit, since its 1000
 * logits sum thousands of fp32 products accumulated in a different order.
 */
const CASES: Record<string, { batches: [number, number]; tolerance: (ref: Float32Array) => number }> = {
  tiny: { batches: [1, 4], tolerance: () => 1e-5 },
  text_encoder: { batches: [1, 4], tolerance: () => 1e-4 },
  ocr_cls: { batches: [1, 4], tolerance: () => 1e-5 },
  resnet18: { batches: [1, 2], tolerance: (ref) => 1e-3 * maxAbs(ref) },
  // A cast, a transpose and a division by 255: one rounding of fp32, no sums.
  preprocess: { batches: [1, 4], tolerance: () => 1e-6 },
};

function ortTensor(t: ReturnType<typeof sampleInputs>[number]): ort.Tensor {
  return new ort.Tensor(ORT_TYPES[t.dataType], t.data, t.dims);
}

describe('demo models match onnxruntime', { skip: skipNative }, () => {
  before(async () => {
    await ensureDemoModels(DEMO_REPOSITORY_DIR);
    initGe();
  });
  after(() => finalizeGe());

  for (const demo of DEMO_MODELS) {
    const c = CASES[demo.name];
    test(`${demo.name}: both tiers agree with onnxruntime`, {
      skip: c ? false : `no tolerance set for ${demo.name}`,
    }, async () => {
      if (!c) return;
      const path = join(DEMO_REPOSITORY_DIR, demo.name, DEMO_MODEL_VERSION, 'model.onnx');
      const [small, large] = c.batches;
      const model = GeModel.load({
        modelPath: path,
        deviceId: 0,
        streams: 1,
        inputs: demo.inputs.map((i) => ({ name: i.name, dataType: i.dataType })),
        tiers: batchTiers(
          demo.inputs.map((i) => i.dims),
          c.batches,
        ),
        sessionOptions: FP32,
      });
      const session = await ort.InferenceSession.create(path, { intraOpNumThreads: 1 });
      try {
        assert.equal(model.outputCount, demo.outputs.length);
        for (const [tier, batch] of [small, large].entries()) {
          const inputs = sampleInputs(demo, batch, 42);
          const outputs = model.allocateOutputs(tier);
          model.run(
            0,
            tier,
            inputs.map((t) => t.data),
            outputs,
          );
          const ref = await session.run(Object.fromEntries(inputs.map((t) => [t.name, ortTensor(t)])));
          session.outputNames.forEach((name, o) => {
            const want = ref[name];
            assert.ok(want, `onnxruntime produced no ${name}`);
            assert.deepEqual(model.outputInfo(tier)[o]?.dims, want.dims.map(Number));
            const got = f32(outputs[o] as Uint8Array);
            const wantData = want.data as Float32Array;
            const diff = maxAbsDiff(got, wantData);
            const tol = c.tolerance(wantData);
            assert.ok(diff <= tol, `${name} at batch ${batch}: max |diff| ${diff} > ${tol}`);
          });
        }
      } finally {
        model.destroy();
        await session.release();
      }
    });
  }
});
