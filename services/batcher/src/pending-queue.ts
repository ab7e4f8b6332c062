import type { PendingView } from './batch-policy.js';

/** A request waiting in a batcher, with what the queue policy needs. */
export interface Queued<T> extends PendingView {
  readonly item: T;
  /** Arrival order at this batcher: FIFO within a level, and where a request goes back. */
  readonly seq: number;
  /** Priority level: 1 is the highest; 0 when the model has no levels. */
  readonly level: number;
  /** When its queue timeout expires, ms since the epoch; Infinity = none (or already delayed). */
  queueDeadline: number;
  /** Its absolute deadline (the gateway's), ms since the epoch. */
  readonly deadline: number;
  /** Its queue timeout expired under DELAY: it now waits behind the level's unexpired requests. */
  delayed: boolean;
}

interface Level<T> {
  readonly main: Queued<T>[];
  readonly delayed: Queued<T>[];
}

/**
 * Triton's priority queue: one FIFO per level, each with a "delayed" FIFO
 * behind it for requests whose timeout expired under DELAY. Walk order is
 * level 1 first; within a level, unexpired requests, then delayed ones.
 */
export class PendingQueue<T> {
  private readonly levels = new Map<number, Level<T>>();
  private order: number[] = [];
  private cached: Queued<T>[] | null = null;
  private count = 0;

  get size(): number {
    return this.count;
  }

  private level(n: number): Level<T> {
    let l = this.levels.get(n);
    if (!l) {
      l = { main: [], delayed: [] };
      this.levels.set(n, l);
      this.order = [...this.levels.keys()].sort((a, b) => a - b);
    }
    return l;
  }

  /** Add in arrival order (or put back a request taken out, at its place by `seq`). */
  push(r: Queued<T>): void {
    const l = this.level(r.level);
    const list = r.delayed ? l.delayed : l.main;
    let i = list.length;
    while (i > 0 && (list[i - 1] as Queued<T>).seq > r.seq) i--;
    list.splice(i, 0, r);
    this.count++;
    this.cached = null;
  }

  /** Every pending request in walk order. */
  walk(): readonly Queued<T>[] {
    if (!this.cached) {
      this.cached = [];
      for (const n of this.order) {
        const l = this.levels.get(n) as Level<T>;
        this.cached.push(...l.main, ...l.delayed);
      }
    }
    return this.cached;
  }

  remove(rs: readonly Queued<T>[]): void {
    const gone = new Set(rs);
    for (const l of this.levels.values()) {
      for (const list of [l.main, l.delayed]) {
        for (let i = list.length - 1; i >= 0; i--) {
          if (gone.has(list[i] as Queued<T>)) {
            list.splice(i, 1);
            this.count--;
          }
        }
      }
    }
    this.cached = null;
  }

  /**
   * Apply deadlines at `now`: requests past their absolute deadline, and
   * those past their queue timeout under REJECT, are taken out and returned;
   * those past their queue timeout under DELAY move behind their level.
   */
  expire(now: number, rejects: (level: number) => boolean): { overdue: Queued<T>[]; rejected: Queued<T>[] } {
    const overdue: Queued<T>[] = [];
    const rejected: Queued<T>[] = [];
    for (const r of this.walk()) {
      if (r.deadline <= now) overdue.push(r);
      else if (r.queueDeadline <= now) {
        if (rejects(r.level)) rejected.push(r);
        else {
          const l = this.level(r.level);
          l.main.splice(l.main.indexOf(r), 1);
          r.queueDeadline = Number.POSITIVE_INFINITY;
          r.delayed = true;
          this.count--;
          this.push(r);
        }
      }
    }
    if (overdue.length + rejected.length > 0) this.remove([...overdue, ...rejected]);
    this.cached = null;
    return { overdue, rejected };
  }

  /** The nearest queue timeout or deadline still ahead, ms since the epoch (Infinity = none). */
  nextExpiry(): number {
    let t = Number.POSITIVE_INFINITY;
    for (const r of this.walk()) t = Math.min(t, r.queueDeadline, r.deadline);
    return t;
  }

  /** Everything, emptied (shutdown). */
  drain(): Queued<T>[] {
    const all = [...this.walk()];
    this.levels.clear();
    this.order = [];
    this.count = 0;
    this.cached = null;
    return all;
  }
}
