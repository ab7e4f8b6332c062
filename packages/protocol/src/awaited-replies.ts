interface Waiter<T> {
  resolve: (value: T) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

/**
 * Replies awaited by correlation id, each with its own deadline: the request
 * side of request/reply over a broker (the gateway's reply queue, the AMQP
 * client's). A reply for an id no one waits for (late, or a duplicate) is
 * refused, so the caller can count or drop it.
 */
export class AwaitedReplies<T> {
  private readonly waiting = new Map<string, Waiter<T>>();

  /** @param timedOut what a wait ends with when no reply came in time: a value, or an Error to reject with */
  constructor(private readonly timedOut: (timeoutMs: number) => T | Error) {}

  wait(id: string, timeoutMs: number): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        const end = this.timedOut(timeoutMs);
        if (end instanceof Error) reject(end);
        else resolve(end);
      }, timeoutMs);
      this.waiting.set(id, { resolve, reject, timer });
    });
  }

  /** Is a reply with this id awaited? */
  has(id: string): boolean {
    return this.waiting.has(id);
  }

  /** Ends the wait for `id` with its reply; false when no one waits for it. */
  resolve(id: string, value: T): boolean {
    const w = this.take(id);
    w?.resolve(value);
    return w !== undefined;
  }

  /** Ends the wait for `id` with an error; false when no one waits for it. */
  reject(id: string, err: Error): boolean {
    const w = this.take(id);
    w?.reject(err);
    return w !== undefined;
  }

  /** Ends every wait with `err` (the connection is gone). */
  rejectAll(err: Error): void {
    for (const id of [...this.waiting.keys()]) this.reject(id, err);
  }

  /** Stops waiting for `id`; its promise never settles (the caller has gone). */
  cancel(id: string): void {
    this.take(id);
  }

  get size(): number {
    return this.waiting.size;
  }

  private take(id: string): Waiter<T> | undefined {
    const w = this.waiting.get(id);
    if (!w) return undefined;
    this.waiting.delete(id);
    clearTimeout(w.timer);
    return w;
  }
}
