import type { ModelConfig, PlacementParameters } from '@ge-mesh/model-repository';

/**
 * Where a model runs on a worker and with how many lanes, by the GE backend's
 * rules, for every runtime (a CPU worker is a device too):
 * - `device_ids` in the model's parameters lists the devices that may load
 *   it (default: every device of the machine);
 * - lanes (streams) per device = `device_exec_blocks` when set, else
 *   ceil(Σ instance_group.count × instance_exec_blocks / #devices that may
 *   load it).
 */
export interface Placement {
  /** Devices of this worker that load the model (may be empty). */
  readonly devices: readonly number[];
  readonly lanesPerDevice: number;
}

/** The device keys of a config, checked when it was loaded (model-repository's parsePlacementParameters). */
export function deviceParameters(config: ModelConfig): PlacementParameters {
  return config.placement ?? DEFAULT_PLACEMENT;
}

const DEFAULT_PLACEMENT: PlacementParameters = { instanceExecBlocks: 1 };

/**
 * Placement of a model on a worker holding `held` devices of a machine with
 * `deviceCount` devices (ids 0..deviceCount-1).
 */
export function placeModel(config: ModelConfig, held: readonly number[], deviceCount: number): Placement {
  const p = deviceParameters(config);
  const allowed = p.deviceIds ?? Array.from({ length: Math.max(deviceCount, ...held.map((d) => d + 1)) }, (_, i) => i);
  const devices = held.filter((d) => allowed.includes(d));
  const count = Math.max(
    1,
    config.instanceGroup.reduce((n, g) => n + g.count, 0),
  );
  const lanesPerDevice = p.deviceExecBlocks ?? Math.ceil((count * p.instanceExecBlocks) / Math.max(1, allowed.length));
  return { devices, lanesPerDevice };
}

/**
 * CPU cores this worker may use: the flag, else its share of the machine's
 * cores (cores × devices held / devices of the machine), at least one.
 */
export function coreBudget(cpuThreads: number, cores: number, held: number, deviceCount: number): number {
  if (cpuThreads > 0) return cpuThreads;
  return Math.max(1, Math.floor((cores * held) / Math.max(1, deviceCount)));
}

/** Intra-op threads per lane so that lanes × threads fits the cores (at least one each). */
export function threadsPerLane(cores: number, totalLanes: number): number {
  return Math.max(1, Math.floor(cores / Math.max(1, totalLanes)));
}
