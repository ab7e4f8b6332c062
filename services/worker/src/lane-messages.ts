import type { LaneStages, ReplyGroup, StoredRequests } from './execute-batch.js';

/** main thread → lane */
export type LaneRequest = { type: 'run'; seq: number; batch: Uint8Array; stored?: StoredRequests } | { type: 'close' };

/** lane → main thread */
export type LaneResponse =
  | { type: 'ready' }
  | { type: 'failed'; message: string }
  | { type: 'done'; seq: number; replies: ReplyGroup[]; stages: LaneStages };
