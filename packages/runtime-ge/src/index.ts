import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { batchTiers, finalizeGe, GeModel, initGe } from '@ge-mesh/ge-bridge';
import { parseGeParameters, parseGlobalGeOptions } from '@ge-mesh/model-repository';
import { readModelIO } from '@ge-mesh/onnx';
import { MeshError } from '@ge-mesh/protocol';
import type { Engine, EngineModelSpec, EngineTensor } from '@ge-mesh/runtime';
import { withCompileCache } from './compile-cache.js';
import { logGeLoad } from './load-log.js';
import { geDiagnosticsEnv, setNativeEnv } from './process-env.js';

export { readDeviceMemory } from './device-memory.js';

export { geDiagnosticsEnv, setNativeEnv } from './process-env.js';

/**
 * The `ge` runtime: CANN Graph Engine through the native bridge. Each lane
 * loads the model on its device with one stream and one static graph per
 * tier, and calls the bridge synchronously on its own worker_thread. The
 * lanes of a model version on a device share one GE session (as the GE
 * backend's static mode shares one per card), so its weights sit in device
 * memory once per device; graphs, stream and I/O buffers are the lane's own.
 * Output buffers are allocated once per tier.
 */
export async function createGeEngine(spec: EngineModelSpec): Promise<Engine> {
  // Checked once when the config loaded; a spec built by hand (tools, tests) is checked here.
  const params = spec.ge ?? parseGeParameters(new Map(Object.entries(spec.parameters)));
  const globalOptions = parseGlobalGeOptions(process.env.GE_NPU_CONFIG, spec.runtimeOptions?.geOptions);
  setNativeEnv(geDiagnosticsEnv(params));

  const gears = spec.gears;
  for (const i of spec.inputs) {
    if (!gears && i.dims.some((d) => d < 0)) {
      throw new MeshError(
        'INVALID_ARGUMENT',
        `model '${spec.name}': input '${i.name}' has a variable dim ${JSON.stringify(i.dims)}; the ge runtime compiles static graphs, so set every non-batch dim in config.pbtxt, or list gears for it (graph.ge.inputShape + graph.ge.dynamicDims)`,
      );
    }
  }
  const bytes = new Uint8Array(await readFile(spec.modelPath));
  const io = readModelIO(bytes);
  // Lanes share a session only for the same bytes: a file replaced under the same version gets its own.
  const shareKey = `${spec.name}/${spec.version}/sha256:${createHash('sha256').update(bytes).digest('hex')}`;
  // GE reports outputs in the ONNX graph's order, without names.
  const outputOrder = io.outputs.map((o) => o.name);
  // One static graph per gear (its index is its place in the list), else per tier.
  const tierDims = gears
    ? gears.gears.map((g) =>
        spec.inputs.map((i) => {
          const row = g.dims[i.name] ?? i.dims;
          return gears.batched ? [g.batch, ...row] : [...row];
        }),
      )
    : spec.batched
      ? batchTiers(
          spec.inputs.map((i) => i.dims),
          spec.tiers,
        )
      : [spec.inputs.map((i) => [...i.dims])];

  const { warnings } = initGe(globalOptions);
  let model: GeModel;
  try {
    model = GeModel.load({
      modelPath: spec.modelPath,
      deviceId: spec.deviceId,
      streams: 1,
      inputs: spec.inputs.map((i) => ({ name: i.name, dataType: i.dataType })),
      tiers: tierDims,
      sessionOptions: await withCompileCache(params.sessionOptions, globalOptions, spec.runtimeOptions?.geCompileCache),
      graphOptions: params.graphOptions,
      shareKey,
    });
  } catch (err) {
    finalizeGe();
    throw new MeshError(
      'INTERNAL',
      `model '${spec.name}' failed to load on GE device ${spec.deviceId}: ${(err as Error).message}`,
    );
  }
  logGeLoad({
    model: spec.name,
    version: spec.version,
    device: spec.deviceId,
    lane: spec.stream,
    tiers: spec.tiers,
    ...(gears ? { gears: gears.gears.length } : {}),
    precision: model.precision,
    sessionLoads: model.sessionLoads,
  });
  const loadWarnings = [...warnings, ...model.warnings];
  const tierIndex = new Map(spec.tiers.map((t, i) => [t, i]));
  const outputs = tierDims.map((_, i) => model.allocateOutputs(i));

  return {
    warnings: loadWarnings,
    async run(tier, inputs, gear) {
      const idx = gears ? gear : spec.batched ? tierIndex.get(tier) : 0;
      const outs = idx === undefined ? undefined : outputs[idx];
      if (idx === undefined || !outs) {
        const what = gears ? `gear ${gear}` : `tier ${tier}`;
        throw new MeshError('INTERNAL', `model '${spec.name}' has no graph for ${what}`);
      }
      const ins = spec.inputs.map((s) => {
        const t = inputs.get(s.name);
        if (!t) throw new MeshError('INTERNAL', `batch has no input '${s.name}'`);
        return t.data;
      });
      try {
        model.run(0, idx, ins, outs);
      } catch (err) {
        throw new MeshError('EXECUTION_FAILED', `GE failed to run '${spec.name}': ${(err as Error).message}`);
      }
      const info = model.outputInfo(idx);
      const out = new Map<string, EngineTensor>();
      outputOrder.forEach((name, i) => {
        const data = outs[i];
        const dims = info[i]?.dims;
        if (data && dims) out.set(name, { data: data.subarray(0, info[i]?.byteSize), shape: dims });
      });
      return out;
    },
    async close() {
      model.destroy();
      finalizeGe();
    },
  };
}
