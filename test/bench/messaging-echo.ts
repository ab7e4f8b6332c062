/**
 * The messaging limit: a request/reply round trip over the same RabbitMQ the
 * mesh uses, doing per hop what the mesh's hops do and nothing else. The
 * client publishes to a work queue with a publisher confirm; an echo
 * consumer (manual acks) publishes each message to the client's reply queue
 * with a confirm and acks the request once that publish is confirmed; the
 * client reads replies without acks from its own exclusive queue, as the
 * gateway does. A call ends when both the reply and the confirm are in.
 * Two queue modes, those of the mesh:
 * - fast: classic queue, transient messages (deliveryMode 1);
 * - durable: quorum queue, persistent messages (deliveryMode 2).
 */
import { randomUUID } from 'node:crypto';
import amqp, { type ConfirmChannel, type Options } from 'amqplib';

export type QueueMode = 'fast' | 'durable';
export const QUEUE_MODES: readonly QueueMode[] = ['fast', 'durable'];

export interface Echo {
  call(body: Buffer): Promise<void>;
  close(): Promise<void>;
}

const queueOptions = (mode: QueueMode): Options.AssertQueue =>
  mode === 'fast'
    ? { durable: false, autoDelete: true, arguments: { 'x-queue-type': 'classic' } }
    : { durable: true, arguments: { 'x-queue-type': 'quorum' } };

/** Publish through the default exchange and resolve once the broker confirms. */
function confirmedSend(ch: ConfirmChannel, queue: string, body: Buffer, o: Options.Publish): Promise<void> {
  return new Promise((resolve, reject) => {
    ch.sendToQueue(queue, body, o, (err) => (err ? reject(new Error(String(err))) : resolve()));
  });
}

async function startServer(url: string, queue: string, mode: QueueMode) {
  const conn = await amqp.connect(url, { noDelay: true });
  const ch = await conn.createConfirmChannel();
  await ch.assertQueue(queue, queueOptions(mode));
  await ch.prefetch(256);
  await ch.consume(queue, (m) => {
    if (!m) return;
    const o = { correlationId: m.properties.correlationId as string, deliveryMode: 1 };
    confirmedSend(ch, m.properties.replyTo as string, m.content, o).then(
      () => ch.ack(m),
      () => ch.nack(m),
    );
  });
  return { conn, ch };
}

export async function startEcho(url: string, queue: string, mode: QueueMode): Promise<Echo> {
  const server = await startServer(url, queue, mode);
  const client = await amqp.connect(url, { noDelay: true });
  const cch = await client.createConfirmChannel();
  // Replies are transient in both modes: they answer a live caller, as the gateway's reply queue does.
  const replies = (await cch.assertQueue('', { exclusive: true, autoDelete: true, durable: false })).queue;
  const waiting = new Map<string, () => void>();
  await cch.consume(
    replies,
    (m) => {
      if (!m) return;
      const id = m.properties.correlationId as string;
      waiting.get(id)?.();
      waiting.delete(id);
    },
    { noAck: true },
  );
  const deliveryMode = mode === 'fast' ? 1 : 2;
  return {
    async call(body) {
      const id = randomUUID();
      const reply = new Promise<void>((resolve) => waiting.set(id, resolve));
      await Promise.all([
        confirmedSend(cch, queue, body, { correlationId: id, replyTo: replies, deliveryMode }),
        reply,
      ]);
    },
    async close() {
      await server.ch.deleteQueue(queue).catch(() => undefined);
      await client.close();
      await server.conn.close();
    },
  };
}

/** A load generator's send through the echo: one tiny-request-sized body per call. */
export function echoSend(echo: Echo): () => Promise<boolean> {
  const body = Buffer.alloc(200);
  return async () => {
    await echo.call(body);
    return true;
  };
}
