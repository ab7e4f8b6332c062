import { deviceMemory, finalizeGe, initGe } from '@ge-mesh/ge-bridge';

/**
 * Used and total memory of GE devices, for metrics. Call it only while a
 * model is loaded: GE's init is reference-counted and its first caller's
 * options win, so this takes a reference the lanes already hold and drops
 * it again, and never initialises GE with options of its own.
 */
export function readDeviceMemory(
  devices: readonly number[],
): { device: number; usedBytes: number; totalBytes: number }[] {
  initGe();
  try {
    return devices.map((device) => {
      const m = deviceMemory(device);
      return { device, usedBytes: m.totalBytes - m.freeBytes, totalBytes: m.totalBytes };
    });
  } finally {
    finalizeGe();
  }
}
