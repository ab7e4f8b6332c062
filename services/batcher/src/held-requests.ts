import type { Broker, ConsumeMessage, Settlement } from '@ge-mesh/broker';
import type { GearClass } from '@ge-mesh/model-repository';
import { encode, errorResponse, type InferRequestMessage, type WireError } from '@ge-mesh/protocol';
import type { BatchStore } from '@ge-mesh/store';
import type { Logger } from '@ge-mesh/telemetry';
import type { Queued } from './pending-queue.js';

/** A request a batcher holds: its delivery (unacked until a batch carries it) and its decoded message. */
export interface Delivery {
  readonly msg: ConsumeMessage;
  readonly req: InferRequestMessage;
  /** When this batcher received it (high-resolution, ms since the epoch), or 0 when tracing is off. */
  readonly receivedAt: number;
  /** Models with gears over non-batch dims: the requests it may share a batch with, and their tiers. */
  readonly gearClass?: GearClass;
  /** A batch create-batch refused carries it too (see BatchPublisher.form): answer it only through its claim. */
  readonly orphaned?: true;
}

export type Pending = Queued<Delivery>;

/**
 * How a batcher settles the deliveries it holds and answers, with an error,
 * the requests no batch will carry: refused outright (no claim: they never
 * reach a batch), or expired in the queue (through their claim, once
 * mesh-wide).
 */
export class RequestAnswers {
  constructor(
    private readonly broker: Broker,
    private readonly store: BatchStore,
    private readonly model: string,
    /** Admission queue of each level with a max_queue_size (the gateway counts them). */
    private readonly queueKeys: ReadonlyMap<number, string>,
    private readonly log: Logger,
  ) {}

  /** On the delivery's own channel; a no-op once it is gone (the broker requeued the delivery). */
  settle(msg: ConsumeMessage, how: Settlement): void {
    this.broker.settle(msg, how);
  }

  /** The one answer to a request that fails before any batch carries it. */
  sendError(req: InferRequestMessage, error: WireError): void {
    this.broker.sendUnconfirmed(req.replyTo, encode(errorResponse(req, error)), { correlationId: req.correlationId });
  }

  /** Answer a request the batcher cannot batch at all (no claim: it never reaches a batch). */
  async refuse(msg: ConsumeMessage, req: InferRequestMessage, error: WireError): Promise<void> {
    try {
      this.sendError(req, error);
      this.settle(msg, 'ack');
    } catch (err) {
      this.log.error({ err, id: req.id }, 'could not refuse a request; dead-lettered');
      this.settle(msg, 'reject');
    }
  }

  /**
   * Answer a queued request with an error, once mesh-wide (a redelivered copy
   * is then dropped, and a batch that carries it skips it); `reason` marks
   * its claim.
   */
  async answerError(p: Pending, error: WireError, reason = 'timeout'): Promise<void> {
    const { msg, req } = p.item;
    try {
      if (
        !(await this.store.expireRequest(req.id, this.model, reason, {
          deadline: req.deadline,
          queueKey: this.queueKeys.get(p.level),
        }))
      ) {
        this.settle(msg, 'ack');
        return;
      }
      this.sendError(req, error);
      this.settle(msg, 'ack');
      this.log.debug(
        { model: this.model, id: req.id, code: error.code, heldMs: Date.now() - p.enqueuedAt },
        'request expired in the queue',
      );
    } catch (err) {
      this.log.error({ err, id: req.id }, 'could not answer an expired request');
      this.settle(msg, 'requeue');
    }
  }

  /**
   * Answer a held request on an unload: through its claim when a refused
   * early batch may still run it (the orphan and the unload never both
   * answer it), else outright.
   */
  unloaded(p: Pending, error: WireError): Promise<void> {
    return p.item.orphaned ? this.answerError(p, error, 'unloaded') : this.refuse(p.item.msg, p.item.req, error);
  }
}
