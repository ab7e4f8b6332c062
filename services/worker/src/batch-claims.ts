import { DEFAULT_DELIVERY_LIMIT } from '@ge-mesh/broker';
import { type BatchMessage, encode } from '@ge-mesh/protocol';
import type { BatchStore } from '@ge-mesh/store';
import type { Logger } from '@ge-mesh/telemetry';
import type { StoredRequests } from './execute-batch.js';

/** The batch body a worker runs and the ids of the members it answers. */
export interface Claimed {
  body: Buffer;
  ids: ReadonlySet<string>;
}

/**
 * The worker's part in the batch state kept in Redis (packages/store):
 * before running a batch it claims its members for good (start-batch), and
 * after publishing every reply it marks the batch done and frees its lane
 * slot, which wakes the model's batchers (finish-batch).
 *
 * A batcher that died after publishing a batch but before its publish was
 * confirmed leaves the batch in state 'formed'; the requests it carried are
 * redelivered and may be batched again. start-batch then says which members
 * this batch still answers, so no request is answered twice.
 */
export class BatchClaims {
  constructor(
    private readonly store: BatchStore,
    private readonly log: Logger,
  ) {}

  /**
   * The batch body to run: the one received, or a copy without the members
   * another batch took over (with the ids it answers); null when there is
   * nothing left to run; 'poison' when the batch was started past the
   * delivery limit (every worker that took it died): the caller dead-letters it.
   */
  async start(batch: BatchMessage, body: Buffer): Promise<Claimed | null | 'poison'> {
    const res = await this.store.startBatch(
      batch.batchId,
      batch.model,
      batch.members.map((m) => m.id),
      DEFAULT_DELIVERY_LIMIT + 1,
    );
    if (res.kind === 'done') {
      this.log.warn({ batchId: batch.batchId }, 'batch already answered; not run again');
      return null;
    }
    if (res.kind === 'poison') {
      this.log.error({ batchId: batch.batchId, starts: res.starts }, 'batch started past the delivery limit');
      return 'poison';
    }
    if (res.members.length === batch.members.length) return { body, ids: new Set(batch.members.map((m) => m.id)) };
    this.log.warn(
      { batchId: batch.batchId, kept: res.members.length, of: batch.members.length },
      'members taken over by another batch are skipped',
    );
    if (res.members.length === 0) return null;
    const members = res.members.map((i) => batch.members[i] as BatchMessage['members'][number]);
    const rows = members.reduce((n, m) => n + m.rows, 0);
    const bytes = members.reduce((n, m) => n + m.body.byteLength, 0);
    return {
      body: encode({ ...batch, members, rows } satisfies BatchMessage, bytes),
      ids: new Set(members.map((m) => m.id)),
    };
  }

  /**
   * The whole requests of the members that travelled beside the batch
   * (BatchMember.stored), read from Redis; undefined at once when none did
   * (the batch then goes to its lane in this tick).
   */
  storedRequests(batch: BatchMessage): Promise<StoredRequests> | undefined {
    const ids = batch.members.filter((m) => m.stored).map((m) => m.id);
    if (ids.length === 0) return undefined;
    return this.store
      .requestBodies(batch.model, ids)
      .then((bodies) => new Map(ids.map((id, i) => [id, bodies[i] ?? null])));
  }

  /**
   * The batch will not run (its model was unloaded while it ran): mark it
   * failed. The positions (0-based) of the members it still answers, to be
   * answered with an error; null when it was answered already.
   */
  fail(batch: BatchMessage): Promise<number[] | null> {
    return this.store.failBatch(
      batch.batchId,
      batch.model,
      batch.members.map((m) => m.id),
    );
  }

  /**
   * Every reply of the batch is published: mark it done and free its lane
   * slot. `ran`, the tier the lane ran and how long the run held it, feeds the
   * tier costs the batchers plan with (absent when the batch ran nothing).
   * The stored requests among `answered` are deleted (a member another batch
   * took over keeps its own for that batch).
   */
  async finish(batch: BatchMessage, ran?: { tier: number; ms: number }, answered?: ReadonlySet<string>): Promise<void> {
    const stored = batch.members.filter((m) => m.stored && answered?.has(m.id)).map((m) => m.id);
    await this.store.finishBatch(batch.batchId, batch.model, ran, stored).catch((err: Error) => {
      // The slot lapses with the members' deadlines; until then the model has one lane fewer.
      this.log.error({ err: err.message, batchId: batch.batchId }, 'batch not marked done');
    });
  }
}
