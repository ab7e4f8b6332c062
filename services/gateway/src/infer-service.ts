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
    const reply = this.replies.wait(id, this.requestTimeoutMs + 1_000);
    try {
      await this.broker.send(this.broker.topology.requests(model.name), encode(msg), {
        persistent: this.broker.persistent,
        messageId: id,
      });
    } catch {
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
