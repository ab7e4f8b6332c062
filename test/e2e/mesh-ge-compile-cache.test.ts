import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createPrng, encodeModel, GraphBuilder, makeModel } from '@ge-mesh/onnx';
import { skipUnlessSimulator } from '../native/support.js';
import { startTestMesh } from '../support/mesh-harness.js';

/**
 * A worker started twice with the same --ge-compile-cache folder: the first
 * start compiles each tier (the simulator holds each compile for a modelled
 * COMPILE_MS, as GE takes its time), the restart finds every graph in the
 * cache and is ready that much sooner, and serves the same answers.
 */
const K = 64;
const N = 8;
const TIERS = [1, 4];
const COMPILE_MS = 3000;
const rng = createPrng(41);
const W = rng.floats(N * K, -0.2, 0.2);

function model(): Uint8Array {
  const g = new GraphBuilder('dense');
  const y = g.op('Gemm', [g.input('x', 'FP32', ['batch', K]), g.floats('w', [N, K], W)], {
    transB: { kind: 'int', value: 1 },
  });
  g.output(g.op('Identity', [y], {}, 'y'), 'FP32', ['batch', N]);
  return encodeModel(makeModel(g.build()));
}

describe('fast starts: GE compiled-graph cache through the worker (CANN simulator)', {
  timeout: 240_000,
  // The modelled compile time is the simulator's.
  skip: skipUnlessSimulator,
}, () => {
  let dir = '';

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gemesh-compile-cache-'));
    await mkdir(join(dir, 'repo', 'dense', '1'), { recursive: true });
    await writeFile(join(dir, 'repo', 'dense', '1', 'model.onnx'), model());
    await writeFile(
      join(dir, 'repo', 'dense', 'config.pbtxt'),
      [
        'name: "dense"',
        'backend: "npu_ge"',
        `max_batch_size: ${Math.max(...TIERS)}`,
        `input [{ name: "x" data_type: TYPE_FP32 dims: [ ${K} ] }]`,
        `output [{ name: "y" data_type: TYPE_FP32 dims: [ ${N} ] }]`,
        `dynamic_batching { preferred_batch_size: [ ${TIERS.join(', ')} ] }`,
        'parameters { key: "device_exec_blocks" value: { string_value: "2" } }',
        'parameters { key: "session.ge.exec.precision_mode_v2" value: { string_value: "origin" } }',
        `parameters { key: "session.gemesh.sim.compile_ms" value: { string_value: "${COMPILE_MS}" } }`,
        '',
      ].join('\n'),
    );
  });
  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** Starts a mesh, times it until ready, answers one request, and stops it. */
  async function start(): Promise<{ ms: number; y: number[] }> {
    const t0 = performance.now();
    const mesh = await startTestMesh({
      modelRepository: join(dir, 'repo'),
      models: ['dense'],
      env: { GEMESH_SIM_DEVICES: '1' },
      // Created by the worker: the folder does not exist before the first start.
      flags: { worker: ['--runtime', 'ge', '--ge-compile-cache', join(dir, 'cache')] },
    });
    const ms = performance.now() - t0;
    try {
      const x = Array.from({ length: K }, (_, i) => (i % 7) / 7 - 0.5);
      const res = await fetch(`${mesh.url}/v2/models/dense/infer`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ inputs: [{ name: 'x', shape: [1, K], datatype: 'FP32', data: x }] }),
      });
      assert.equal(res.status, 200);
      const json = (await res.json()) as { outputs: { data: number[] }[] };
      return { ms, y: json.outputs[0]?.data ?? [] };
    } finally {
      await mesh.teardown();
    }
  }

  it('the restarted worker compiles nothing and answers the same', async (t) => {
    const cold = await start();
    const entries = await readdir(join(dir, 'cache'));
    // One entry per tier: the second lane's graphs, and the restart's, are hits.
    assert.equal(entries.length, TIERS.length, entries.join(', '));
    const written = async () => Promise.all(entries.map(async (e) => (await stat(join(dir, 'cache', e))).mtimeMs));
    const before = await written();
    const warm = await start();
    // Nothing compiled again: no entry added, none rewritten (a compile writes its entry).
    assert.deepEqual(await readdir(join(dir, 'cache')), entries);
    assert.deepEqual(await written(), before);
    // How much sooner is a figure, not a check (this machine is shared): reported only.
    t.diagnostic(
      `cold start ${(cold.ms / 1000).toFixed(2)} s, warm start ${(warm.ms / 1000).toFixed(2)} s (${TIERS.length} compiles of ${COMPILE_MS} ms modelled)`,
    );
    assert.deepEqual(warm.y, cold.y);
    let y0 = 0;
    for (let k = 0; k < K; k++) y0 += ((k % 7) / 7 - 0.5) * (W[k] as number);
    assert.ok(Math.abs((cold.y[0] ?? Number.NaN) - y0) < 1e-5, `y[0] ${cold.y[0]} vs ${y0}`);
  });
});
