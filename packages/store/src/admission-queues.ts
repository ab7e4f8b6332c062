import type { RedisConnection } from './connect.js';
import type { ScriptName, ScriptRunner } from './scripts.js';

/**
 * Triton's max_queue_size counted across every gateway and batcher: one
 * zset per model and priority level (ModelKeys.queueKey) of the requests
 * admitted and not yet batched or answered, each scored by its deadline so
 * an entry nobody removes lapses with it.
 */
export class AdmissionQueues {
  constructor(
    private readonly redis: RedisConnection,
    private readonly scripts: Record<ScriptName, ScriptRunner>,
  ) {}

  /** Admit a request to a level's queue unless it holds `maxQueueSize` already; exact across processes. */
  async admit(
    queueKey: string,
    requestId: string,
    deadline: number,
    maxQueueSize: number,
    now = Date.now(),
  ): Promise<{ admitted: boolean; size: number }> {
    const res = (await this.scripts['admit-request']([queueKey], [requestId, deadline, now, maxQueueSize])) as [
      number,
      number,
    ];
    return { admitted: res[0] === 1, size: res[1] };
  }

  /** Take requests out of a level's queue that will never reach a batcher. */
  async leave(queueKey: string, requestIds: readonly string[]): Promise<number> {
    if (requestIds.length === 0) return 0;
    return (await this.scripts['leave-queue']([queueKey], [...requestIds])) as number;
  }

  /** Requests counted in a level's queue now (lapsed entries excluded). */
  async size(queueKey: string, now = Date.now()): Promise<number> {
    return this.redis.zcount(queueKey, `(${now}`, '+inf');
  }
}
