import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DEMO_MODELS, sampleInputs } from '@ge-mesh/demo-models';
import type { TestMesh } from './mesh-harness.js';
import { jsonInferBody, Reference, toleranceRatio } from './reference.js';

interface OutputJson {
  name: string;
  datatype: string;
  shape: number[];
  data: number[];
}

export interface AccuracySuiteOptions {
  title: string;
  start: () => Promise<TestMesh>;
  /** |mesh − reference| ≤ atol + rtol·|reference| per element. */
  atol: number;
  rtol: number;
}

/**
 * Concurrent requests of mixed batch sizes to every demo model through the
 * running mesh, every output element checked against onnxruntime run in this
 * process on the same inputs, plus batch independence.
 */
export function defineAccuracySuite(o: AccuracySuiteOptions): void {
  describe(o.title, { timeout: 300_000 }, () => {
    let mesh: TestMesh;
    const ref = new Reference();

    before(async () => {
      mesh = await o.start();
    });
    after(async () => {
      await ref.close();
      await mesh?.teardown();
    });

    async function infer(model: string, body: string): Promise<{ status: number; json: Record<string, unknown> }> {
      const res = await fetch(`${mesh.url}/v2/models/${model}/infer`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      return { status: res.status, json: (await res.json()) as Record<string, unknown> };
    }

    // Batch sizes mixed so batches form from several requests and get padded.
    const plans: Record<string, number[]> = {
      tiny: [1, 2, 3, 1, 5, 1, 2, 8, 1, 1, 4, 3, 1, 2, 1, 6, 1, 1, 2, 1, 3, 1, 7, 1],
      text_encoder: [1, 2, 1, 3, 1, 1, 5, 2, 1, 1, 8, 1],
      ocr_cls: [1, 3, 1, 2, 5, 1, 1, 4, 1, 2],
      resnet18: [1, 2, 1, 3, 1, 1],
    };

    for (const model of DEMO_MODELS) {
      it(`${model.name}: concurrent mixed-batch requests match onnxruntime in-process`, async () => {
        const sizes = plans[model.name] ?? [1];
        let seed = 1_000 * (DEMO_MODELS.indexOf(model) + 1);
        const requests = sizes.map((b) => {
          const inputs = sampleInputs(model, b, seed);
          seed += b;
          return inputs;
        });
        const answers = await Promise.all(
          requests.map((inputs, i) => infer(model.name, jsonInferBody(inputs, { id: `r${i}` }))),
        );
        let compared = 0;
        for (const [i, inputs] of requests.entries()) {
          const a = answers[i];
          assert.ok(a);
          assert.equal(a.status, 200, `request ${i}: ${JSON.stringify(a.json).slice(0, 300)}`);
          assert.equal(a.json.model_name, model.name);
          assert.equal(a.json.model_version, '1');
          assert.equal(a.json.id, `r${i}`);
          const expected = await ref.run(model.name, inputs);
          const outputs = a.json.outputs as OutputJson[];
          assert.deepEqual(outputs.map((x) => x.name).sort(), model.outputs.map((x) => x.name).sort());
          for (const out of outputs) {
            const e = expected[out.name];
            assert.ok(e, `reference has ${out.name}`);
            assert.deepEqual(out.shape, [...e.dims], `${out.name} shape`);
            assert.equal(out.datatype, 'FP32');
            const ratio = toleranceRatio(out.data, e.data, o.atol, o.rtol);
            assert.ok(ratio <= 1, `request ${i} output ${out.name} off by ${ratio}× the tolerance`);
            compared += out.data.length;
          }
        }
        const perRow = model.outputs.reduce((n, x) => n + x.dims.reduce((a, b) => a * b, 1), 0);
        assert.equal(compared, sizes.reduce((n, b) => n + b, 0) * perRow, 'every output element was compared');
      });
    }

    it("a sample's output does not depend on which requests shared its batch", async () => {
      const model = DEMO_MODELS.find((m) => m.name === 'text_encoder');
      assert.ok(model);
      const probe = sampleInputs(model, 1, 777);
      // The same sample sent alone, then inside bursts with different neighbours.
      const alone = await infer(model.name, jsonInferBody(probe));
      assert.equal(alone.status, 200);
      const bursts = await Promise.all(
        [2, 5, 7].map(async (n, k) => {
          const others = Array.from({ length: n }, (_, j) =>
            infer(model.name, jsonInferBody(sampleInputs(model, 1 + (j % 3), 9_000 + 100 * k + j))),
          );
          const mine = infer(model.name, jsonInferBody(probe));
          return (await Promise.all([mine, ...others]))[0];
        }),
      );
      const pooled = (r: { json: Record<string, unknown> }) =>
        (r.json.outputs as OutputJson[]).find((x) => x.name === 'pooled')?.data ?? [];
      for (const b of bursts) {
        assert.ok(b);
        assert.equal(b.status, 200);
        const ratio = toleranceRatio(pooled(b), pooled(alone), 1e-5, 1e-5);
        assert.ok(ratio <= 1, `output changed with its batch neighbours (${ratio}× tolerance)`);
      }
    });
  });
}
