import type { Broker } from '@ge-mesh/broker';
import { bundleCorrelationId, encode, PROTOCOL_VERSION, type RequestBundleMessage } from '@ge-mesh/protocol';

/**
 * Encoded requests from this size travel alone: a bundle saves per message,
 * and a large request's cost is its bytes. Below it, the bytes are msgpackr's
 * own (never reused), so a bundle may hold them until it leaves.
 */
export const BUNDLE_MEMBER_MAX_BYTES = 16 * 1024;

type Queued = 'queued' | 'refused';

interface Member {
  readonly id: string;
  readonly body: Buffer;
  readonly done: (how: Queued) => void;
}

interface OpenBundle {
  readonly model: string;
  readonly max: number;
  readonly members: Member[];
}

/**
 * Fast mode: the small requests a gateway publishes to one model's queue in
 * the same turn of its event loop leave as one broker message (a
 * RequestBundleMessage), at the end of that turn. RabbitMQ, amqplib and the
 * batcher pay per message, and under load a gateway takes several requests
 * of a model per turn; a request alone in its turn leaves as itself. A
 * bundle holds at most one batch of requests (`max`), so a batcher's
 * prefetch, sized in batches, holds at most that many per message.
 */
export class RequestBundles {
  private readonly open = new Map<string, OpenBundle>();
  private scheduled = false;

  constructor(
    private readonly broker: Broker,
    private readonly replyTo: string,
  ) {}

  /** Publish unconfirmed with the other requests to `queue` of this turn; 'refused' when the broker is away. */
  add(queue: string, model: string, id: string, body: Buffer, max: number): Promise<Queued> {
    return new Promise((done) => {
      let bundle = this.open.get(queue);
      if (!bundle) {
        bundle = { model, max, members: [] };
        this.open.set(queue, bundle);
        this.schedule();
      }
      bundle.members.push({ id, body, done });
      if (bundle.members.length >= bundle.max) {
        this.open.delete(queue);
        this.publish(queue, bundle);
      }
    });
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    // After the turn's I/O callbacks: the requests read in this turn are all in.
    setImmediate(() => {
      this.scheduled = false;
      const open = [...this.open];
      this.open.clear();
      for (const [queue, bundle] of open) this.publish(queue, bundle);
    });
  }

  private publish(queue: string, { model, members }: OpenBundle): void {
    let how: Queued = 'queued';
    try {
      const [first] = members;
      if (members.length === 1 && first) {
        this.broker.sendUnconfirmed(queue, first.body, { persistent: false, messageId: first.id });
      } else {
        const correlationId = bundleCorrelationId(members.map((m) => m.id));
        const bundle: RequestBundleMessage = {
          v: PROTOCOL_VERSION,
          id: correlationId,
          correlationId,
          model,
          version: '',
          replyTo: this.replyTo,
          requests: members.map((m) => m.body),
        };
        // No messageId: AMQP caps it at 255 bytes, and the members' ids are in the body.
        this.broker.sendUnconfirmed(queue, encode(bundle), { persistent: false });
      }
    } catch {
      how = 'refused';
    }
    for (const m of members) m.done(how);
  }
}
