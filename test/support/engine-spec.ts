import { availableParallelism } from 'node:os';
import type { RepositoryModel } from '@ge-mesh/model-repository';
import type { EngineModelSpec } from '@ge-mesh/runtime';

/**
 * One lane's EngineModelSpec for a model's first version, as benchmarks and
 * tests run an engine without a worker: every core, stream 0 on device 0,
 * the config's tiers and parameters unless `o` says otherwise.
 */
export function engineSpecOf(model: RepositoryModel, o: Partial<EngineModelSpec> = {}): EngineModelSpec {
  const version = model.versions[0];
  if (!version) throw new Error(`${model.name} has no version`);
  return {
    name: model.name,
    version: version.version,
    modelPath: version.modelPath,
    inputs: model.config.input,
    outputs: model.config.output,
    tiers: model.config.tiers,
    batched: model.config.maxBatchSize > 0,
    parameters: Object.fromEntries(model.config.parameters),
    threads: availableParallelism(),
    stream: 0,
    deviceId: 0,
    ...o,
  };
}
