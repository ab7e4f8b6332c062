import type { loadModel } from '@ge-mesh/model-repository';

type LoadedModel = Awaited<ReturnType<typeof loadModel>>;

/**
 * The KServe v2 model metadata body the benchmark's stand-in servers (the
 * naive server, the shape's floor) answer, as JSON: what the load generator
 * reads to build its requests. A batched model's first dim is -1.
 */
export function modelMetadataJson(model: LoadedModel, version: string): string {
  const batched = model.config.maxBatchSize > 0;
  const tensor = (t: { name: string; dataType: string; dims: readonly number[] }) => ({
    name: t.name,
    datatype: t.dataType,
    shape: [...(batched ? [-1] : []), ...t.dims],
  });
  return JSON.stringify({
    name: model.name,
    versions: [version],
    platform: model.config.platform,
    inputs: model.config.input.map(tensor),
    outputs: model.config.output.map(tensor),
  });
}
