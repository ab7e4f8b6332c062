/**
 * Where a namespace keeps each model's state in Redis. Every key of a model
 * is under the hash tag `{<ns>:<model>}`, so the keys one script touches
 * share a Redis Cluster slot while models spread over the cluster.
 */
export class ModelKeys {
  constructor(readonly namespace: string) {}

  /** Prefix of every key of a model: its hash tag. */
  modelTag(model: string): string {
    return `{${this.namespace}:${model}}`;
  }
  batchKey(model: string, batchId: string): string {
    return `${this.modelTag(model)}:batch:${batchId}`;
  }
  /** Which batch answers a request ('!<reason>' once it was answered with an error). */
  claimKey(model: string, requestId: string): string {
    return `${this.modelTag(model)}:claim:${requestId}`;
  }
  /** A large request kept beside its message (InferRequestMessage.stored), as the gateway encoded it. */
  requestBodyKey(model: string, requestId: string): string {
    return `${this.modelTag(model)}:body:${requestId}`;
  }
  /** Zset of the model's batches that are formed and not yet finished by a worker. */
  inFlightKey(model: string): string {
    return `${this.modelTag(model)}:inflight`;
  }
  /** Zset of the requests admitted to a model's priority level and not yet batched or answered. */
  queueKey(model: string, level: number): string {
    return `${this.modelTag(model)}:queue:${level}`;
  }
  /** Which batcher batches a model whose responses must keep request order. */
  leadKey(model: string): string {
    return `${this.modelTag(model)}:lead`;
  }
  /** Hash of the model's measured lane time per tier (finish-batch keeps it). */
  tierCostKey(model: string): string {
    return `${this.modelTag(model)}:tiercost`;
  }
  /** Pub/sub channel on which workers announce that a batch of the model finished. */
  lanesChannel(model: string): string {
    return `${this.namespace}:lanes:${model}`;
  }
}
