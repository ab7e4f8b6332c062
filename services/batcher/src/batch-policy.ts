/**
 * When to close a batch and which pending requests it takes. Pure: the
 * caller owns the queue, the clock and the lane count.
 *
 * Two layers:
 * - `tritonDecide` is Triton's dynamic batcher (core
 *   src/dynamic_batch_scheduler.cc GetDynamicBatch) over the pending
 *   requests in walk order: FIFO, a request is never split, the first shape
 *   mismatch or overflow of max_batch_size closes the batch, a prefix that
 *   hits a preferred size goes at once, max_queue_delay is counted from the
 *   oldest pending request.
 * - `decide` adds what tiers change. Triton's choice stands when it fills a
 *   tier. When it would be padded, the batch sent is instead the first part
 *   of the split of the pending requests that costs the least lane time
 *   (see `planSplit` and `tierCostModel`). And while every lane is busy, a
 *   batch that can still grow is not sent into a staging slot: it would
 *   start no sooner, and waiting lets it fill a tier.
 */
export interface PendingView {
  readonly rows: number;
  readonly shapeKey: string;
  /** ms since the epoch */
  readonly enqueuedAt: number;
}

export interface BatchShape {
  /** Ascending static batch sizes; a batch is padded up to the smallest that holds it. */
  readonly tiers: readonly number[];
  /** Triton's preferred batch sizes, ascending. */
  readonly preferred: readonly number[];
  /** Most rows in one batch (max_batch_size; 1 for a model without a batch dim). */
  readonly maxBatch: number;
  readonly maxQueueDelayUs: number;
  /** Without `dynamic_batching` Triton sends every request on its own. */
  readonly singleRequest?: boolean;
}

export interface Slots {
  /** A lane has no batch: one sent now starts at once. */
  readonly laneIdle: boolean;
  /** A batch may be sent now, to run at once or to wait in a staging slot for the next free lane. */
  readonly stageFree: boolean;
}

export type PolicyName = 'tier-aware' | 'triton';

export interface PolicyInput {
  /** In walk order: priority level 1 first, FIFO within a level, delayed requests after the others of their level. */
  readonly pending: readonly PendingView[];
  readonly shape: BatchShape;
  readonly now: number;
  readonly slots: Slots;
  readonly policy?: PolicyName;
  /** Lane time of a batch run at a tier (any unit); default `tierCostModel(tiers, empty)`. */
  readonly cost?: TierCost;
}

/** What running one batch at a tier costs, in lane time. */
export type TierCost = (tier: number) => number;

/** Per-batch cost beyond the run when costs are measured: the lane idles while the next batch reaches it. */
export const BATCH_OVERHEAD_MS = 2;

/**
 * The cost of a batch at each tier. With nothing measured yet: the tier's
 * rows plus one row for the batch itself (compute grows with the rows a
 * static graph runs, padding included, and every batch has a fixed cost).
 * With measured lane times (ms, kept per model by the workers' finish-batch):
 * those, interpolated linearly between measured tiers and scaled from the
 * nearest measured tier outside them, plus BATCH_OVERHEAD_MS. So on a device
 * where a bigger tier costs little more (an NPU below its saturation) padding
 * wins over splitting, and where time grows with rows (a CPU) splitting wins.
 */
export function tierCostModel(tiers: readonly number[], measured: ReadonlyMap<number, number>): TierCost {
  const points = [...measured].filter(([t, ms]) => t > 0 && ms > 0).sort((a, b) => a[0] - b[0]);
  if (points.length === 0) return (t) => t + 1;
  const at = (t: number): number => {
    const exact = measured.get(t);
    if (exact !== undefined && exact > 0) return exact;
    const first = points[0] as [number, number];
    const last = points[points.length - 1] as [number, number];
    if (t < first[0]) return (first[1] * (t + 1)) / (first[0] + 1);
    if (t > last[0]) {
      const prev = points[points.length - 2];
      if (!prev) return (last[1] * (t + 1)) / (last[0] + 1);
      const slope = Math.max(0, (last[1] - prev[1]) / (last[0] - prev[0]));
      return last[1] + slope * (t - last[0]);
    }
    for (let i = 1; i < points.length; i++) {
      const [t1, m1] = points[i] as [number, number];
      const [t0, m0] = points[i - 1] as [number, number];
      if (t <= t1) return m0 + ((m1 - m0) * (t - t0)) / (t1 - t0);
    }
    return last[1];
  };
  const table = new Map(tiers.map((t) => [t, at(t) + BATCH_OVERHEAD_MS]));
  return (t) => table.get(t) ?? at(t) + BATCH_OVERHEAD_MS;
}

export type Decision =
  | { readonly kind: 'send'; readonly take: number; readonly rows: number; readonly tier: number }
  | { readonly kind: 'wait'; readonly until: number | null };

export function nearestTier(tiers: readonly number[], rows: number): number {
  for (const t of tiers) if (t >= rows) return t;
  return tiers[tiers.length - 1] ?? rows;
}

interface Walk {
  /** Requests that can join the batch from the head, and their rows. */
  take: number;
  rows: number;
  /** The walk stopped at a request that cannot join (overflow or shape). */
  closed: boolean;
  /** Triton's best point (a preferred-size prefix, or the prefix before passing the largest preferred size). */
  bestTake: number;
  bestRows: number;
}

function walk(pending: readonly PendingView[], shape: BatchShape): Walk {
  const maxPreferred = shape.preferred[shape.preferred.length - 1] ?? shape.maxBatch;
  const w: Walk = { take: 0, rows: 0, closed: false, bestTake: 0, bestRows: 0 };
  const first = pending[0];
  for (const r of pending) {
    const rows = Math.max(1, r.rows);
    if (w.take > 0) {
      if (shape.singleRequest) {
        w.closed = true;
        break;
      }
      if (w.rows + rows > maxPreferred && w.bestTake === 0) {
        w.bestTake = w.take;
        w.bestRows = w.rows;
      }
      if (w.rows + rows > shape.maxBatch || r.shapeKey !== first?.shapeKey) {
        w.closed = true;
        break;
      }
    }
    w.rows += rows;
    w.take++;
    if (shape.preferred.includes(w.rows)) {
      w.bestTake = w.take;
      w.bestRows = w.rows;
    }
  }
  return w;
}

function oldest(pending: readonly PendingView[]): number {
  let t = Number.POSITIVE_INFINITY;
  for (const r of pending) if (r.enqueuedAt < t) t = r.enqueuedAt;
  return t;
}

/** Triton's decision for the pending requests, assuming an instance is free. */
export function tritonDecide(pending: readonly PendingView[], shape: BatchShape, now: number): Decision {
  if (pending.length === 0) return { kind: 'wait', until: null };
  const w = walk(pending, shape);
  const send = (take: number, rows: number): Decision => ({
    kind: 'send',
    take,
    rows,
    tier: nearestTier(shape.tiers, rows),
  });
  const maxPreferred = shape.preferred[shape.preferred.length - 1] ?? shape.maxBatch;
  const delayUntil = oldest(pending) + shape.maxQueueDelayUs / 1000;
  const delayExceeded = shape.maxQueueDelayUs > 0 && now >= delayUntil;
  if (w.bestTake > 0 && !delayExceeded) return send(w.bestTake, w.bestRows);
  if (w.closed || w.rows >= maxPreferred) return send(w.take, w.rows);
  if (delayExceeded || shape.maxQueueDelayUs === 0) return send(w.take, w.rows);
  return { kind: 'wait', until: delayUntil };
}

/** Plans are searched over at most this many requests from the head (the work stays tiny). */
const PLAN_WINDOW = 64;

/**
 * Split the pending requests that could share a batch with the head (same
 * shape, FIFO, none split) into consecutive batches, each padded to its
 * tier, so that their total cost is least; on a tie, fewer batches. Returns
 * the first batch of that split: how many requests and rows. Among first
 * batches of equally good splits, one that fills its tier is preferred (it
 * wastes nothing if the rest waits for more requests), then the longer one.
 *
 * Written here because no library plans padded batches; it is a small
 * dynamic programme over at most PLAN_WINDOW requests and the tiers.
 */
export function planSplit(
  pending: readonly PendingView[],
  shape: BatchShape,
  cost: TierCost = tierCostModel(shape.tiers, new Map()),
): { take: number; rows: number } {
  const head = pending[0];
  if (!head) return { take: 0, rows: 0 };
  const rows: number[] = [];
  for (const r of pending) {
    if (rows.length === PLAN_WINDOW || r.shapeKey !== head.shapeKey) break;
    rows.push(Math.max(1, r.rows));
    if (shape.singleRequest) break;
  }
  const n = rows.length;
  // best[i], runs[i]: the cost and batch count of the best split of requests i..n-1.
  const best = new Array<number>(n + 1).fill(Number.POSITIVE_INFINITY);
  const runs = new Array<number>(n + 1).fill(Number.POSITIVE_INFINITY);
  best[n] = 0;
  runs[n] = 0;
  // Costs are sums of floats: equal within a hair counts as a tie.
  const same = (a: number, b: number) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));
  const better = (c: number, k: number, bc: number, bk: number) => (same(c, bc) ? k < bk : c < bc);
  for (let i = n - 1; i >= 0; i--) {
    let sum = 0;
    for (let j = i; j < n; j++) {
      sum += rows[j] as number;
      if (sum > shape.maxBatch && j > i) break;
      const c = cost(nearestTier(shape.tiers, sum)) + (best[j + 1] as number);
      const k = 1 + (runs[j + 1] as number);
      if (better(c, k, best[i] as number, runs[i] as number)) {
        best[i] = c;
        runs[i] = k;
      }
      if (sum > shape.maxBatch) break;
    }
  }
  let first = { take: 0, rows: 0, full: false };
  let sum = 0;
  for (let j = 0; j < n; j++) {
    sum += rows[j] as number;
    if (sum > shape.maxBatch && j > 0) break;
    const c = cost(nearestTier(shape.tiers, sum)) + (best[j + 1] as number);
    const k = 1 + (runs[j + 1] as number);
    if (!same(c, best[0] as number) || k !== runs[0]) continue;
    const full = nearestTier(shape.tiers, sum) === sum;
    if (first.take === 0 || (full && !first.full) || (full === first.full && j + 1 > first.take)) {
      first = { take: j + 1, rows: sum, full };
    }
  }
  return { take: first.take, rows: first.rows };
}

export function decide(p: PolicyInput): Decision {
  if (p.pending.length === 0 || !p.slots.stageFree) return { kind: 'wait', until: null };
  const t = tritonDecide(p.pending, p.shape, p.now);
  if (p.policy === 'triton') {
    // Triton forms a batch when an instance is free (its payload keeps growing until then).
    return p.slots.laneIdle ? t : { kind: 'wait', until: null };
  }
  if (t.kind === 'wait') return p.slots.laneIdle ? t : { kind: 'wait', until: null };
  let choice: Decision = t;
  if (t.tier !== t.rows) {
    const plan = planSplit(p.pending, p.shape, p.cost);
    choice = { kind: 'send', take: plan.take, rows: plan.rows, tier: nearestTier(p.shape.tiers, plan.rows) };
  }
  if (p.slots.laneIdle) return choice;
  // Only a staging slot is free: stage a batch only once the pending requests can no longer
  // grow the batch (they fill max_batch_size, or the next one cannot join); else wait.
  const w = walk(p.pending, p.shape);
  const cannotGrow = p.shape.singleRequest === true || w.rows >= p.shape.maxBatch || w.closed;
  return cannotGrow ? choice : { kind: 'wait', until: null };
}
