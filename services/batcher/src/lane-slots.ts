import type { Broker, Channel } from '@ge-mesh/broker';
import { type BatchStore, parseLanesNotice, WorkerRegistry } from '@ge-mesh/store';
import type { Logger } from '@ge-mesh/telemetry';

const POLL_MS = 1_000;
const POLL_NO_LANES_MS = 250;

/**
 * How many worker lanes serve a model now, and how many of the model's
 * batches are in flight (formed and not yet finished by a worker).
 *
 * Lanes: the ready lanes that live workers register for the model (worker
 * registry in Redis; a worker consumes the batch queue once per device with a
 * prefetch of that device's lanes); before any worker registered, the
 * queue's consumer count × lanes per worker from the model config
 * (instance_group counts × served versions). It is polled, and a change is
 * reported. In-flight batches live in Redis (create-batch adds, the
 * worker's finish-batch removes and publishes on the model's lanes channel,
 * which wakes this batcher at once).
 */
export class LaneSlots {
  lanes = 0;
  /** The model's measured lane time per tier, ms (workers report it; re-read on every poll). */
  costs: ReadonlyMap<number, number> = new Map();
  private ch?: Channel;
  private timer?: NodeJS.Timeout;
  private sub?: BatchStore['redis'];
  private stopped = false;
  private readonly registry: WorkerRegistry;
  /** In-flight batches as last read or counted; undefined = read Redis next time. */
  private known?: number;
  private reads = 0;
  /** create-batch calls of this batcher under way (their effect on a notified count is unknown). */
  private recording = 0;

  constructor(
    private readonly broker: Broker,
    private readonly store: BatchStore,
    private readonly model: string,
    private readonly batchQueue: string,
    private readonly lanesPerWorker: number,
    private readonly log: Logger,
    /** Called when a lane frees up or the lane count changes. */
    private readonly onChange: () => void,
  ) {
    this.registry = new WorkerRegistry(store.redis, store.namespace);
  }

  async start(): Promise<void> {
    this.sub = this.store.redis.duplicate();
    this.sub.on('error', (err: Error) => this.log.warn({ err: err.message }, 'lane notifications: redis error'));
    this.sub.on('message', (_channel: string, message: string) => {
      this.invalidate();
      // The count just after the finish, unless a batch of ours is being recorded meanwhile (it
      // may or may not be in that count): then it is read again when next needed.
      const { inFlight } = parseLanesNotice(message);
      if (inFlight !== undefined && this.recording === 0) this.known = inFlight;
      this.onChange();
    });
    await this.sub.subscribe(this.store.lanesChannel(this.model));
    await this.poll();
  }

  /**
   * Batches of the model formed and not yet finished. Read from Redis only
   * when something may have changed it behind this batcher's back (a finish
   * notification, a poll, a refused create-batch); in between, this batcher's
   * own batches are counted here, so forming a batch costs no extra round
   * trip. create-batch enforces the limit atomically either way: a stale
   * count can only make a batcher try early (and be refused) or wait for the
   * next notification.
   */
  async inFlight(): Promise<number> {
    if (this.known === undefined) {
      const stamp = ++this.reads;
      const n = await this.store.inFlight(this.model);
      // A notification during the read makes it stale again.
      if (stamp === this.reads) this.known = n;
      return n;
    }
    return this.known;
  }

  /** This batcher calls create-batch; `recorded` is told what came of it. */
  forming(): { recorded(took: boolean): void; observed(inFlight: number): void; failed(): void } {
    this.recording++;
    let open = true;
    const end = () => {
      if (open) this.recording--;
      open = false;
    };
    return {
      /** create-batch ran: it took a lane slot, or not (the count is unchanged). */
      recorded: (took) => {
        end();
        if (took && this.known !== undefined) this.known++;
      },
      /** create-batch refused for want of a lane and reported the count. */
      observed: (inFlight) => {
        end();
        this.known = inFlight;
      },
      /** No answer from Redis: the count is read again when next needed. */
      failed: () => {
        end();
        this.invalidate();
      },
    };
  }

  private invalidate(): void {
    this.known = undefined;
    this.reads++;
  }

  private async poll(): Promise<void> {
    if (this.stopped) return;
    try {
      if (!this.ch) {
        // Its own channel: checking a queue that was deleted closes the channel it ran on.
        const ch = await this.broker.connection.createChannel();
        ch.on('error', () => undefined);
        ch.on('close', () => {
          if (this.ch === ch) this.ch = undefined;
        });
        this.ch = ch;
      }
      const { consumerCount } = await this.ch.checkQueue(this.batchQueue);
      // Lanes ready for the model on live workers (the worker registry); a worker's lane count
      // depends on its devices and the model's placement. No consumer left: no lane, at once.
      const registered = consumerCount > 0 ? await this.registry.liveLanes(this.model) : 0;
      const lanes = registered > 0 ? registered : consumerCount * this.lanesPerWorker;
      this.costs = await this.store.tierCosts(this.model);
      // Slots also lapse in Redis (a dead worker's batches): re-read now and then.
      this.invalidate();
      if (lanes !== this.lanes) {
        this.log.info({ model: this.model, lanes, workers: consumerCount }, 'live lanes');
        this.lanes = lanes;
        this.onChange();
      }
    } catch (err) {
      this.log.debug({ err: (err as Error).message, model: this.model }, 'lane count not read');
    }
    if (!this.stopped) this.timer = setTimeout(() => void this.poll(), this.lanes > 0 ? POLL_MS : POLL_NO_LANES_MS);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.sub?.quit().catch(() => undefined);
    await this.ch?.close().catch(() => undefined);
  }
}
