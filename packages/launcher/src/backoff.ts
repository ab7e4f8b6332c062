/**
 * Restart delays for one supervised service: capped exponential backoff, so
 * a service that dies at once (the broker or Redis still down, a bad config)
 * is not respawned in a tight loop, while one that ran fine for a while and
 * then crashed comes back quickly.
 */
export interface BackoffOptions {
  /** Delay before the first restart. */
  initialMs: number;
  /** The delay doubles per restart up to this. */
  maxMs: number;
  /** A run at least this long counts as healthy: the next restart starts over at `initialMs`. */
  resetAfterMs: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 500, maxMs: 15_000, resetAfterMs: 30_000 };

export interface RestartPlan {
  /** 1 for the first restart after a healthy run, then 2, 3, … while the service keeps dying early. */
  attempt: number;
  delayMs: number;
}

export class Backoff {
  private attempt = 0;

  constructor(private readonly opts: BackoffOptions = DEFAULT_BACKOFF) {
    if (!(opts.initialMs >= 0 && opts.maxMs >= opts.initialMs && opts.resetAfterMs >= 0))
      throw new Error(`invalid backoff ${JSON.stringify(opts)}`);
  }

  /** The next restart of a process that ran `upMs` before it exited. */
  next(upMs: number): RestartPlan {
    if (upMs >= this.opts.resetAfterMs) this.attempt = 0;
    this.attempt++;
    // 2 ** 30 is already far beyond any sane cap; keeping the exponent small avoids Infinity.
    const delayMs = Math.min(this.opts.initialMs * 2 ** Math.min(this.attempt - 1, 30), this.opts.maxMs);
    return { attempt: this.attempt, delayMs };
  }
}
