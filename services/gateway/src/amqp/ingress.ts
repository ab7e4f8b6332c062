import type { Broker, Channel, ConfirmChannel, ConsumeMessage } from '@ge-mesh/broker';
import {
  AUTHORIZATION_HEADER,
  decodeMessage,
  encodeMessage,
  type IngressNames,
  type IngressReply,
  type IngressReplyOk,
  MeshError,
  MSGPACK_CONTENT_TYPE,
} from '@ge-mesh/protocol';
import type { Logger } from '@ge-mesh/telemetry';
import type { InferenceMetrics } from '@ge-mesh/telemetry/metrics';
import { parseInferObject, selectOutputs } from '../infer/index.js';
import { answerError } from '../pipeline/error-answer.js';
import type { InferPipeline } from '../pipeline/infer-pipeline.js';

export interface AmqpIngressDeps {
  broker: Broker;
  pipeline: InferPipeline;
  /** Largest message body accepted, as for HTTP bodies. */
  maxBodyBytes: number;
  maxTensorElements: number;
  /** Messages this gateway works on at once (unacked deliveries). */
  prefetch: number;
  log: Logger;
  metrics?: InferenceMetrics;
}

/**
 * The public AMQP ingress (see @ge-mesh/protocol's ingress.ts for the contract):
 * consumes `<ns>.infer.requests`, runs each request through the same checks
 * as REST (auth, limits, parsing and validation against the model config,
 * Triton's error texts and codes) and answers to the message's `reply_to`
 * with its `correlation_id`, whether RabbitMQ's direct reply-to or a queue.
 *
 * Replies go out from here rather than from the worker: the gateway holds the
 * request's deadline (a lost batch still gets its TIMEOUT answer), keeps the
 * statistics and metrics, and applies `outputs` (classification) as REST does.
 *
 * A message is acked after its reply was published, so a gateway that dies
 * mid-request leaves it to another gateway (at-least-once: producers should
 * drop a second reply for the same correlation id). A message without
 * `reply_to`, or whose `reply_to` names one of the mesh's own queues, cannot
 * be answered: it is acked, logged and counted.
 */
export class AmqpIngress {
  private ch?: Channel;
  private replyCh?: ConfirmChannel;
  private tag?: string;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly names: IngressNames;
  /** Messages acked without an answer (no usable reply_to). */
  unanswerable = 0;
  private stopped = false;

  constructor(private readonly deps: AmqpIngressDeps) {
    this.names = deps.broker.topology.ingress;
  }

  get queue(): string {
    return this.names.queue;
  }

  /** Consume the ingress queue, and again after every reconnect. */
  start(): Promise<void> {
    this.deps.broker.onLost(() => {
      this.ch = undefined;
      this.replyCh = undefined;
    });
    return this.deps.broker.onReady(() => this.consume());
  }

  private async consume(): Promise<void> {
    if (this.stopped) return;
    const { broker } = this.deps;
    const ch = await broker.channel(this.deps.prefetch);
    await ch.assertExchange(this.names.exchange, 'fanout', { durable: true });
    // The public ingress is a contract with producers, who may declare it too: always quorum.
    await broker.assertWorkQueue(ch, this.names.queue, 'durable');
    await ch.bindQueue(this.names.queue, this.names.exchange, '');
    this.ch = ch;
    this.tag = await broker.consume(
      ch,
      this.names.queue,
      (msg) => {
        const p = this.handle(msg);
        this.inFlight.add(p);
        void p.finally(() => this.inFlight.delete(p));
      },
      { coalesceAcks: true },
    );
  }

  private async handle(msg: ConsumeMessage): Promise<void> {
    const replyTo = msg.properties.replyTo as string | undefined;
    const correlationId = (msg.properties.correlationId ?? msg.properties.messageId) as string | undefined;
    const ns = this.deps.broker.topology.namespace;
    if (!replyTo || replyTo.startsWith(`${ns}.`)) {
      this.unanswerable++;
      this.deps.metrics?.errorAnswered('NO_REPLY_TO', 'amqp');
      this.deps.log.warn(
        { correlationId },
        replyTo ? 'request reply_to names a mesh queue; dropped' : 'request without reply_to; dropped',
      );
      this.deps.broker.settle(msg, 'ack');
      return;
    }
    let reply: IngressReply;
    // The request's trace (tracing on), named in the reply's headers as REST names it in traceresponse.
    let traceresponse: string | undefined;
    try {
      reply = await this.process(msg, (tp) => {
        traceresponse = tp;
      });
    } catch (err) {
      const a = answerError(err, 'amqp', this.deps);
      reply = { error: a.body.error, code: a.code, status: a.status };
    }
    try {
      await this.publishReply(replyTo, correlationId, encodeMessage(reply), traceresponse);
    } catch (err) {
      this.deps.log.warn({ err, correlationId }, 'reply could not be published');
    }
    this.deps.broker.settle(msg, 'ack');
  }

  private async process(msg: ConsumeMessage, onTraced: (traceparent: string) => void): Promise<IngressReplyOk> {
    const d = this.deps;
    if (msg.content.length > d.maxBodyBytes) {
      throw new MeshError('PAYLOAD_TOO_LARGE', `request body is larger than the limit of ${d.maxBodyBytes} bytes`);
    }
    let doc: unknown;
    try {
      doc = decodeMessage(msg.content);
    } catch {
      throw new MeshError('INVALID_ARGUMENT', 'the request body is not msgpack');
    }
    const fields =
      typeof doc === 'object' && doc !== null && !Array.isArray(doc) ? (doc as Record<string, unknown>) : {};
    const name = fields.model;
    if (typeof name !== 'string' || name === '') {
      throw new MeshError('INVALID_ARGUMENT', "the request needs 'model', the model's name as a string");
    }
    const rawVersion = fields.version;
    if (rawVersion !== undefined && typeof rawVersion !== 'string' && typeof rawVersion !== 'number') {
      throw new MeshError('INVALID_ARGUMENT', "'version' must be a version number (string or integer)");
    }
    const authorization = headerText(msg.properties.headers?.[AUTHORIZATION_HEADER]);
    const {
      model,
      version: v,
      request,
      result,
    } = await d.pipeline.infer({
      ingress: 'amqp',
      onTraced,
      ...(msg.properties.headers ? { traceHeaders: msg.properties.headers } : {}),
      model: name,
      ...(rawVersion !== undefined ? { version: String(rawVersion) } : {}),
      versionFrom: 'field',
      ...(authorization !== undefined ? { authorization } : {}),
      decode: (m) => parseInferObject(doc, msg.content.length, m.name, { maxElements: d.maxTensorElements }),
    });
    const outputs = selectOutputs(result, request.outputs, true);
    return {
      model_name: model.name,
      model_version: v,
      ...(request.clientId !== undefined ? { id: request.clientId } : {}),
      outputs: outputs.map(({ tensor: t }) => ({ name: t.name, datatype: t.datatype, shape: t.shape, data: t.data })),
    };
  }

  // Replies have their own confirm channel: a reply_to the broker refuses closes it, not the mesh's publisher.
  private async publishReply(
    replyTo: string,
    correlationId: string | undefined,
    body: Buffer,
    traceresponse?: string,
  ): Promise<void> {
    if (!this.replyCh) {
      const ch = await this.deps.broker.connection.createConfirmChannel();
      ch.on('error', (err: Error) => this.deps.log.warn({ err }, 'reply channel closed by the broker'));
      ch.on('close', () => {
        if (this.replyCh === ch) this.replyCh = undefined;
      });
      this.replyCh = ch;
    }
    const ch = this.replyCh;
    await new Promise<void>((resolve, reject) => {
      ch.publish(
        '',
        replyTo,
        body,
        {
          contentType: MSGPACK_CONTENT_TYPE,
          ...(correlationId !== undefined ? { correlationId } : {}),
          ...(traceresponse !== undefined ? { headers: { traceresponse } } : {}),
        },
        (err) => (err ? reject(new Error('reply not confirmed')) : resolve()),
      );
    });
  }

  /** Stops taking messages and waits for the ones in hand to be answered. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.ch && this.tag) await this.ch.cancel(this.tag).catch(() => undefined);
    await Promise.allSettled([...this.inFlight]);
    if (this.ch) await this.deps.broker.closeChannel(this.ch).catch(() => undefined);
    await this.replyCh?.close().catch(() => undefined);
    this.ch = undefined;
  }
}

function headerText(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (Buffer.isBuffer(v)) return v.toString('utf8');
  return undefined;
}
