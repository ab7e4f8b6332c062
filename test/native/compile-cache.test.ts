import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { batchTiers, finalizeGe, GeBridgeError, GeModel, type GeOptions, initGe } from '@ge-mesh/ge-bridge';
import { createPrng } from '@ge-mesh/onnx';
import { FP32, maxAbsDiff, skipNative, skipUnlessSimulator, tempDir, writeModel } from './support.js';

/**
 * GE's compiled-graph cache (ge.graph_compiler_cache_dir): the bridge gives
 * every tier graph a ge.graph_key that covers the model's bytes, the tier's
 * shapes and every option, so a second load of the same model compiles
 * nothing, and any change gets entries of its own. The simulator models GE's
 * compile time (gemesh.sim.compile_ms), which a hit saves.
 */
const IN = 32;
const OUT = 8;
const COMPILE_MS = 300;
const KEY = /^gemesh_[0-9a-f]{16}_[0-9a-f]{16}\.gemesh-sim-graph$/;

describe('compiled-graph cache on disk', { skip: skipNative }, () => {
  const tmp = tempDir('compile-cache');
  let model = '';
  let other = '';
  let weights: Float32Array;

  before(() => {
    weights = createPrng(3).floats(IN * OUT, -0.5, 0.5);
    const build = (w: Float32Array) => (g: Parameters<Parameters<typeof writeModel>[2]>[0]) => {
      const y = g.op('MatMul', [g.input('x', 'FP32', ['batch', IN]), g.floats('w', [IN, OUT], w)], {}, 'y');
      g.output(y, 'FP32', ['batch', OUT]);
    };
    model = writeModel(tmp.dir, 'dense', build(weights));
    // The same graph with one weight changed: other bytes, other cache entries.
    const changed = weights.slice();
    changed[0] = (changed[0] as number) + 1;
    other = writeModel(tmp.dir, 'dense2', build(changed));
    initGe();
  });

  after(() => {
    finalizeGe();
    tmp.cleanup();
  });

  const cacheDir = (name: string) => {
    const dir = join(tmp.dir, name);
    mkdirSync(dir, { recursive: true });
    return dir;
  };
  const entries = (dir: string) => readdirSync(dir).sort();

  function load(dir: string, opts: { path?: string; tiers?: number[]; graph?: GeOptions; session?: GeOptions } = {}) {
    const t0 = performance.now();
    const m = GeModel.load({
      modelPath: opts.path ?? model,
      deviceId: 0,
      streams: 2,
      inputs: [{ name: 'x', dataType: 'FP32' }],
      tiers: batchTiers([[IN]], opts.tiers ?? [1, 4]),
      sessionOptions: {
        ...FP32,
        'ge.graph_compiler_cache_dir': dir,
        'gemesh.sim.compile_ms': String(COMPILE_MS),
        ...opts.session,
      },
      ...(opts.graph ? { graphOptions: opts.graph } : {}),
    });
    return { model: m, ms: performance.now() - t0 };
  }

  test('a cold load compiles each tier once and fills the cache; a warm load compiles nothing', {
    skip: skipUnlessSimulator,
  }, () => {
    const dir = cacheDir('warm');
    const cold = load(dir);
    cold.model.destroy();
    // Two tiers on two streams: each tier's first graph compiles, the second stream's is a hit.
    assert.ok(cold.ms >= 2 * COMPILE_MS, `cold load took ${cold.ms.toFixed(0)} ms`);
    const files = entries(dir);
    assert.equal(files.length, 2, files.join(', '));
    for (const f of files) assert.match(f, KEY);

    const warm = load(dir);
    try {
      assert.ok(warm.ms < COMPILE_MS, `warm load took ${warm.ms.toFixed(0)} ms, cold ${cold.ms.toFixed(0)} ms`);
      assert.deepEqual(entries(dir), files);
      // The cached graphs compute what the model does.
      const x = createPrng(4).floats(4 * IN, -1, 1);
      const y = new Float32Array(4 * OUT);
      warm.model.run(1, 1, [x], [y]);
      const want = new Float32Array(4 * OUT);
      for (let b = 0; b < 4; b++)
        for (let k = 0; k < IN; k++)
          for (let o = 0; o < OUT; o++)
            want[b * OUT + o] =
              (want[b * OUT + o] as number) + (x[b * IN + k] as number) * (weights[k * OUT + o] as number);
      assert.ok(maxAbsDiff(y, want) <= 1e-5, `max diff ${maxAbsDiff(y, want)}`);
    } finally {
      warm.model.destroy();
    }
  });

  test('the key changes with the tier, the options and the model bytes', { skip: skipUnlessSimulator }, () => {
    const dir = cacheDir('keys');
    load(dir).model.destroy();
    const base = entries(dir);
    load(dir, { tiers: [1, 8] }).model.destroy(); // tier 1 again, tier 8 new
    assert.equal(entries(dir).length, 3);
    load(dir, { graph: { 'ge.deterministic': '1' } }).model.destroy();
    assert.equal(entries(dir).length, 5);
    load(dir, { session: { 'ge.exec.precision_mode_v2': 'fp16' } }).model.destroy();
    assert.equal(entries(dir).length, 7);
    load(dir, { path: other }).model.destroy();
    const all = entries(dir);
    assert.equal(all.length, 9);
    // The model's digest is the first part of the key: the other file's entries share none with the first's.
    const digest = (f: string) => f.split('_')[1];
    const firstModel = new Set(base.map(digest));
    assert.equal(all.filter((f) => firstModel.has(digest(f))).length, 7);
  });

  test('an entry holding another graph under the key is refused, not served', { skip: skipUnlessSimulator }, () => {
    const dir = cacheDir('stale');
    load(dir).model.destroy();
    const [first] = entries(dir);
    const path = join(dir, first as string);
    writeFileSync(path, readFileSync(path, 'utf8').replace(/digest [0-9a-f]+/, 'digest 0123456789abcdef'));
    assert.throws(
      () => load(dir),
      (err: unknown) =>
        err instanceof GeBridgeError &&
        err.status === 'GRAPH' &&
        err.message.includes('the compile cache holds another graph under ge.graph_key'),
    );
  });

  test('a missing cache folder and a ge.graph_key of the caller are refused by name', () => {
    assert.throws(
      () => load(join(tmp.dir, 'absent')),
      (err: unknown) =>
        err instanceof GeBridgeError &&
        err.status === 'INVALID_ARGUMENT' &&
        err.message ===
          `ge.graph_compiler_cache_dir '${join(tmp.dir, 'absent')}' is not a directory; GE needs it to exist (create it first)`,
    );
    assert.throws(
      () => load(cacheDir('caller-key'), { graph: { 'ge.graph_key': 'mine' } }),
      (err: unknown) =>
        err instanceof GeBridgeError &&
        err.status === 'INVALID_ARGUMENT' &&
        err.message ===
          'ge.graph_key is set by the bridge, one key per tier, when ge.graph_compiler_cache_dir is set; remove it from the graph options',
    );
  });
});
