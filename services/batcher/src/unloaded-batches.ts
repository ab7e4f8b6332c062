import type { Broker } from '@ge-mesh/broker';
import { type BatchMessage, decodeBatch, type InferRequestMessage, memberRequests } from '@ge-mesh/protocol';
import type { BatchStore } from '@ge-mesh/store';
import type { Logger } from '@ge-mesh/telemetry';

/**
 * Batches of an unloaded model that still wait in its batch queue. The
 * workers stop consuming it when told of the unload, and the batchers are
 * told at the same moment, so a batch published in between is taken by no
 * one. Once this batcher publishes nothing more, it takes every batch left
 * in the queue off it and answers their members with `error`, as the
 * requests still queued are answered. fail-batch makes each answer once: a
 * worker that got the batch first runs it, one that gets a copy later skips it.
 */
export async function refuseUnloadedBatches(
  deps: { broker: Broker; store: BatchStore; log: Logger },
  queue: string,
  refuse: (req: InferRequestMessage) => void,
): Promise<void> {
  const { broker, store, log } = deps;
  // A channel of its own: a failed get closes the channel it runs on.
  const ch = await broker.channel();
  try {
    for (let msg = await ch.get(queue); msg; msg = await ch.get(queue)) {
      let batch: BatchMessage;
      try {
        batch = decodeBatch(msg.content);
      } catch (err) {
        log.error({ err: (err as Error).message, queue }, 'undecodable batch dead-lettered');
        ch.nack(msg, false, false);
        continue;
      }
      try {
        const members = await store.failBatch(
          batch.batchId,
          batch.model,
          batch.members.map((m) => m.id),
        );
        for (const req of memberRequests(batch, members ?? [])) refuse(req);
        log.info(
          { model: batch.model, batchId: batch.batchId, requests: members?.length ?? 0 },
          'unloaded model: a batch no worker took was answered',
        );
      } catch (err) {
        // Redis is out of reach: the batch goes back to the queue, for a worker or the next sweep.
        ch.nack(msg, false, true);
        throw err;
      }
      ch.ack(msg);
    }
  } finally {
    await ch.close().catch(() => undefined);
  }
}
