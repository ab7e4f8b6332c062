/**
 * Load time and device memory of the `ge` runtime per lane: a model loaded on
 * 1 and on 4 lanes of one simulated NPU, each lane a worker_thread running
 * createGeEngine as the worker's lanes do (the lanes start together, as a
 * worker starts them). Prints one table row per (model, lanes): wall time
 * until every lane is ready, HBM used on the device, and HBM per lane.
 *
 * Load time is the median of --repeat loads (default 3).
 *
 *   node --import tsx test/bench/ge-load-per-device.ts [--models resnet18,text_encoder] [--lanes 1,4] [--repeat 3]
 */
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { loadModel } from '@ge-mesh/model-repository';
import type { EngineModelSpec } from '@ge-mesh/runtime';
import { readDeviceMemory } from '@ge-mesh/runtime-ge';
import { DEMO_REPOSITORY } from '../support/mesh-harness.js';
import { EngineLanes } from './engine-lanes.js';

const { values } = parseArgs({
  options: {
    models: { type: 'string', default: 'resnet18,text_encoder' },
    lanes: { type: 'string', default: '1,4' },
    repeat: { type: 'string', default: '3' },
  },
});
// Read by the simulator at its first aclInit, in this process: room for 4 copies of resnet18's graphs.
process.env.GEMESH_SIM_HBM_MB ??= '65536';
process.env.GEMESH_SIM_DEVICES ??= '1';

const MiB = 1024 * 1024;
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
  const spec: EngineModelSpec = {
    name: model.name,
    version: version.version,
    modelPath: version.modelPath,
    inputs: model.config.input,
    outputs: model.config.output,
    tiers,
    batched,
    // Timing mode: activations stay virtual (charged, not allocated), and nothing runs.
    parameters: { ...Object.fromEntries(model.config.parameters), 'session.gemesh.sim.timing': '1' },
    threads: availableParallelism(),
    stream: 0,
    deviceId: 0,
  };
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
}
process.stdout.write(`${rows.join('\n')}\n`);
