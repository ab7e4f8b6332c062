import type { RepositoryModel, TensorConfig } from '@ge-mesh/model-repository';

/** Triton's model metadata: the batch dim shows as -1 when max_batch_size > 0. */
export function modelMetadata(model: RepositoryModel, versions: string[]) {
  const batched = model.config.maxBatchSize > 0;
  const tensor = (t: TensorConfig) => ({
    name: t.name,
    datatype: t.dataType,
    shape: batched ? [-1, ...t.dims] : [...t.dims],
  });
  return {
    name: model.name,
    versions,
    platform: model.config.platform,
    inputs: model.config.input.map(tensor),
    outputs: model.config.output.map(tensor),
  };
}
