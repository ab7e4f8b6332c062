/**
 * Names of everything GE Mesh declares on the broker, all under one namespace
 * so several meshes (and parallel tests) share one RabbitMQ without touching
 * each other.
 *
 *   <ns>.requests.<model>   gateway → batcher   (quorum, durable)
 *   <ns>.batches.<model>    batcher → workers   (quorum, durable)
 *   <ns>.replies.<id>       worker  → gateway   (exclusive, per gateway process)
 *   <ns>.dead               dead-letter queue for poison messages
 */
export interface Topology {
  readonly namespace: string;
  requests(model: string): string;
  batches(model: string): string;
  replies(owner: string): string;
  readonly deadLetterExchange: string;
  readonly deadLetterQueue: string;
}

export function topology(namespace: string): Topology {
  return Object.freeze({
    namespace,
    requests: (model: string) => `${namespace}.requests.${model}`,
    batches: (model: string) => `${namespace}.batches.${model}`,
    replies: (owner: string) => `${namespace}.replies.${owner}`,
    deadLetterExchange: `${namespace}.dlx`,
    deadLetterQueue: `${namespace}.dead`,
  });
}

/** Redeliveries after which a message is dead-lettered instead of looping. */
export const DEFAULT_DELIVERY_LIMIT = 5;
