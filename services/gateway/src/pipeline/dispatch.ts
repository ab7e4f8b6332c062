import { randomUUID } from 'node:crypto';
import type { Broker } from '@ge-mesh/broker';
import type { RepositoryModel } from '@ge-mesh/model-repository';
import {
  encode,
  type InferRequestMessage,
  type InferResponseMessage,
  MeshError,
  PROTOCOL_VERSION,
  TRITON_MESSAGES,
} from '@ge-mesh/protocol';
import type { Admission } from './admission.js';
import type { ValidatedInfer } from './infer/index.js';
import type { ReplyRouter } from './reply-router.js';

/**
 * How long after a request's deadline the gateway answers it with a timeout
 * itself: the hops that hold it answer at the deadline, with their own
 * statistics; this is the backstop for an answer that cannot come.
 */
const DEADLINE_SLACK_MS = 250;

/**
 * Hands a validated request to its model's batcher and waits for the one
 * answer. The publish is confirmed before waiting: a request the broker did
 * not take is answered at once with an error, never left hanging.
 */
export class InferService {
  constructor(
    private readonly broker: Broker,
    private readonly replies: ReplyRouter,
    private readonly requestTimeoutMs: number,
    /** max_queue_size, counted mesh-wide; absent = no limit is enforced. */
    private readonly admission?: Admission,
  ) {}

  async infer(model: RepositoryModel, version: string, req: ValidatedInfer): Promise<InferResponseMessage> {
    const id = randomUUID();
    const acceptedAt = Date.now();
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
      deadline: acceptedAt + this.requestTimeoutMs,
      acceptedAt,
      replyTo: this.replies.queue,
      correlationId: id,
    };
    const leaveQueue = await this.admission?.admit(model.config, id, msg.priority, msg.deadline);
    // Wait first, so a reply racing the confirm is not missed.
    const reply = this.replies.wait(id, this.requestTimeoutMs + DEADLINE_SLACK_MS);
    const queued = this.broker
      .send(this.broker.topology.requests(model.name), encode(msg), {
        persistent: this.broker.persistent,
        messageId: id,
      })
      .then(
        () => 'queued' as const,
        () => 'refused' as const,
      );
    // A confirm that never comes (a silent, half-open broker) must not outlast the deadline: the
    // reply wait ends it then, with a timeout.
    const first = await Promise.race([queued, reply.then(() => 'ended' as const)]);
    if (first === 'refused') {
      this.replies.cancel(id);
      await leaveQueue?.();
      // The broker's own text may name queues and hosts: it stays out of the answer.
      throw new MeshError('UNAVAILABLE', 'the request could not be queued; try again');
    }
    const res = await reply;
    if (!res) throw new MeshError('TIMEOUT', TRITON_MESSAGES.timeout);
    if (res.error) throw MeshError.fromWire(res.error);
    return res;
  }
}
