import type { GePrecision } from '@ge-mesh/ge-bridge';
import { createLogger, type Logger } from '@ge-mesh/telemetry';

/**
 * A lane is a worker_thread with no logger of the worker's, so the line comes
 * from a logger of its own with the same service name, level and format
 * (GEMESH_LOG_LEVEL / GEMESH_LOG_FORMAT, which threads inherit).
 */
let log: Logger | undefined;

/**
 * One line per model load naming the precision GE compiles it with: with no
 * key in the config this is GE's own inference default (fp16), not fp32, so an
 * operator reading the log sees what the answers were computed at.
 */
export function logGeLoad(fields: {
  model: string;
  version: string;
  device: number;
  lane: number;
  tiers: readonly number[];
  /** Graphs compiled per gear (gears over non-batch dims), when the model has them. */
  gears?: number;
  precision: GePrecision;
  /** Lanes sharing the device's GE session (and its weights) once this one joined. */
  sessionLoads: number;
}): void {
  log ??= createLogger('worker');
  const { precision, ...rest } = fields;
  log.info(
    { ...rest, precision: `${precision.key}=${precision.value}`, precisionFrom: precision.source },
    precision.source === 'default'
      ? 'GE model loaded at precision_mode_v2=fp16 (GE inference default; no precision key in the config)'
      : 'GE model loaded',
  );
}
