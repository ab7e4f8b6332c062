import { randomUUID } from 'node:crypto';
import type { Broker, Channel, ConsumeMessage, Topology } from '@ge-mesh/broker';
import type { RepositoryModel } from '@ge-mesh/model-repository';
import {
  type BatchMessage,
  decode,
  encode,
  type InferRequestMessage,
  type InferResponseMessage,
  PROTOCOL_VERSION,
  TRITON_MESSAGES,
  type WireError,
} from '@ge-mesh/protocol';
import type { BatchStore } from '@ge-mesh/store';
import type { Logger } from '@ge-mesh/telemetry';
import { type Decision, decide } from './batch-policy.js';

interface Pending {
  readonly msg: ConsumeMessage;
  readonly req: InferRequestMessage;
  readonly rows: number;
  readonly shapeKey: string;
  readonly enqueuedAt: number;
}

export interface ModelBatcherOptions {
  stagedBatches: number;
}

/**
 * Batches the requests of one model. Requests stay unacked in the broker
 * until the batch that carries them is confirmed on the batch queue, so a
 * crash at any point loses nothing: unacked requests are redelivered.
 */
export class ModelBatcher {
  private readonly pending: Pending[] = [];
  private ch?: Channel;
  private consumerTag?: string;
  private evaluating = false;
  private again = false;
  private timer?: NodeJS.Timeout;
  private dispatching = 0;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly batched: boolean;
  private readonly tiers: readonly number[];
  private readonly delayUs: number;

  constructor(
    readonly model: RepositoryModel,
    private readonly broker: Broker,
    private readonly store: BatchStore,
    private readonly topo: Topology,
    private readonly opts: ModelBatcherOptions,
    private readonly log: Logger,
  ) {
    this.batched = model.config.maxBatchSize > 0;
    this.tiers = model.config.tiers;
    this.delayUs = model.config.dynamicBatching?.maxQueueDelayMicroseconds ?? 0;
  }

  async start(): Promise<void> {
    const maxTier = this.tiers[this.tiers.length - 1] ?? 1;
    // Enough unacked requests to fill the largest tier several times over, and no more:
    // the rest wait in the broker, where other batcher replicas can take them.
    const ch = await this.broker.channel(Math.max(32, maxTier * 4));
    this.ch = ch;
    await this.broker.assertWorkQueue(ch, this.topo.requests(this.model.name));
    await this.broker.assertWorkQueue(ch, this.topo.batches(this.model.name));
    this.consumerTag = await this.broker.consume(ch, this.topo.requests(this.model.name), (msg) => this.onRequest(msg));
  }

  private onRequest(msg: ConsumeMessage): void {
    let req: InferRequestMessage;
    try {
      req = decode<InferRequestMessage>(msg.content);
    } catch (err) {
      // Not ours to answer (no reply route can be read): dead-letter it.
      this.log.error({ err }, 'undecodable request dead-lettered');
      this.ch?.nack(msg, false, false);
      return;
    }
    const rows = this.batched ? req.batch : 1;
    const shapeKey = req.inputs
      .map((t) => `${t.name}:${t.datatype}:${(this.batched ? t.shape.slice(1) : t.shape).join('x')}`)
      .sort()
      .join('|');
    this.pending.push({ msg, req, rows, shapeKey, enqueuedAt: req.acceptedAt });
    this.schedule();
  }

  private schedule(): void {
    if (this.evaluating) {
      this.again = true;
      return;
    }
    void this.evaluate();
  }

  private async evaluate(): Promise<void> {
    this.evaluating = true;
    clearTimeout(this.timer);
    try {
      do {
        this.again = false;
        this.dropExpired(Date.now());
        if (this.pending.length === 0) break;
        const laneFree = await this.laneFree();
        const d: Decision = decide({
          pending: this.pending,
          tiers: this.tiers,
          maxQueueDelayUs: this.delayUs,
          now: Date.now(),
          laneFree,
        });
        if (d.kind === 'send') {
          const members = this.pending.splice(0, d.take);
          this.track(this.dispatch(members, d.tier, d.rows));
          this.again = true;
        } else {
          // Wake at the delay, or poll for a free lane while requests wait.
          const wait = d.until === null ? 2 : Math.max(0, d.until - Date.now());
          this.timer = setTimeout(() => this.schedule(), wait);
        }
      } while (this.again && this.ch);
    } catch (err) {
      this.log.error({ err, model: this.model.name }, 'batch evaluation failed');
      this.timer = setTimeout(() => this.schedule(), 50);
    } finally {
      this.evaluating = false;
    }
  }

  private async laneFree(): Promise<boolean> {
    if (!this.ch) return false;
    const { messageCount } = await this.ch.checkQueue(this.topo.batches(this.model.name));
    return messageCount + this.dispatching < this.opts.stagedBatches;
  }

  private dropExpired(now: number): void {
    for (let i = this.pending.length - 1; i >= 0; i--) {
      const p = this.pending[i];
      if (p && p.req.deadline <= now) {
        this.pending.splice(i, 1);
        this.track(this.answerError(p, { code: 'TIMEOUT', message: TRITON_MESSAGES.timeout }));
      }
    }
  }

  private track(p: Promise<void>): void {
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p));
  }

  private async answerError(p: Pending, error: WireError): Promise<void> {
    const res: InferResponseMessage = {
      v: PROTOCOL_VERSION,
      id: p.req.id,
      correlationId: p.req.correlationId,
      model: p.req.model,
      version: p.req.version,
      error,
    };
    try {
      await this.broker.send(p.req.replyTo, encode(res), { correlationId: p.req.correlationId });
      this.ch?.ack(p.msg);
    } catch (err) {
      this.log.error({ err }, 'could not answer an expired request; it will be redelivered');
      this.ch?.nack(p.msg, false, true);
    }
  }

  private async dispatch(members: Pending[], tier: number, rows: number): Promise<void> {
    this.dispatching++;
    const batchId = randomUUID();
    try {
      const claim = await this.store.createBatch({
        batchId,
        model: this.model.name,
        version: members[0]?.req.version ?? '',
        tier,
        rows,
        members: members.map((m) => ({
          id: m.req.id,
          rows: m.rows,
          replyTo: m.req.replyTo,
          correlationId: m.req.correlationId,
          deadline: m.req.deadline,
        })),
      });
      if (!claim.ok) {
        // Already carried by a batch formed before a redelivery: ack the copies, batch the rest.
        const taken = new Set(claim.ok === false && claim.reason === 'claimed' ? claim.claimedIds : []);
        for (const m of members) if (taken.has(m.req.id)) this.ch?.ack(m.msg);
        const rest = members.filter((m) => !taken.has(m.req.id));
        this.pending.unshift(...rest);
        this.log.warn({ batchId, duplicates: taken.size }, 'dropped requests already batched');
        return;
      }
      const body: BatchMessage = {
        v: PROTOCOL_VERSION,
        batchId,
        model: this.model.name,
        version: members[0]?.req.version ?? '',
        tier,
        rows,
        members: members.map((m) => ({ id: m.req.id, rows: m.rows, body: m.msg.content })),
        formedAt: Date.now(),
      };
      await this.broker.send(this.topo.batches(this.model.name), encode(body), {
        persistent: true,
        messageId: batchId,
      });
      await this.store.setState(batchId, 'formed', 'published');
      for (const m of members) this.ch?.ack(m.msg);
      this.log.debug({ batchId, tier, rows, requests: members.length }, 'batch published');
    } catch (err) {
      this.log.error({ err, batchId }, 'batch not published; its requests go back to the queue');
      for (const m of members) this.ch?.nack(m.msg, false, true);
    } finally {
      this.dispatching--;
      this.schedule();
    }
  }

  async stop(): Promise<void> {
    if (this.ch && this.consumerTag) await this.ch.cancel(this.consumerTag).catch(() => undefined);
    clearTimeout(this.timer);
    await Promise.allSettled([...this.inFlight]);
    // Requests still pending were never acked: closing the channel requeues them.
    await this.ch?.close().catch(() => undefined);
    this.ch = undefined;
  }
}
