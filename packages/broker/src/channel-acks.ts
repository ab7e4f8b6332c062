import type { Channel, Message } from 'amqplib';

/**
 * Acks a channel's deliveries in as few frames as it can. The acks asked for
 * in one tick go out together at its end: the run of the channel's oldest
 * open deliveries, all acked now, as one `multiple` ack (basic.ack up to its
 * last tag), any others one by one. A batcher acks a batch's members at once
 * and, in FIFO order, they are the oldest it holds, so a batch costs one ack
 * frame instead of one per member; RabbitMQ spends about a third less CPU per
 * message so (publish, delivery and ack of a small message on a classic
 * queue: ~65 µs one by one, ~45 µs acked eight at a time, on two cores).
 *
 * A multiple ack covers every delivery up to its tag, so it is sent only
 * when each of them was acked here or is settled already: every delivery on
 * the channel must be registered (`delivered`) and settled through this
 * class. Nacks go out at once; a later multiple ack passing over a nacked tag
 * is harmless, the broker holds it no more. amqplib leaves this bookkeeping
 * to the consumer, hence this module.
 */
export class ChannelAcks {
  /** Delivery tags received and not settled, in delivery order (a Set keeps insertion order). */
  private readonly open = new Set<number>();
  /** Tags acked in this tick, not sent yet. */
  private readonly acked = new Set<number>();
  private scheduled = false;

  constructor(private readonly ch: Channel) {}

  delivered(msg: Message): void {
    this.open.add(msg.fields.deliveryTag);
  }

  ack(msg: Message): void {
    const tag = msg.fields.deliveryTag;
    if (!this.open.has(tag)) return; // settled already (or never ours): an ack would close the channel
    this.acked.add(tag);
    if (this.scheduled) return;
    this.scheduled = true;
    process.nextTick(() => this.flush());
  }

  nack(msg: Message, requeue: boolean): void {
    const tag = msg.fields.deliveryTag;
    if (!this.open.delete(tag)) return;
    this.acked.delete(tag);
    this.ch.nack(msg, false, requeue);
  }

  /**
   * Sends the acks of this tick (at its end, or now: before the channel is
   * closed on purpose, see Broker.closeChannel). A channel closed meanwhile
   * takes them along: the broker requeued those deliveries.
   */
  flush(): void {
    this.scheduled = false;
    let upTo: number | undefined;
    for (const tag of this.open) {
      if (!this.acked.has(tag)) break;
      this.open.delete(tag);
      this.acked.delete(tag);
      upTo = tag;
    }
    try {
      if (upTo !== undefined) this.ch.ack(tagged(upTo), true);
      for (const tag of this.acked) {
        this.open.delete(tag);
        this.ch.ack(tagged(tag));
      }
    } catch {
      // The channel is closed.
    }
    this.acked.clear();
  }
}

/** What amqplib reads of a message to ack it: its delivery tag. */
const tagged = (deliveryTag: number) => ({ fields: { deliveryTag } }) as Message;
