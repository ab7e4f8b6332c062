import type { ModelConfig } from '@ge-mesh/model-repository';
import { MeshError, TRITON_MESSAGES } from '@ge-mesh/protocol';
import { type BatchStore, levelPolicy } from '@ge-mesh/store';

/**
 * Triton's `max_queue_size`, exact across every gateway of the mesh: a
 * request joins its model's queue at its priority level (a Redis zset that
 * the batchers empty as they batch or answer requests) or is refused at once
 * with 503 "Exceeds maximum queue size". Levels without a limit cost no
 * round trip.
 */
export class Admission {
  constructor(private readonly store: BatchStore) {}

  /**
   * Admit the request or throw QUEUE_FULL. Returns what to call when the
   * request then never reaches its queue (its publish failed); entries of
   * requests that are lost otherwise stop counting at their deadline.
   */
  async admit(config: ModelConfig, requestId: string, level: number, deadline: number): Promise<() => Promise<void>> {
    const max = config.dynamicBatching ? levelPolicy(config.dynamicBatching, level).maxQueueSize : 0;
    if (max <= 0) return async () => undefined;
    const key = this.store.queueKey(config.name, level);
    let admitted: boolean;
    try {
      ({ admitted } = await this.store.queues.admit(key, requestId, deadline, max));
    } catch {
      throw new MeshError('UNAVAILABLE', 'the queue of this model cannot be checked now; try again');
    }
    if (!admitted) throw new MeshError('QUEUE_FULL', TRITON_MESSAGES.queueFull);
    return async () => {
      await this.store.queues.leave(key, [requestId]).catch(() => 0);
    };
  }

  async close(): Promise<void> {
    await this.store.close();
  }
}
