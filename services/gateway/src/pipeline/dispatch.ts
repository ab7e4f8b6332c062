import { randomUUID } from 'node:crypto';
import type { Broker } from '@ge-mesh/broker';
import type { RepositoryModel } from '@ge-mesh/model-repository';
import {
  encode,
  type InferRequestMessage,
  type InferResponseMessage,
  MeshError,
  PROTOCOL_VERSION,
  storedEnvelope,
  TRITON_MESSAGES,
  tensorBytes,
  withEncoded,
} from '@ge-mesh/protocol';
import type { BatchStore } from '@ge-mesh/store';
import { epochMs, SpanKind } from '@ge-mesh/telemetry/tracing';
import type { Admission } from '../admission.js';
import type { ValidatedInfer } from '../infer/index.js';
import type { ReplyRouter } from '../reply-router.js';
import type { InferTrace } from './infer-tracing.js';
import { BUNDLE_MEMBER_MAX_BYTES, type RequestBundles } from './request-bundles.js';

/**
 * How long after a request's deadline the gateway answers it with a timeout
 * itself: the hops that hold it answer at the deadline, with their own
 * statistics; this is the backstop for an answer that cannot come.
 */
const DEADLINE_SLACK_MS = 250;

export const CANCELLED_MESSAGE = 'the client cancelled the request';

/** How long a stored request outlives its deadline (the worker may start it just before). */
const STORED_SLACK_MS = 5_000;

/**
 * Large requests travel beside their message (InferRequestMessage.stored):
 * the gateway writes the encoded request to Redis and publishes its envelope,
 * so the tensors cross the network twice (gateway → Redis → worker) instead
 * of four times (through RabbitMQ to the batcher and again to the worker),
 * and the batcher never holds them.
 */
export interface LargeRequests {
  readonly store: BatchStore;
  /** Tensor bytes from which a request is stored; smaller ones travel whole. */
  readonly minBytes: number;
}

/** When and how a dispatched request ends early. */
export interface DispatchOptions {
  /** Absolute deadline (ms since the epoch); the gateway's request timeout caps it. */
  readonly deadlineMs?: number;
  /** Aborted when the caller went away: dropped before publish, or no longer waited for. */
  readonly signal?: AbortSignal;
  /** The request's span (tracing on): publish and wait become its steps; the message carries it. */
  readonly trace?: InferTrace;
}

/**
 * Hands a validated request to its model's batcher and waits for the one
 * answer. A request the broker did not take is answered at once with an
 * error (durable mode: its publish is confirmed first), and the deadline ends
 * every wait, so none is left hanging.
 */
export class Dispatch {
  constructor(
    private readonly broker: Broker,
    private readonly replies: ReplyRouter,
    private readonly requestTimeoutMs: number,
    /** max_queue_size, counted mesh-wide; absent = no limit is enforced. */
    private readonly admission?: Admission,
    private readonly large?: LargeRequests,
    /** Fast mode: small requests of one turn leave together (absent: each alone). */
    private readonly bundles?: RequestBundles,
  ) {}

  async send(
    model: RepositoryModel,
    version: string,
    req: ValidatedInfer,
    opts: DispatchOptions = {},
  ): Promise<InferResponseMessage> {
    const id = randomUUID();
    // To the microsecond: the queue time in Triton's statistics is measured from it, in another process.
    const acceptedAt = epochMs();
    // Whole milliseconds: a `timeout` of 1.5 ms must not put a fraction into Redis TTLs downstream.
    const deadline = Math.ceil(
      Math.min(acceptedAt + this.requestTimeoutMs, opts.deadlineMs ?? Number.POSITIVE_INFINITY),
    );
    const waitMs = Math.max(0, deadline - acceptedAt);
    const msg: InferRequestMessage = {
      v: PROTOCOL_VERSION,
      id,
      ...(req.clientId !== undefined ? { clientId: req.clientId } : {}),
      model: model.name,
      version,
      inputs: req.inputs,
      outputs: req.allOutputs ? [] : req.outputs.map((o) => o.name),
      batch: req.batch,
      priority: req.priority,
      timeoutUs: req.timeoutUs,
      deadline,
      acceptedAt,
      replyTo: this.replies.queue,
      correlationId: id,
    };
    const { signal } = opts;
    throwIfCancelled(signal);
    const leaveQueue = await this.admission?.admit(model.config, id, msg.priority, msg.deadline);
    // The admission check awaited Redis: the caller may have gone meanwhile.
    if (signal?.aborted) {
      await leaveQueue?.();
      throwIfCancelled(signal);
    }
    // Wait first, so a reply racing the confirm is not missed.
    const reply = this.replies.wait(id, waitMs + DEADLINE_SLACK_MS);
    const publishing = opts.trace?.step('gateway publish', SpanKind.PRODUCER);
    const queued = this.encodeAndPublish(msg, model.config.maxBatchSize, publishing);
    // A confirm that never comes (a silent, half-open broker) must not outlast the deadline: the
    // reply wait ends it then, with a timeout.
    const first = await Promise.race([queued, reply.then(() => 'ended' as const)]);
    if (first !== 'refused') publishing?.end();
    if (first === 'refused') {
      this.replies.cancel(id);
      await leaveQueue?.();
      // The broker's own text may name queues and hosts: it stays out of the answer.
      throw new MeshError('UNAVAILABLE', 'the request could not be queued; try again');
    }
    // Once published the request runs anyway; a cancelled caller just stops being waited for.
    const waiting = opts.trace?.step('gateway wait reply');
    const res = signal ? await Promise.race([reply, aborted(signal)]) : await reply;
    waiting?.end();
    if (res === 'aborted') {
      this.replies.cancel(id);
      throw new MeshError('CANCELLED', CANCELLED_MESSAGE);
    }
    if (!res) throw new MeshError('TIMEOUT', TRITON_MESSAGES.timeout);
    if (res.error) throw MeshError.fromWire(res.error);
    return res;
  }

  /**
   * Durable mode: the request is the broker's once confirmed (written to the
   * quorum queue). Fast mode: unconfirmed (Broker.sendUnconfirmed says why);
   * a broker that is away refuses it at once.
   */
  private publish(
    model: string,
    id: string,
    body: Buffer,
    maxBatch: number,
    step: PublishStep | undefined,
  ): Promise<'queued' | 'refused'> {
    const queue = this.broker.topology.requests(model);
    const props = { persistent: this.broker.persistent, messageId: id };
    const refused = (err: unknown) => {
      step?.fail(err);
      return 'refused' as const;
    };
    if (this.broker.persistent) {
      return this.broker.send(queue, body, props, step?.context).then(() => 'queued' as const, refused);
    }
    // A traced request keeps its own message: its trace context travels in the message's headers.
    if (this.bundles && !step && maxBatch > 1 && body.byteLength < BUNDLE_MEMBER_MAX_BYTES) {
      return this.bundles.add(queue, model, id, body, maxBatch);
    }
    try {
      this.broker.sendUnconfirmed(queue, body, props, step?.context);
      return Promise.resolve('queued');
    } catch (err) {
      return Promise.resolve(refused(err));
    }
  }

  /**
   * Publish the whole request, or, for a large one in fast mode, its envelope
   * once the request is stored in Redis. Durable mode keeps requests whole:
   * the quorum queue is what makes them survive a broker restart, and Redis
   * (appendfsync everysec) promises less. With Redis away the request travels
   * whole.
   */
  private encodeAndPublish(
    msg: InferRequestMessage,
    maxBatch: number,
    step: PublishStep | undefined,
  ): Promise<'queued' | 'refused'> {
    const bytes = tensorBytes(msg.inputs);
    const large = this.large;
    const storable =
      large &&
      large.minBytes > 0 &&
      bytes >= large.minBytes &&
      !this.broker.persistent &&
      (!large.store.health || large.store.health.connected);
    if (!storable) return withEncoded(msg, bytes, (body) => this.publish(msg.model, msg.id, body, maxBatch, step));
    const body = encode(msg, bytes);
    return large.store
      .storeRequestBody(msg.model, msg.id, body, msg.deadline - Date.now() + STORED_SLACK_MS)
      .then(
        () => encode(storedEnvelope(msg)),
        () => body,
      )
      .then((sent) => this.publish(msg.model, msg.id, sent, maxBatch, step));
  }
}

type PublishStep = ReturnType<NonNullable<DispatchOptions['trace']>['step']>;

function throwIfCancelled(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new MeshError('CANCELLED', CANCELLED_MESSAGE);
}

function aborted(signal: AbortSignal): Promise<'aborted'> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve('aborted');
    else signal.addEventListener('abort', () => resolve('aborted'), { once: true });
  });
}
