import type { Socket } from 'node:net';
import type { Logger } from '@ge-mesh/telemetry';
import amqp, { type Channel, type ChannelModel, type ConfirmChannel, type ConsumeMessage, type Options } from 'amqplib';
import { DEFAULT_DELIVERY_LIMIT, type Durability, type Topology } from './topology.js';

export type { Channel, ConfirmChannel, ConsumeMessage };

/**
 * One AMQP connection with a confirm channel for publishing and separate
 * channels for consumers (a consumer's prefetch is per channel).
 */
export class Broker {
  private closing = false;
  private constructor(
    readonly connection: ChannelModel,
    readonly publisher: ConfirmChannel,
    readonly topology: Topology,
    private readonly log: Logger,
  ) {
    connection.on('error', (err: Error) => log.error({ err }, 'broker connection error'));
    connection.on('close', () => {
      if (!this.closing) log.fatal('broker connection closed unexpectedly');
      this.onLost?.();
    });
  }

  /** Called when the connection drops while not closing on purpose. */
  onLost?: () => void;

  static async connect(url: string, topo: Topology, log: Logger, name: string): Promise<Broker> {
    // noDelay: without it request/reply suffers Nagle + delayed-ACK stalls (p99 ~47 ms).
    const connection = await amqp.connect(url, { noDelay: true, clientProperties: { connection_name: name } });
    coalesceWrites((connection.connection as unknown as { stream: Socket }).stream);
    const publisher = await connection.createConfirmChannel();
    return new Broker(connection, publisher, topo, log);
  }

  /** Publish and resolve once the broker confirmed it (at-least-once hand-off). */
  publish(exchange: string, routingKey: string, body: Buffer, options: Options.Publish = {}): Promise<void> {
    return new Promise((resolve, reject) => {
      this.publisher.publish(exchange, routingKey, body, options, (err) =>
        err ? reject(err instanceof Error ? err : new Error(String(err))) : resolve(),
      );
    });
  }

  /** Send to a queue through the default exchange. */
  send(queue: string, body: Buffer, options: Options.Publish = {}): Promise<void> {
    return this.publish('', queue, body, options);
  }

  /** Messages of the request and batch hops are persistent only in the durable mode. */
  get persistent(): boolean {
    return this.topology.durability === 'durable';
  }

  /**
   * Declare a work queue, dead-lettered. Durable mode: a quorum queue with the
   * broker's delivery limit. Fast mode: a classic queue (the declaration
   * survives a broker restart, its transient messages do not); classic queues
   * refuse x-delivery-limit, so consumers count deliveries themselves (the
   * worker's start-batch does, in Redis).
   */
  async assertWorkQueue(
    ch: Channel,
    queue: string,
    durability: Durability = this.topology.durability,
    deliveryLimit = DEFAULT_DELIVERY_LIMIT,
  ): Promise<void> {
    await ch.assertExchange(this.topology.deadLetterExchange, 'fanout', { durable: true });
    await ch.assertQueue(this.topology.deadLetterQueue, { durable: true });
    await ch.bindQueue(this.topology.deadLetterQueue, this.topology.deadLetterExchange, '');
    const deadLetters = { 'x-dead-letter-exchange': this.topology.deadLetterExchange };
    await ch.assertQueue(queue, {
      durable: true,
      arguments:
        durability === 'durable'
          ? { 'x-queue-type': 'quorum', 'x-delivery-limit': deliveryLimit, ...deadLetters }
          : { 'x-queue-type': 'classic', ...deadLetters },
    });
  }

  async channel(prefetch?: number): Promise<Channel> {
    const ch = await this.connection.createChannel();
    ch.on('error', (err: Error) => this.log.error({ err }, 'broker channel error'));
    if (prefetch !== undefined) await ch.prefetch(prefetch);
    return ch;
  }

  /**
   * Consume with manual acks. A null message means the broker cancelled the
   * consumer (e.g. the queue was deleted); it must never be acked.
   */
  async consume(
    ch: Channel,
    queue: string,
    onMessage: (msg: ConsumeMessage) => void,
    options: Options.Consume = {},
  ): Promise<string> {
    const { consumerTag } = await ch.consume(
      queue,
      (msg) => {
        if (msg === null) {
          if (!this.closing) this.log.warn({ queue }, 'consumer cancelled by the broker');
          return;
        }
        onMessage(msg);
      },
      options,
    );
    return consumerTag;
  }

  async close(): Promise<void> {
    this.closing = true;
    try {
      await this.connection.close();
    } catch {
      // Already closed.
    }
  }
}

/**
 * Coalesce every frame written to the broker socket in one tick into one
 * write: amqplib writes each frame (publish, ack, confirm) on its own, and
 * with noDelay each is a syscall and a TCP segment. Corking until the next
 * tick turns a burst of acks and publishes into a single writev.
 */
export function coalesceWrites(socket: Socket): void {
  const write = socket.write.bind(socket) as (...args: unknown[]) => boolean;
  let corked = false;
  const uncork = () => {
    corked = false;
    socket.uncork();
  };
  socket.write = ((...args: unknown[]) => {
    if (!corked) {
      corked = true;
      socket.cork();
      process.nextTick(uncork);
    }
    return write(...args);
  }) as Socket['write'];
}
