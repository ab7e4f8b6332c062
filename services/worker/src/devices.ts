import { readdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';

/** Lease kind of a runtime's devices: NPUs for ge, CPU shares for ort. */
export function deviceKind(runtime: string): 'npu' | 'cpu' {
  return runtime === 'ge' ? 'npu' : 'cpu';
}

/**
 * Devices of this runtime on the machine, when not given:
 * - ge: the ids ASCEND_RT_VISIBLE_DEVICES exposes (CANN renumbers them
 *   0..n-1), else the /dev/davinci<N> nodes of the NPU driver, else the CANN
 *   simulator's GEMESH_SIM_DEVICES (default 2, as the simulator's);
 * - ort: one CPU device per core.
 */
export function detectDeviceCount(runtime: string, env: NodeJS.ProcessEnv = process.env): number {
  if (deviceKind(runtime) === 'cpu') return availableParallelism();
  const visible = env.ASCEND_RT_VISIBLE_DEVICES?.trim();
  if (visible) return visible.split(',').filter((s) => s.trim() !== '').length;
  let nodes = 0;
  try {
    nodes = readdirSync('/dev').filter((f) => /^davinci[0-9]+$/.test(f)).length;
  } catch {
    // No /dev listing: fall through to the simulator's count.
  }
  if (nodes > 0) return nodes;
  const sim = Number(env.GEMESH_SIM_DEVICES ?? 2);
  return Number.isInteger(sim) && sim > 0 ? sim : 2;
}

/** Explicit device ids from the settings, or null to lease free ones. */
export function explicitDevices(deviceIds: string, deviceId: number): number[] | null {
  if (deviceIds !== '') return [...new Set(deviceIds.split(',').map(Number))];
  return deviceId >= 0 ? [deviceId] : null;
}
