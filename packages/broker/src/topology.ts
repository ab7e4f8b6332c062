import { type IngressNames, ingressNames } from '@ge-mesh/protocol';

/**
 * Names of everything GE Mesh declares on the broker, all under one namespace
 * so several meshes (and parallel tests) share one RabbitMQ without touching
 * each other.
 *
 * The request and batch hops come in two durability modes, each with its own
 * queue names (a queue cannot change type in place):
 *
 *   fast (default)              durable
 *   <ns>.t.requests.<model>     <ns>.requests.<model>    gateway → batcher
 *   <ns>.t.batches.<model>      <ns>.batches.<model>     batcher → workers
 *   classic queues,             quorum queues,
 *   transient messages          persistent messages
 *
 *   <ns>.replies.<id>       worker → gateway   (exclusive, per gateway process)
 *   <ns>.dlx / <ns>.dead    dead letters of both modes
 *   <ns>.infer, <ns>.infer.requests
 *                           the public AMQP ingress (quorum; its names are the
 *                           contract in @ge-mesh/protocol's ingress.ts)
 *
 * Fast: a process crash loses nothing (requests stay unacked until the next
 * hop confirmed), a broker crash turns the requests it held into timeouts.
 * Durable: requests survive a broker restart, at a quorum write per hop.
 */
export type Durability = 'fast' | 'durable';
export const DURABILITIES: readonly Durability[] = ['fast', 'durable'];

export interface Topology {
  readonly namespace: string;
  readonly durability: Durability;
  requests(model: string): string;
  batches(model: string): string;
  replies(owner: string): string;
  /** Is this one of the namespace's request (or batch) queues, of either mode? */
  isRequestQueue(queue: string): boolean;
  isBatchQueue(queue: string): boolean;
  /** Every work queue name a model may have, both modes (purging, tests). */
  workQueues(model: string): string[];
  readonly deadLetterExchange: string;
  readonly deadLetterQueue: string;
  /** The public AMQP ingress producers publish to. */
  readonly ingress: IngressNames;
}

export function topology(namespace: string, durability: Durability = 'fast'): Topology {
  const prefix = (d: Durability) => (d === 'fast' ? `${namespace}.t` : namespace);
  const p = prefix(durability);
  const matches = (hop: string) => (queue: string) =>
    DURABILITIES.some((d) => queue.startsWith(`${prefix(d)}.${hop}.`));
  return Object.freeze({
    namespace,
    durability,
    requests: (model: string) => `${p}.requests.${model}`,
    batches: (model: string) => `${p}.batches.${model}`,
    replies: (owner: string) => `${namespace}.replies.${owner}`,
    isRequestQueue: matches('requests'),
    isBatchQueue: matches('batches'),
    workQueues: (model: string) =>
      DURABILITIES.flatMap((d) => [`${prefix(d)}.requests.${model}`, `${prefix(d)}.batches.${model}`]),
    deadLetterExchange: `${namespace}.dlx`,
    deadLetterQueue: `${namespace}.dead`,
    ingress: ingressNames(namespace),
  });
}

/** Deliveries after which a message is dead-lettered instead of looping. */
export const DEFAULT_DELIVERY_LIMIT = 5;
