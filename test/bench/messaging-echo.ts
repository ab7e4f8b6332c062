/**
 * The messaging limit: a request/reply round trip over the same RabbitMQ the
 * mesh uses, with nothing else in the path. An echo consumer answers each
 * message to its reply_to; the client sends over RabbitMQ's direct reply-to,
 * with `concurrency` calls in flight and bodies of a tiny request's size.
 */
import { randomUUID } from 'node:crypto';
import amqp from 'amqplib';

export interface Echo {
  call(body: Buffer): Promise<void>;
  close(): Promise<void>;
}

export async function startEcho(url: string, queue: string): Promise<Echo> {
  const server = await amqp.connect(url, { noDelay: true });
  const sch = await server.createChannel();
  await sch.assertQueue(queue, { durable: false, autoDelete: true });
  await sch.prefetch(256);
  await sch.consume(queue, (m) => {
    if (!m) return;
    sch.sendToQueue(m.properties.replyTo as string, m.content, { correlationId: m.properties.correlationId as string });
    sch.ack(m);
  });
  const client = await amqp.connect(url, { noDelay: true });
  const cch = await client.createChannel();
  const waiting = new Map<string, () => void>();
  await cch.consume(
    'amq.rabbitmq.reply-to',
    (m) => {
      if (!m) return;
      const id = m.properties.correlationId as string;
      waiting.get(id)?.();
      waiting.delete(id);
    },
    { noAck: true },
  );
  return {
    call: (body) =>
      new Promise<void>((resolve) => {
        const id = randomUUID();
        waiting.set(id, resolve);
        cch.sendToQueue(queue, body, { correlationId: id, replyTo: 'amq.rabbitmq.reply-to' });
      }),
    async close() {
      await client.close();
      await server.close();
    },
  };
}
