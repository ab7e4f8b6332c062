import { readFile } from 'node:fs/promises';
import { GearTraceError, type RepositoryModel, traceModelOutputDims } from '@ge-mesh/model-repository';
import type { EngineModelSpec } from '@ge-mesh/runtime';

/**
 * For a model with gears: which output dims its lanes cut back to a padded
 * request's own size, traced in this version's model file. A dim that cannot
 * be traced fails the load, naming the output and the parameter that states it.
 */
export async function gearOutputLinks(
  model: RepositoryModel,
  version: RepositoryModel['versions'][number],
): Promise<EngineModelSpec['outputLinks']> {
  const gears = model.config.gears;
  if (!gears) return undefined;
  try {
    return traceModelOutputDims(gears, new Uint8Array(await readFile(version.modelPath)), model.config.output);
  } catch (err) {
    const why = err instanceof GearTraceError ? err.message : `cannot read its outputs: ${(err as Error).message}`;
    throw new Error(`model '${model.name}' version ${version.version} (${version.modelPath}): ${why}`);
  }
}
