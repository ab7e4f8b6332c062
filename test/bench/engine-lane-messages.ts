import type { EngineModelSpec } from '@ge-mesh/runtime';

/**
 * The messages between a benchmark lane (one worker_thread that owns one
 * engine, as a mesh worker's lane does) and the thread that feeds it.
 */
export type LaneRuntime = 'ort' | 'ge';

export interface LaneData {
  spec: EngineModelSpec;
  runtime: LaneRuntime;
}

export interface WireTensor {
  name: string;
  data: Uint8Array;
  shape: number[];
}

/** feeder → lane */
export type LaneIn =
  | { type: 'run'; seq: number; tier: number; inputs: WireTensor[] }
  /** Run the tier back to back inside the lane for `ms` (no messaging in the measured loop). */
  | { type: 'loop'; seq: number; tier: number; inputs: WireTensor[]; ms: number }
  | { type: 'close' };

/** lane → feeder */
export type LaneOut =
  | { type: 'ready' }
  | { type: 'failed'; message: string }
  | { type: 'done'; seq: number; outputs: WireTensor[] }
  | { type: 'looped'; seq: number; runs: number }
  | { type: 'error'; seq: number; code: string; message: string };
