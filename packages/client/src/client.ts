import { randomUUID } from 'node:crypto';
import {
  AUTHORIZATION_HEADER,
  AwaitedReplies,
  DIRECT_REPLY_TO,
  decodeMessage,
  encodeMessage,
  type IngressReply,
  type IngressReplyOk,
  type IngressRequest,
  ingressNames,
  isErrorReply,
  MSGPACK_CONTENT_TYPE,
} from '@ge-mesh/protocol';
import amqp, { type ChannelModel, type ConfirmChannel, type ConsumeMessage } from 'amqplib';

export interface MeshClientOptions {
  /** RabbitMQ URL; default amqp://guest:guest@127.0.0.1:5672. */
  url?: string;
  /** The mesh's namespace (the gateway's --namespace); default "gemesh". */
  namespace?: string;
  /** API key, when the gateway requires one. */
  apiKey?: string;
  /**
   * Where replies come back: "direct" uses RabbitMQ's direct reply-to (no
   * queue; replies are lost if this connection drops), "queue" an exclusive
   * server-named queue of this client. Default "direct".
   */
  replies?: 'direct' | 'queue';
  /** How long `infer` waits for its reply; default 60 000 ms. */
  timeoutMs?: number;
}

/** A failed inference: the gateway's message, stable code and HTTP status. */
export class MeshClientError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly status: number,
  ) {
    super(message);
    this.name = 'MeshClientError';
  }
}

/**
 * A producer of inference requests over AMQP: publishes to the mesh's public
 * ingress with publisher confirms and matches each reply to its request by
 * correlation id. One client = one connection and one channel; calls may run
 * concurrently.
 */
export class MeshClient {
  private readonly waiting = new AwaitedReplies<IngressReplyOk>(
    (ms) => new MeshClientError(`no reply within ${ms} ms`, 'TIMEOUT', 504),
  );
  private closed = false;

  private constructor(
    private readonly connection: ChannelModel,
    private readonly channel: ConfirmChannel,
    private readonly exchange: string,
    private readonly replyTo: string,
    private readonly options: Required<Pick<MeshClientOptions, 'timeoutMs'>> & MeshClientOptions,
  ) {}

  static async connect(options: MeshClientOptions = {}): Promise<MeshClient> {
    const url = options.url ?? 'amqp://guest:guest@127.0.0.1:5672';
    const names = ingressNames(options.namespace ?? 'gemesh');
    // noDelay: request/reply otherwise waits on Nagle + delayed ACKs (~40 ms).
    const connection = await amqp.connect(url, { noDelay: true });
    try {
      // Fails at once, on a throwaway channel, when no gateway declared the ingress.
      const probe = await connection.createChannel();
      probe.on('error', () => undefined);
      await probe.checkExchange(names.exchange).catch(() => {
        throw new Error(
          `no GE Mesh ingress exchange '${names.exchange}': is a gateway running with --namespace ${options.namespace ?? 'gemesh'}?`,
        );
      });
      await probe.close();
      // Direct reply-to needs the consumer and the publisher on the same channel.
      const channel = await connection.createConfirmChannel();
      let replyTo = DIRECT_REPLY_TO;
      if (options.replies === 'queue') {
        replyTo = (await channel.assertQueue('', { exclusive: true, autoDelete: true, durable: false })).queue;
      }
      const client = new MeshClient(connection, channel, names.exchange, replyTo, {
        ...options,
        timeoutMs: options.timeoutMs ?? 60_000,
      });
      await channel.consume(replyTo, (msg) => client.onReply(msg), { noAck: true });
      connection.on('close', () => client.waiting.rejectAll(new Error('connection to RabbitMQ closed')));
      connection.on('error', () => undefined);
      return client;
    } catch (err) {
      await connection.close().catch(() => undefined);
      throw err;
    }
  }

  /**
   * Sends one request and resolves with its outputs; rejects with
   * MeshClientError (the gateway's code and status) when the mesh refused or
   * failed it, or with code TIMEOUT when no reply came in time.
   */
  infer(request: IngressRequest, opts: { timeoutMs?: number } = {}): Promise<IngressReplyOk> {
    if (this.closed) return Promise.reject(new Error('client is closed'));
    const correlationId = randomUUID();
    const reply = this.waiting.wait(correlationId, opts.timeoutMs ?? this.options.timeoutMs);
    const headers = this.options.apiKey ? { [AUTHORIZATION_HEADER]: `Bearer ${this.options.apiKey}` } : undefined;
    try {
      this.channel.publish(
        this.exchange,
        request.model,
        encodeMessage(request),
        {
          replyTo: this.replyTo,
          correlationId,
          contentType: MSGPACK_CONTENT_TYPE,
          ...(headers ? { headers } : {}),
        },
        (err) => {
          if (err) this.waiting.reject(correlationId, new Error('the broker did not accept the request'));
        },
      );
    } catch (err) {
      // A closed channel throws at once: the call fails now, not at its timeout.
      this.waiting.reject(correlationId, err as Error);
    }
    return reply;
  }

  private onReply(msg: ConsumeMessage | null): void {
    if (msg === null) {
      this.waiting.rejectAll(new Error('reply consumer cancelled by the broker'));
      return;
    }
    const id = msg.properties.correlationId as string | undefined;
    if (id === undefined || !this.waiting.has(id)) return; // late or foreign: dropped
    let reply: IngressReply;
    try {
      reply = decodeMessage(msg.content) as IngressReply;
    } catch {
      this.waiting.reject(id, new Error('undecodable reply'));
      return;
    }
    if (isErrorReply(reply)) this.waiting.reject(id, new MeshClientError(reply.error, reply.code, reply.status));
    else this.waiting.resolve(id, reply);
  }

  /** Requests still waiting for their reply. */
  get pending(): number {
    return this.waiting.size;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.waiting.rejectAll(new Error('client closed'));
    await this.connection.close().catch(() => undefined);
  }
}
