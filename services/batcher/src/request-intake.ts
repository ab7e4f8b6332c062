import { randomUUID } from 'node:crypto';
import type { Broker, Channel, ConsumeMessage } from '@ge-mesh/broker';
import type { BatchStore } from '@ge-mesh/store';
import type { Logger } from '@ge-mesh/telemetry';

/** Lead of a preserve_ordering model: held this long, renewed every fifth of it. */
const LEAD_TTL_MS = 5_000;

export interface RequestIntakeOptions {
  readonly model: string;
  /** The model's request queue. */
  readonly queue: string;
  /** preserve_ordering: take requests only while this batcher leads the model. */
  readonly leadOnly: boolean;
  /** How many unacked requests to hold (read on every consume and resize). */
  readonly wantedPrefetch: () => number;
  readonly onRequest: (ch: Channel, msg: ConsumeMessage) => void;
  /** The lead was lost: stop taking requests and give back those held. */
  readonly onLeadLost: () => Promise<void>;
}

/**
 * How a model's requests reach its batcher: the consumer on the request
 * queue with a prefetch sized to the batches that may be in flight, and for
 * preserve_ordering models the lead in Redis that lets one batcher at a time
 * consume. Forming batches from what arrives is the batcher's.
 */
export class RequestIntake {
  private ch?: Channel;
  private consumerTag?: string;
  private prefetch = 0;
  private resizing = false;
  private stopped = false;
  private leadTimer?: NodeJS.Timeout;
  private readonly token = randomUUID();

  constructor(
    private readonly broker: Broker,
    private readonly store: BatchStore,
    private readonly o: RequestIntakeOptions,
    private readonly log: Logger,
  ) {}

  /** The channel requests arrive on (undefined while not consuming). */
  get channel(): Channel | undefined {
    return this.ch;
  }

  /** After (re)connecting: consume, or, for a lead-only model, leave it to the lead; nothing once stopped. */
  async connected(): Promise<void> {
    if (!this.o.leadOnly && !this.stopped) await this.consume();
  }

  /** Starts the lead loop of a lead-only model (a no-op for the others). */
  async start(): Promise<void> {
    if (this.o.leadOnly) await this.leadOrStandBy();
  }

  /** The connection was lost: its channel and deliveries are void (the broker requeues them). */
  lost(): void {
    this.ch = undefined;
    this.consumerTag = undefined;
  }

  private async consume(): Promise<void> {
    this.prefetch = this.o.wantedPrefetch();
    const ch = await this.broker.channel(this.prefetch);
    this.ch = ch;
    this.consumerTag = await this.broker.consume(ch, this.o.queue, (msg) => this.o.onRequest(ch, msg), {
      coalesceAcks: true,
    });
  }

  /** A new consumer with the new prefetch; deliveries held by the old one stay unacked on the channel. */
  async resizePrefetch(): Promise<void> {
    const wanted = this.o.wantedPrefetch();
    if (!this.ch || !this.consumerTag || this.resizing || this.stopped || wanted === this.prefetch) return;
    this.resizing = true;
    try {
      const ch = this.ch;
      await ch.cancel(this.consumerTag);
      await ch.prefetch(wanted);
      this.prefetch = wanted;
      this.consumerTag = await this.broker.consume(ch, this.o.queue, (m) => this.o.onRequest(ch, m), {
        coalesceAcks: true,
      });
      this.log.debug({ model: this.o.model, prefetch: wanted }, 'prefetch resized');
    } catch (err) {
      this.log.error({ err, model: this.o.model }, 'prefetch not resized');
    } finally {
      this.resizing = false;
    }
  }

  /** preserve_ordering: one batcher at a time takes the model's requests; the others stand by. */
  private async leadOrStandBy(): Promise<void> {
    const tick = async () => {
      if (this.stopped) return;
      try {
        const leading = await this.store.leads.take(this.o.model, this.token, LEAD_TTL_MS);
        if (leading && !this.ch) {
          this.log.info({ model: this.o.model }, 'leading (preserve_ordering)');
          await this.consume();
        } else if (!leading && this.ch) {
          // Lost the lead (e.g. stalled past its TTL): stop taking requests; held ones go back.
          this.log.warn({ model: this.o.model }, 'lead lost; standing by');
          await this.o.onLeadLost();
        }
      } catch (err) {
        this.log.warn({ err: (err as Error).message, model: this.o.model }, 'lead not renewed');
      }
      if (!this.stopped) this.leadTimer = setTimeout(() => void tick(), LEAD_TTL_MS / 5);
    };
    await tick();
  }

  /** Stop the consumer (basic.cancel): deliveries in hand stay on the channel until `close`. */
  async cancel(): Promise<void> {
    if (this.ch && this.consumerTag) await this.ch.cancel(this.consumerTag).catch(() => undefined);
    this.consumerTag = undefined;
  }

  /** Close the channel: every delivery still unacked goes back to the queue. */
  async close(): Promise<void> {
    const ch = this.ch;
    this.ch = undefined;
    if (ch) await this.broker.closeChannel(ch).catch(() => undefined);
  }

  /** No more consuming or leading (see `resign` for a lead held). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.leadTimer);
  }

  /** Gives up the lead (after `close`, so the next leader finds the requests back in the queue). */
  async resign(): Promise<void> {
    if (this.o.leadOnly) await this.store.leads.take(this.o.model, this.token, 0).catch(() => false);
  }
}
