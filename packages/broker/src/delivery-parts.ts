import type { ConsumeMessage } from 'amqplib';

export type Settlement = 'ack' | 'requeue' | 'reject';

/**
 * One delivery that carries several messages (a bundle), each consumed and
 * settled as if it were a delivery of its own. The delivery itself is
 * settled once every part is: acked when all parts were acked, else
 * requeued when one was requeued, else dead-lettered. Requeue wins over
 * reject because a requeued part is a request that is fine and only met a
 * passing fault: dead-lettering the whole would answer it as poison. The
 * rejected part comes back with the rest and is rejected again, and the
 * whole is dead-lettered once no part asks for another try. A requeued
 * bundle comes back whole and marked redelivered, so its consumer must drop
 * the parts it already handled (the batcher's claims in Redis do).
 */
export class DeliveryParts {
  private left: number;
  private outcome: Settlement = 'ack';
  private readonly settled = new WeakSet<ConsumeMessage>();

  constructor(
    readonly parts: readonly ConsumeMessage[],
    private readonly settleWhole: (how: Settlement) => boolean,
  ) {
    this.left = parts.length;
  }

  /** Settle one part (a second settle of it is ignored); false once the whole delivery's channel is gone. */
  settle(part: ConsumeMessage, how: Settlement): boolean {
    if (this.settled.has(part)) return true;
    this.settled.add(part);
    if (how === 'requeue') this.outcome = 'requeue';
    else if (how === 'reject' && this.outcome === 'ack') this.outcome = 'reject';
    this.left--;
    return this.left > 0 || this.settleWhole(this.outcome);
  }
}

/** The parts of `whole`, one per content: each shares its fields and properties (redelivered, headers). */
export function partsOf(whole: ConsumeMessage, contents: readonly Uint8Array[]): ConsumeMessage[] {
  return contents.map((c) => ({
    content: Buffer.isBuffer(c) ? c : Buffer.from(c.buffer, c.byteOffset, c.byteLength),
    fields: whole.fields,
    properties: whole.properties,
  }));
}
