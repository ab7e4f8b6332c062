/**
 * When to close a batch and how many pending requests it takes. Pure: the
 * caller owns the queue and the clock.
 *
 * Follows Triton's dynamic batcher (FIFO, a request is never split, the first
 * shape mismatch closes the batch, max_queue_delay counted from the oldest
 * request, a prefix that hits a preferred size goes at once), with the tiers
 * as the preferred sizes, plus one tier-aware rule: while no lane is free
 * there is nothing to gain from sending early, so the batch keeps growing
 * toward a full tier instead of being padded.
 */
export interface PendingView {
  readonly rows: number;
  readonly shapeKey: string;
  /** ms since the epoch */
  readonly enqueuedAt: number;
}

export interface PolicyInput {
  readonly pending: readonly PendingView[];
  /** Ascending static batch sizes; the last is the largest batch. */
  readonly tiers: readonly number[];
  readonly maxQueueDelayUs: number;
  readonly now: number;
  /** A lane could start this batch now (no batch is waiting for one). */
  readonly laneFree: boolean;
}

export type Decision =
  | { readonly kind: 'send'; readonly take: number; readonly rows: number; readonly tier: number }
  | { readonly kind: 'wait'; readonly until: number | null };

export function nearestTier(tiers: readonly number[], rows: number): number {
  for (const t of tiers) if (t >= rows) return t;
  return tiers[tiers.length - 1] ?? rows;
}

export function decide(p: PolicyInput): Decision {
  const first = p.pending[0];
  if (!first) return { kind: 'wait', until: null };
  const maxTier = p.tiers[p.tiers.length - 1] ?? 1;
  let rows = 0;
  let take = 0;
  let bestTake = 0;
  let bestRows = 0;
  let closed = false;
  for (const r of p.pending) {
    if (r.shapeKey !== first.shapeKey || rows + r.rows > maxTier) {
      closed = true;
      break;
    }
    rows += r.rows;
    take++;
    if (p.tiers.includes(rows)) {
      bestTake = take;
      bestRows = rows;
    }
    if (rows === maxTier) break;
  }
  if (take === 0) {
    // A single request larger than the largest tier never reaches here: the gateway rejects it.
    return { kind: 'send', take: 1, rows: first.rows, tier: nearestTier(p.tiers, first.rows) };
  }
  const send = (n: number, r: number): Decision => ({ kind: 'send', take: n, rows: r, tier: nearestTier(p.tiers, r) });
  const full = rows === maxTier;
  // Until a lane can start it, a batch that can still grow keeps growing.
  if (!p.laneFree && !full) return { kind: 'wait', until: null };
  const deadline = first.enqueuedAt + p.maxQueueDelayUs / 1000;
  const delayExceeded = p.maxQueueDelayUs > 0 && p.now >= deadline;
  // Triton: a prefix that hits a preferred size (here: fills a tier, so no padding) goes at once.
  if (bestTake > 0 && !delayExceeded) return send(bestTake, bestRows);
  // Full, or closed by a request that cannot join, or out of time: send what there is, padded.
  if (closed || p.maxQueueDelayUs === 0 || delayExceeded) return send(take, rows);
  return { kind: 'wait', until: deadline };
}
