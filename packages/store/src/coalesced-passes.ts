/**
 * Runs `pass` one at a time, for state followed through notifications that
 * can arrive while it is being applied (model control, the worker registry):
 * a call while a pass runs asks for one more pass after it (any number of
 * such calls make one), and each caller gets the promise that settles once a
 * pass started after its call has run. A failed pass is reported to
 * `onError` and the next call (or notification) tries again.
 */
export class CoalescedPasses {
  private running?: Promise<void>;
  private again = false;

  constructor(
    private readonly pass: () => Promise<void>,
    private readonly onError: (err: Error) => void,
    /** No further pass once this holds (the service is stopping). */
    private readonly stopped: () => boolean = () => false,
  ) {}

  /** Settles once the pass running now (and any it owes) is done; at once when none runs. */
  idle(): Promise<void> {
    return this.running ?? Promise.resolve();
  }

  run(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        try {
          await this.pass();
        } catch (err) {
          this.onError(err as Error);
        }
      } while (this.again && !this.stopped());
      this.running = undefined;
    })();
    return this.running;
  }
}
