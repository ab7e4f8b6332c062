import type { DynamicBatchingConfig, ModelConfig, TensorConfig } from '@ge-mesh/model-repository';
import type { DataType } from '@ge-mesh/protocol';

/** Hand-built configs for tests that exercise request handling without a config file. */
export function tensorConfig(name: string, dataType: DataType, dims: number[], optional = false): TensorConfig {
  return { name, dataType, dims, optional };
}

export function modelConfig(
  maxBatchSize: number,
  input: TensorConfig[],
  output: TensorConfig[] = [tensorConfig('y', 'FP32', [-1])],
  dynamicBatching?: DynamicBatchingConfig,
): ModelConfig {
  return {
    name: 'm',
    platform: 'onnxruntime_onnx',
    backend: 'onnxruntime',
    runtime: 'ort',
    maxBatchSize,
    input,
    output,
    instanceGroup: [],
    ...(dynamicBatching ? { dynamicBatching } : {}),
    tiers: maxBatchSize > 0 ? [maxBatchSize] : [1],
    defaultModelFilename: 'model.onnx',
    parameters: new Map(),
    raw: {},
  };
}
