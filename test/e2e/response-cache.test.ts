import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { demoModel, sampleInputs } from '@ge-mesh/demo-models';
import { tiersConfig, tinyVariants } from '../support/batcher-fixtures.js';
import { startTestMesh, type TestMesh } from '../support/mesh-harness.js';
import { inferTiny, Reference } from '../support/reference.js';

/**
 * Triton's response cache through the whole mesh: a model with
 * response_cache { enable: true } answers a repeated request from the cache
 * shared in Redis (by any gateway), counted in the statistics as Triton does;
 * a model without it never touches the cache.
 */
const BATCHING = tiersConfig([1, 2, 4, 8]);

interface Leaf {
  count: number;
  ns: number;
}
interface Stats {
  inference_count: number;
  execution_count: number;
  inference_stats: Record<'success' | 'fail' | 'cache_hit' | 'cache_miss', Leaf>;
}

describe('response cache through the mesh', { timeout: 180_000 }, () => {
  let mesh: TestMesh;
  let repo: Awaited<ReturnType<typeof tinyVariants>>;
  const ref = new Reference();

  before(async () => {
    repo = await tinyVariants({ cached: `${BATCHING}\nresponse_cache { enable: true }`, plain: BATCHING });
    mesh = await startTestMesh({ modelRepository: repo.dir, models: ['cached', 'plain'], workers: 1 });
  });
  after(async () => {
    await ref.close();
    await mesh?.teardown();
    await repo?.remove();
  });

  const infer = async (model: string, seed: number) => {
    const { y, matches } = await inferTiny(ref, mesh.url, model, sampleInputs(demoModel('tiny'), 2, seed));
    assert.ok(matches, `${model} seed ${seed}: answer differs from onnxruntime`);
    return y;
  };
  const stats = async (model: string) => {
    const res = await fetch(`${mesh.url}/v2/models/${model}/stats`);
    return ((await res.json()) as { model_stats: Stats[] }).model_stats[0] as Stats;
  };
  const counts = (s: Stats) => ({
    success: s.inference_stats.success.count,
    hit: s.inference_stats.cache_hit.count,
    miss: s.inference_stats.cache_miss.count,
    inferences: s.inference_count,
    executions: s.execution_count,
  });

  it('answers a repeated request from the cache, with the same correct outputs, counted as Triton counts it', async () => {
    const first = await infer('cached', 1);
    const again = await infer('cached', 1);
    assert.deepEqual(again, first);
    await infer('cached', 2); // other inputs: a miss
    // The miss is recorded once its insertion lands (after the answer): wait for it.
    let s = await stats('cached');
    for (let i = 0; i < 50 && s.inference_stats.cache_miss.count < 2; i++) {
      await new Promise((r) => setTimeout(r, 50));
      s = await stats('cached');
    }
    // 3 successes; 1 hit; 2 misses; the hit adds no inference (2 rows each for the two that ran) and no execution.
    assert.deepEqual(counts(s), { success: 3, hit: 1, miss: 2, inferences: 4, executions: 2 });
    assert.ok(s.inference_stats.cache_hit.ns > 0 && s.inference_stats.cache_miss.ns > 0);
  });

  it('a model without response_cache never touches the cache', async () => {
    await infer('plain', 1);
    await infer('plain', 1);
    const s = await stats('plain');
    assert.deepEqual(counts(s), { success: 2, hit: 0, miss: 0, inferences: 4, executions: 2 });
  });
});
