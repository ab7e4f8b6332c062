/**
 * Triton's queue policy rules (model_config.proto ModelQueuePolicy; core
 * src/scheduler_utils.cc), shared by the gateway (admission) and the batcher
 * (timeouts). The types are structural so this package needs no config
 * reader: @ge-mesh/model-repository's DynamicBatchingConfig fits them.
 */
export interface QueuePolicyView {
  readonly timeoutAction: 'REJECT' | 'DELAY';
  readonly defaultTimeoutMicroseconds: number;
  readonly allowTimeoutOverride: boolean;
  /** 0 = unbounded. */
  readonly maxQueueSize: number;
}

export interface QueuePoliciesView {
  readonly defaultQueuePolicy: QueuePolicyView;
  readonly priorityQueuePolicy: ReadonlyMap<number, QueuePolicyView>;
}

/** A level uses its `priority_queue_policy` entry when there is one, else `default_queue_policy`. */
export function levelPolicy(db: QueuePoliciesView, level: number): QueuePolicyView {
  return db.priorityQueuePolicy.get(level) ?? db.defaultQueuePolicy;
}

/**
 * The queue timeout of a request, µs (0 = none): the default, or the
 * request's own `timeout` when overriding is allowed and it is non-zero and
 * shorter. With a default of 0 a request's timeout is ignored, as in Triton.
 */
export function queueTimeoutUs(policy: QueuePolicyView, requestTimeoutUs: number): number {
  const d = policy.defaultTimeoutMicroseconds;
  if (d === 0) return 0;
  if (policy.allowTimeoutOverride && requestTimeoutUs > 0 && requestTimeoutUs < d) return requestTimeoutUs;
  return d;
}
