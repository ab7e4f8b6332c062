import { randomUUID } from 'node:crypto';
import type { Broker, Channel } from '@ge-mesh/broker';
import {
  AwaitedReplies,
  bundledIds,
  decodeResponses,
  type InferResponseMessage,
  versionMismatch,
} from '@ge-mesh/protocol';
import type { Logger } from '@ge-mesh/telemetry';

/**
 * The gateway's own reply queue: every response for a request this process
 * published comes back here, matched by correlation id. A reply for an id no
 * one waits for (a late or duplicate answer) is counted and dropped.
 */
export class ReplyRouter {
  private readonly waiting = new AwaitedReplies<InferResponseMessage | null>(() => null);
  readonly queue: string;
  duplicates = 0;
  /** Sees every decoded reply, including late and duplicate ones (for statistics). */
  onReply?: (res: InferResponseMessage) => void;

  constructor(
    private readonly broker: Broker,
    private readonly log: Logger,
    owner = randomUUID(),
  ) {
    this.queue = broker.topology.replies(owner);
  }

  /** Consume the reply queue, and again after every reconnect (an exclusive queue dies with its connection). */
  start(): Promise<void> {
    return this.broker.onReady(() => this.consume());
  }

  private async consume(): Promise<void> {
    const ch: Channel = await this.broker.channel();
    await ch.assertQueue(this.queue, { exclusive: true, autoDelete: true, durable: false });
    await this.broker.consume(
      ch,
      this.queue,
      (msg) => {
        let responses: InferResponseMessage[];
        try {
          responses = decodeResponses(msg.content);
        } catch (err) {
          this.log.error({ err }, 'undecodable reply');
          return;
        }
        for (const res of responses) this.deliver(res);
      },
      // Replies are not redelivered to another gateway: if this one dies, its HTTP clients are gone too.
      { noAck: true },
    );
  }

  private deliver(res: InferResponseMessage): void {
    const mismatch = versionMismatch(res.v, 'response');
    if (mismatch) {
      this.log.error({ err: mismatch.message }, 'response of another protocol version');
      res = { ...res, outputs: [], error: mismatch };
    } else {
      try {
        this.onReply?.(res);
      } catch (err) {
        this.log.error({ err }, 'reply observer failed');
      }
    }
    const id = res.correlationId;
    const members = typeof id === 'string' ? bundledIds(id) : undefined;
    if (members) {
      // An answer to a whole bundle (a service of another version refused it): each member's.
      for (const m of members) this.resolve({ ...res, id: m, correlationId: m });
      return;
    }
    this.resolve(res);
  }

  private resolve(res: InferResponseMessage): void {
    const id = res.correlationId;
    if (typeof id !== 'string' || !this.waiting.resolve(id, res)) this.duplicates++;
  }

  /** Resolves with the reply, or null when none came before `timeoutMs`. */
  wait(correlationId: string, timeoutMs: number): Promise<InferResponseMessage | null> {
    return this.waiting.wait(correlationId, timeoutMs);
  }

  cancel(correlationId: string): void {
    this.waiting.cancel(correlationId);
  }

  get pendingCount(): number {
    return this.waiting.size;
  }
}
