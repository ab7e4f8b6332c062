import { randomUUID } from 'node:crypto';
import {
  DIRECT_REPLY_TO,
  decodeMessage,
  encodeMessage,
  type IngressReply,
  type IngressRequest,
  ingressNames,
  MSGPACK_CONTENT_TYPE,
} from '@ge-mesh/client';
import { demoModel, sampleInputs } from '@ge-mesh/demo-models';
import amqp, { type ChannelModel, type ConfirmChannel, type ConsumeMessage } from 'amqplib';

/**
 * Open-loop load on the mesh's AMQP ingress that counts every reply per
 * request. The project's MeshClient settles a request on its first reply and
 * drops any later one, so a duplicate would go unseen: this producer speaks
 * the same wire contract (msgpack, direct reply-to, publisher confirms) with
 * amqplib itself and keeps every reply. It reconnects on its own when the
 * broker goes away, as a real producer would.
 */

/** One request of the load and everything that came back for it. */
export interface AmqpSent {
  seed: number;
  id: string;
  sentAt: number;
  /** Every reply that came for this id, in order; more than one is a duplicate. `reply` unset: undecodable. */
  replies: Array<{ at: number; reply?: IngressReply }>;
  /** Never handed to the broker: no connection at the time, or the broker refused it. */
  unsent?: string;
  /**
   * The producer's own connection dropped before a reply came: with direct reply-to no reply can
   * reach it any more, so the mesh cannot be held to answering it.
   */
  cutOff?: boolean;
}

export interface AmqpLoadOptions {
  url: string;
  namespace: string;
  /** Requests per second. */
  rate: number;
  /** The load stops once this returns true. */
  until: () => boolean;
  /** How long to wait for the last replies after the load stopped, ms. */
  graceMs: number;
}

/** The tiny model's input for a seed, as the ingress takes it (raw little-endian bytes). */
export function tinyRequest(id: string, seed: number): IngressRequest {
  return {
    model: 'tiny',
    id,
    inputs: sampleInputs(demoModel('tiny'), 1, seed).map((t) => ({
      name: t.name,
      datatype: t.dataType as 'FP32',
      shape: [...t.dims],
      data: new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength),
    })),
  };
}

class Producer {
  private conn: ChannelModel | undefined;
  private ch: ConfirmChannel | undefined;
  /** Sent on the current connection and not answered yet. */
  private readonly pending = new Map<string, AmqpSent>();
  readonly byId = new Map<string, AmqpSent>();
  /** Replies whose correlation id matched no request. */
  foreign = 0;
  reconnects = 0;
  private closed = false;
  private connecting: Promise<void> | undefined;
  private readonly exchange: string;

  constructor(
    private readonly url: string,
    namespace: string,
  ) {
    this.exchange = ingressNames(namespace).exchange;
  }

  /** Connects, retrying every 250 ms until it works or the producer is closed. */
  connect(): Promise<void> {
    this.connecting ??= (async () => {
      while (!this.closed) {
        try {
          await this.open();
          return;
        } catch {
          await new Promise((r) => setTimeout(r, 250));
        }
      }
    })().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  private async open(): Promise<void> {
    const conn = await amqp.connect(this.url, { noDelay: true });
    conn.on('error', () => undefined);
    try {
      // A publish to a missing exchange would close the channel: wait until a gateway declared it.
      const probe = await conn.createChannel();
      probe.on('error', () => undefined);
      await probe.checkExchange(this.exchange);
      await probe.close();
      const ch = await conn.createConfirmChannel();
      ch.on('error', () => undefined);
      await ch.consume(DIRECT_REPLY_TO, (msg) => this.onReply(msg), { noAck: true });
      conn.on('close', () => this.lost(conn));
      ch.on('close', () => this.lost(conn));
      if (this.closed) throw new Error('closed');
      this.conn = conn;
      this.ch = ch;
    } catch (err) {
      await conn.close().catch(() => undefined);
      throw err;
    }
  }

  /** The connection (or its channel) is gone: what waited on it can no longer be answered. */
  private lost(conn: ChannelModel): void {
    if (this.conn !== conn) return;
    this.conn = undefined;
    this.ch = undefined;
    for (const s of this.pending.values()) s.cutOff = true;
    this.pending.clear();
    void conn.close().catch(() => undefined);
    if (!this.closed) {
      this.reconnects++;
      void this.connect();
    }
  }

  private onReply(msg: ConsumeMessage | null): void {
    if (!msg) return;
    const id = msg.properties.correlationId as string | undefined;
    const s = id === undefined ? undefined : this.byId.get(id);
    if (!s || id === undefined) {
      this.foreign++;
      return;
    }
    let reply: IngressReply | undefined;
    try {
      reply = decodeMessage(msg.content) as IngressReply;
    } catch {
      reply = undefined;
    }
    s.replies.push({ at: Date.now(), ...(reply ? { reply } : {}) });
    this.pending.delete(id);
  }

  send(seed: number): AmqpSent {
    const id = randomUUID();
    const s: AmqpSent = { seed, id, sentAt: Date.now(), replies: [] };
    this.byId.set(id, s);
    const ch = this.ch;
    if (!ch) {
      s.unsent = 'no connection to the broker';
      return s;
    }
    this.pending.set(id, s);
    try {
      ch.publish(
        this.exchange,
        'tiny',
        encodeMessage(tinyRequest(id, seed)),
        { replyTo: DIRECT_REPLY_TO, correlationId: id, contentType: MSGPACK_CONTENT_TYPE },
        (err) => {
          if (err && s.replies.length === 0 && !s.cutOff) {
            s.unsent = 'refused by the broker';
            this.pending.delete(id);
          }
        },
      );
    } catch (err) {
      s.unsent = (err as Error).message;
      this.pending.delete(id);
    }
    return s;
  }

  get waiting(): number {
    return this.pending.size;
  }

  async close(): Promise<void> {
    this.closed = true;
    const conn = this.conn;
    this.conn = undefined;
    this.ch = undefined;
    await conn?.close().catch(() => undefined);
  }
}

/** Runs the load; every request with what came back for it. */
export async function driveAmqp(
  o: AmqpLoadOptions,
): Promise<{ sent: AmqpSent[]; foreign: number; reconnects: number }> {
  const producer = new Producer(o.url, o.namespace);
  await producer.connect();
  const sent: AmqpSent[] = [];
  const start = Date.now();
  while (!o.until()) {
    const due = Math.floor(((Date.now() - start) / 1000) * o.rate);
    while (sent.length < due) sent.push(producer.send(2_000_000 + sent.length + start));
    await new Promise((r) => setTimeout(r, 5));
  }
  // The last replies, and any duplicate that would follow them, get the grace period.
  const until = Date.now() + o.graceMs;
  while (Date.now() < until && producer.waiting > 0) await new Promise((r) => setTimeout(r, 50));
  await new Promise((r) => setTimeout(r, Math.min(1_000, Math.max(0, until - Date.now()))));
  await producer.close();
  return { sent, foreign: producer.foreign, reconnects: producer.reconnects };
}
