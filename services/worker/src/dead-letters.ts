import { type Broker, type Channel, type ConsumeMessage, DEFAULT_DELIVERY_LIMIT, type Topology } from '@ge-mesh/broker';
import {
  type BatchMessage,
  decode,
  decodeBatch,
  type InferRequestMessage,
  isRequestBundle,
  memberRequests,
  type RequestBundleMessage,
  versionMismatch,
  type WireError,
} from '@ge-mesh/protocol';
import type { BatchStore } from '@ge-mesh/store';
import type { Logger } from '@ge-mesh/telemetry';
import { sendErrorReply } from './execute-batch.js';

/**
 * Consumes the namespace's dead-letter queue: a batch (or a request) that
 * the broker dead-lettered after the delivery limit, because every worker
 * (or batcher) that took it crashed or gave it back. Each request it carried
 * is answered once with POISON_INPUT, the batch is marked failed in Redis
 * (which frees its lane slot), and the dead letter is acked: it never goes
 * round again. Workers share the queue as competing consumers.
 */
export class DeadLetters {
  private ch?: Channel;
  private tag?: string;
  inflight = 0;

  constructor(
    private readonly broker: Broker,
    private readonly topo: Topology,
    private readonly store: BatchStore,
    private readonly log: Logger,
    /** Told of every dead letter taken off the queue (metrics). */
    private readonly counted?: (kind: 'batch' | 'request' | 'unknown', reason: string) => void,
  ) {}

  async start(): Promise<void> {
    const ch = await this.broker.channel(8);
    this.ch = ch;
    // Declared as Broker.assertWorkQueue declares them, so the first service up creates them.
    await ch.assertExchange(this.topo.deadLetterExchange, 'fanout', { durable: true });
    await ch.assertQueue(this.topo.deadLetterQueue, { durable: true });
    await ch.bindQueue(this.topo.deadLetterQueue, this.topo.deadLetterExchange, '');
    this.tag = await this.broker.consume(ch, this.topo.deadLetterQueue, (msg) => void this.onDeadLetter(ch, msg));
  }

  async stop(): Promise<void> {
    if (this.ch && this.tag) await this.ch.cancel(this.tag).catch(() => undefined);
    this.tag = undefined;
  }

  private async onDeadLetter(ch: Channel, msg: ConsumeMessage): Promise<void> {
    this.inflight++;
    const headers = msg.properties.headers ?? {};
    const queue = String(headers['x-first-death-queue'] ?? '');
    const reason = String(headers['x-first-death-reason'] ?? 'unknown');
    const kind = this.topo.isBatchQueue(queue) ? 'batch' : this.topo.isRequestQueue(queue) ? 'request' : 'unknown';
    if (!msg.fields.redelivered) this.counted?.(kind, reason);
    try {
      if (this.topo.isBatchQueue(queue)) await this.failBatch(msg, reason);
      else if (this.topo.isRequestQueue(queue)) await this.failRequest(msg, reason);
      else this.log.warn({ queue, reason }, 'dead letter from an unknown queue dropped');
      ch.ack(msg);
    } catch (err) {
      // Only a broker or Redis fault lands here; the dead letter waits for another try.
      this.log.error({ err, queue }, 'dead letter not answered; returned to its queue');
      setTimeout(() => {
        try {
          ch.nack(msg, false, true);
        } catch {
          // Channel gone: the broker requeued it already.
        }
      }, 1_000);
    } finally {
      this.inflight--;
    }
  }

  private error(kind: string, reason: string): WireError {
    const why =
      reason === 'delivery_limit' || reason === 'rejected'
        ? `after the delivery limit of ${DEFAULT_DELIVERY_LIMIT} redeliveries: every worker that ran it crashed or gave it back`
        : `(${reason})`;
    return { code: 'POISON_INPUT', message: `the ${kind} carrying this request was dead-lettered ${why}` };
  }

  private async failBatch(msg: ConsumeMessage, reason: string): Promise<void> {
    let batch: BatchMessage;
    try {
      batch = decodeBatch(msg.content);
    } catch (err) {
      this.log.error({ err: (err as Error).message }, 'undecodable dead batch dropped: nobody to answer');
      return;
    }
    // The members this batch still answers (another batch may have taken some over); none when
    // it was answered before (a redelivered dead letter).
    const answered = await this.store.failBatch(
      batch.batchId,
      batch.model,
      batch.members.map((m) => m.id),
    );
    if (!answered) return;
    const error = versionMismatch(batch.v, 'batch') ?? this.error('batch', reason);
    for (const req of memberRequests(batch, answered)) {
      sendErrorReply(this.broker, req, error);
    }
    this.log.error(
      { batchId: batch.batchId, model: batch.model, reason, requests: answered.length },
      'dead-lettered batch: its requests were answered with POISON_INPUT',
    );
  }

  private async failRequest(msg: ConsumeMessage, reason: string): Promise<void> {
    let d: InferRequestMessage | RequestBundleMessage;
    try {
      d = decode<InferRequestMessage | RequestBundleMessage>(msg.content);
    } catch (err) {
      this.dropped(err);
      return;
    }
    // A bundle's members are answered one by one: some may be batched already.
    const reqs = isRequestBundle(d)
      ? d.requests.map((body) => this.readRequest(() => decode(body)))
      : [this.readRequest(() => d)];
    for (const req of reqs) if (req) await this.failOneRequest(req, reason);
  }

  /** A dead request as decoded, or undefined (logged) when it is not one: nobody to answer. */
  private readRequest(read: () => unknown): InferRequestMessage | undefined {
    try {
      const req = read() as InferRequestMessage;
      if (typeof req?.replyTo !== 'string' || typeof req.id !== 'string') throw new Error('not a request');
      return req;
    } catch (err) {
      this.dropped(err);
      return undefined;
    }
  }

  private dropped(err: unknown): void {
    this.log.error({ err: (err as Error).message }, 'undecodable dead request dropped: nobody to answer');
  }

  private async failOneRequest(req: InferRequestMessage, reason: string): Promise<void> {
    // Marks it answered so a copy still on its way is dropped; false: a batch carries it or it was answered.
    if (!(await this.store.expireRequest(req.id, req.model, 'poison', { deadline: req.deadline }))) return;
    sendErrorReply(this.broker, req, this.error('request', reason));
    this.log.error({ id: req.id, model: req.model, reason }, 'dead-lettered request answered with POISON_INPUT');
  }
}
