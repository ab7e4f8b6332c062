import type { RepositoryModel, TensorConfig } from '@ge-mesh/model-repository';

/**
 * The platform Triton reports: `platform`, completed to "onnxruntime_onnx"
 * for the onnxruntime backend as Triton's loader does, else the backend.
 */
export function tritonPlatform(model: RepositoryModel): string {
  const raw = model.config.raw.platform;
  if (typeof raw === 'string' && raw !== '') return raw;
  return model.config.runtime === 'ort' ? 'onnxruntime_onnx' : model.config.backend;
}

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
    platform: tritonPlatform(model),
    inputs: model.config.input.map(tensor),
    outputs: model.config.output.map(tensor),
  };
}
