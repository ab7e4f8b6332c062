/**
 * Load time and device memory of the `ge` runtime per lane: a model loaded on
 * 1 and on 4 lanes of one simulated NPU, each lane a worker_thread running
 * createGeEngine as the worker's lanes do (the lanes start together, as a
 * worker starts them). Prints one table row per (model, lanes): wall time
 * until every lane is ready, HBM used on the device, and HBM per lane.
 *
 * Load time is the median of --repeat loads (default 3).
 *
 * Then cold and warm starts with GE's compiled-graph cache (the worker's
 * --ge-compile-cache): the same lanes with an empty cache folder, then again
 * with the folder the first start filled. The simulator compiles quickly; it
 * models GE's compile time per graph with --compile-ms (gemesh.sim.compile_ms,
 * a stated parameter, not a measurement of GE), which a cache hit saves. Rows
 * for 0 ms show the simulator's own cost alone.
 *
 *   node --import tsx test/bench/ge-load-per-device.ts [--models resnet18,text_encoder] [--lanes 1,4] [--repeat 3] [--compile-ms 0,2000]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadModel } from '@ge-mesh/model-repository';
import type { EngineModelSpec } from '@ge-mesh/runtime';
import { readDeviceMemory } from '@ge-mesh/runtime-ge';
import { engineSpecOf } from '../support/engine-spec.js';
import { DEMO_REPOSITORY } from '../support/mesh-harness.js';
import { EngineLanes } from './engine-lanes.js';

const { values } = parseArgs({
  options: {
    models: { type: 'string', default: 'resnet18,text_encoder' },
    lanes: { type: 'string', default: '1,4' },
    repeat: { type: 'string', default: '3' },
    'compile-ms': { type: 'string', default: '0,2000' },
  },
});
// Read by the simulator at its first aclInit, in this process: room for 4 copies of resnet18's graphs.
process.env.GEMESH_SIM_HBM_MB ??= '65536';
process.env.GEMESH_SIM_DEVICES ??= '1';

const MiB = 1024 * 1024;
const coldWarm: string[] = [
  '| model | tiers | lanes | modelled compile (ms per graph) | cold start (s) | warm start (s) |',
  '|---|---|---|---|---|---|',
];
const rows: string[] = [
  '| model | tiers | lanes | load, all lanes ready (s) | HBM used (MiB) | HBM per lane (MiB) |',
  '|---|---|---|---|---|---|',
];
for (const name of (values.models ?? '').split(',')) {
  const model = await loadModel(DEMO_REPOSITORY, name);
  const version = model.versions[0];
  if (!version) throw new Error(`${name}: no version`);
  const batched = model.config.maxBatchSize > 0;
  const tiers = batched ? [...(model.config.dynamicBatching?.preferredBatchSize ?? [1])] : [1];
  const spec: EngineModelSpec = engineSpecOf(model, {
    tiers,
    batched,
    // Timing mode: activations stay virtual (charged, not allocated), and nothing runs.
    parameters: { ...Object.fromEntries(model.config.parameters), 'session.gemesh.sim.timing': '1' },
  });
  for (const lanes of (values.lanes ?? '').split(',').map(Number)) {
    const times: number[] = [];
    let used = 0;
    for (let r = 0; r < Number(values.repeat); r++) {
      const t0 = performance.now();
      const pool = await EngineLanes.start(
        Array.from({ length: lanes }, (_, stream) => ({ ...spec, stream, threads: 1 })),
        'ge',
      );
      times.push((performance.now() - t0) / 1000);
      used = (readDeviceMemory([0])[0]?.usedBytes ?? 0) / MiB;
      await pool.close();
    }
    const seconds = times.sort((a, b) => a - b)[Math.floor(times.length / 2)] ?? 0;
    rows.push(
      `| ${name} | ${tiers.join(', ')} | ${lanes} | ${seconds.toFixed(2)} | ${used.toFixed(1)} | ${(used / lanes).toFixed(1)} |`,
    );
    process.stderr.write(`${rows.at(-1)}\n`);
  }
  const lanes = Math.max(...(values.lanes ?? '1').split(',').map(Number));
  for (const compileMs of (values['compile-ms'] ?? '').split(',').map(Number)) {
    const dir = await mkdtemp(join(tmpdir(), 'gemesh-compile-cache-'));
    try {
      const cached: EngineModelSpec = {
        ...spec,
        parameters: { ...spec.parameters, 'session.gemesh.sim.compile_ms': String(compileMs) },
        runtimeOptions: { geCompileCache: dir },
      };
      const start = async () => {
        const t0 = performance.now();
        const pool = await EngineLanes.start(
          Array.from({ length: lanes }, (_, stream) => ({ ...cached, stream, threads: 1 })),
          'ge',
        );
        const seconds = (performance.now() - t0) / 1000;
        await pool.close();
        return seconds;
      };
      const cold = await start();
      const warm = await start();
      coldWarm.push(
        `| ${name} | ${tiers.join(', ')} | ${lanes} | ${compileMs} | ${cold.toFixed(2)} | ${warm.toFixed(2)} |`,
      );
      process.stderr.write(`${coldWarm.at(-1)}\n`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
}
process.stdout.write(`${rows.join('\n')}\n\n${coldWarm.join('\n')}\n`);
