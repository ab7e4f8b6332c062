import type { Broker, Channel, ConsumeMessage, Topology } from '@ge-mesh/broker';
import {
  type DynamicBatchingConfig,
  describeGears,
  gearClassOf,
  priorityLevel,
  type RepositoryModel,
  rowDimsOf,
} from '@ge-mesh/model-repository';
import {
  decode,
  type InferRequestMessage,
  isRequestBundle,
  type RequestBundleMessage,
  TRITON_MESSAGES,
  versionMismatch,
  type WireError,
} from '@ge-mesh/protocol';
import { type BatchStore, levelPolicy, queueTimeoutUs } from '@ge-mesh/store';
import type { Logger } from '@ge-mesh/telemetry';
import { epochMs, tracingActive } from '@ge-mesh/telemetry/tracing';
import {
  type BatchShape,
  type Decision,
  decide,
  type PolicyName,
  type Slots,
  type TierCost,
  tierCostModel,
} from './batch-policy.js';
import { type BatchElements, BatchPublisher } from './batch-publisher.js';
import { batchShape, byGearClass, gearClassCost, gearClassShape } from './batch-shape.js';
import { type Delivery, type Pending, RequestAnswers } from './held-requests.js';
import { LaneSlots } from './lane-slots.js';
import { PendingQueue } from './pending-queue.js';
import { RequestIntake } from './request-intake.js';
import { refuseUnloadedBatches } from './unloaded-batches.js';

export interface ModelBatcherOptions {
  /** Batches per live lane that may wait in the batch queue for a lane to free up. */
  stagedBatches: number;
  policy: PolicyName;
  /** Told of every batch published (metrics): its tier and rows, and its input elements, real and run (padding included). */
  onBatchPublished?: (tier: number, rows: number, elements: BatchElements) => void;
}

/** Fallback re-check while waiting for a lane, should a finish notification be missed. */
const SLOT_POLL_MS = 200;
/** Requests held this long with no batch formed for want of a lane slot are worth a warning (and again as long as it lasts). */
const STALL_WARN_MS = 5_000;
const RETRY_MS = 50;
const PREFETCH_CAP = 4096;
/** Requests a batcher holds at least for a model with priority levels and an unbounded queue. */
const PRIORITY_WINDOW = 256;
/** How long an unloaded model's batcher keeps answering what is still queued for it. */
const RETIRE_DRAIN_MS = 5_000;

/** Priority levels of a model: 1..N, or just 0 when it has none. */
function levelsOf(db: DynamicBatchingConfig | undefined): number[] {
  const n = db?.priorityLevels ?? 0;
  return n > 0 ? Array.from({ length: n }, (_, i) => i + 1) : [0];
}

/**
 * Batches the requests of one model: takes them in (RequestIntake), holds
 * them in Triton's priority queue, and asks the batch policy when to form
 * which batch; BatchPublisher records and publishes it, RequestAnswers
 * answers what no batch will carry. Requests stay unacked in the broker
 * until the batch carrying them is confirmed on the batch queue, so a crash
 * at any point loses nothing; claims in Redis (create-batch) keep a
 * redelivered request from being answered twice.
 */
export class ModelBatcher {
  private readonly queue = new PendingQueue<Delivery>();
  private readonly shape: BatchShape;
  private readonly db: DynamicBatchingConfig | undefined;
  private readonly levels: number[];
  /** Admission queues of the levels with a max_queue_size (the gateway counts them). */
  private readonly queueKeys = new Map<number, string>();
  /** Triton stages batches ahead only without priorities and queue policies; otherwise they form when a lane is idle. */
  private readonly stages: number;
  private readonly preserveOrdering: boolean;
  private readonly slots: LaneSlots;
  private readonly intake: RequestIntake;
  private readonly answers: RequestAnswers;
  private readonly batches: BatchPublisher;
  private seq = 0;
  private scheduled = false;
  /** Since when no batch was formed for want of a lane slot (warnIfStalled). */
  private stall?: { since: number; warnedAt: number };
  private evaluating = false;
  private again = false;
  private stopping = false;
  /** Giving held requests back (shutdown, or lost lead): form no more batches. */
  private releasing = false;
  /** The model was unloaded: every request held or arriving is answered with this (see retire). */
  private retiring?: WireError;
  private timer?: NodeJS.Timeout;
  private readonly inFlight = new Set<Promise<void>>();
  /** Deliveries still being checked in Redis, in arrival order (see onRequest). */
  private arrivals: Promise<void> | null = null;
  private cost: { from: ReadonlyMap<number, number>; model: TierCost } | undefined;

  constructor(
    readonly model: RepositoryModel,
    private readonly broker: Broker,
    private readonly store: BatchStore,
    private readonly topo: Topology,
    private readonly opts: ModelBatcherOptions,
    private readonly log: Logger,
  ) {
    const c = model.config;
    this.db = c.dynamicBatching;
    this.shape = batchShape(model);
    this.levels = levelsOf(this.db);
    const policies = this.db ? this.levels.map((l) => levelPolicy(this.db as DynamicBatchingConfig, l)) : [];
    for (const [i, p] of policies.entries()) {
      const level = this.levels[i] as number;
      if (p.maxQueueSize > 0) this.queueKeys.set(level, store.queueKey(model.name, level));
    }
    const queuePolicies =
      (this.db?.priorityLevels ?? 0) > 0 ||
      policies.some((p) => p.defaultTimeoutMicroseconds > 0 || p.allowTimeoutOverride || p.maxQueueSize > 0);
    this.stages = queuePolicies || opts.policy === 'triton' ? 0 : opts.stagedBatches;
    this.preserveOrdering = this.db?.preserveOrdering ?? false;
    const lanesPerWorker =
      Math.max(
        1,
        c.instanceGroup.reduce((n, g) => n + g.count, 0),
      ) * model.versions.length;
    this.intake = new RequestIntake(
      broker,
      store,
      {
        model: model.name,
        queue: topo.requests(model.name),
        leadOnly: this.preserveOrdering,
        wantedPrefetch: () => this.wantedPrefetch(),
        onRequest: (ch, msg) => this.onRequest(ch, msg),
        onLeadLost: () => this.releaseRequests(),
      },
      log,
    );
    this.slots = new LaneSlots(broker, store, model.name, topo.batches(model.name), lanesPerWorker, log, () => {
      void this.intake.resizePrefetch();
      this.schedule();
    });
    this.answers = new RequestAnswers(broker, store, model.name, this.queueKeys, log);
    this.batches = new BatchPublisher({
      model,
      broker,
      store,
      queue: topo.batches(model.name),
      slots: this.slots,
      answers: this.answers,
      queueKeys: this.queueKeys,
      putBack: (m) => this.queue.push(m),
      track: (p) => this.track(p),
      log,
      onBatchPublished: opts.onBatchPublished,
    });
  }

  async start(): Promise<void> {
    // Deliveries of a lost connection are void (the broker requeues them): forget what was held.
    this.broker.onLost(() => this.connectionLost());
    await this.slots.start();
    // Declared and consumed again after every reconnect; a preserve_ordering model consumes only
    // while it leads (the lead tick takes it up again).
    await this.broker.onReady(async () => {
      const setup = await this.broker.channel();
      await this.broker.assertWorkQueue(setup, this.topo.requests(this.model.name));
      await this.broker.assertWorkQueue(setup, this.topo.batches(this.model.name));
      await setup.close();
      await this.intake.connected();
    });
    await this.intake.start();
  }

  /** Requests held and not batched yet, and when the oldest was accepted (read when metrics are scraped). */
  pending(): { requests: number; oldestAcceptedAt: number | undefined } {
    let oldest: number | undefined;
    for (const p of this.queue.walk()) if (oldest === undefined || p.enqueuedAt < oldest) oldest = p.enqueuedAt;
    return { requests: this.queue.size, oldestAcceptedAt: oldest };
  }

  private connectionLost(): void {
    this.intake.lost();
    this.queue.drain();
    clearTimeout(this.timer);
  }

  /** Limits on batches in flight: `idle` (one per lane) and `total` (with staging). */
  private limits(): { idle: number; total: number } {
    const lanes = this.slots.lanes;
    if (lanes === 0) return { idle: 0, total: 0 };
    // Responses keep request order only if batches run one at a time.
    if (this.preserveOrdering) return { idle: 1, total: 1 };
    return { idle: lanes, total: lanes * (1 + this.stages) };
  }

  /**
   * Enough unacked requests to fill every batch that may be in flight plus
   * the one forming, and no more: the rest wait in the broker, where other
   * replicas can take them. Priorities can only order requests the batcher
   * holds, so with priority levels it holds more: the whole admitted queue
   * when every level is bounded, else at least PRIORITY_WINDOW requests.
   */
  private wantedPrefetch(): number {
    let n = this.shape.maxBatch * (Math.max(1, this.limits().total) + 1);
    if (this.db && this.db.priorityLevels > 0) {
      const db = this.db;
      const bounded = this.levels.every((l) => this.queueKeys.has(l));
      const total = this.levels.reduce((s, l) => s + levelPolicy(db, l).maxQueueSize, 0);
      n = Math.max(n, bounded ? total : PRIORITY_WINDOW);
    }
    return Math.min(PREFETCH_CAP, n);
  }

  private levelOf(priority: number): number {
    return priorityLevel(this.db, priority);
  }

  private onRequest(ch: Channel, msg: ConsumeMessage): void {
    // Only a traced request uses it (its queue-wait span marks it).
    const receivedAt = tracingActive() ? epochMs() : 0;
    let decoded: InferRequestMessage | RequestBundleMessage;
    try {
      decoded = decode<InferRequestMessage | RequestBundleMessage>(msg.content);
    } catch (err) {
      // Not ours to answer (no reply route can be read): dead-letter it.
      this.log.error({ err }, 'undecodable request dead-lettered');
      this.answers.settle(msg, 'reject');
      return;
    }
    const mismatch = versionMismatch(decoded.v, isRequestBundle(decoded) ? 'bundle of requests' : 'request');
    if (mismatch) {
      this.log.error({ model: this.model.name, err: mismatch.message }, 'request of another protocol version refused');
      // A bundle reads as a request: its one answer reaches every member (bundledIds).
      this.track(this.answers.refuse(msg, decoded as InferRequestMessage, mismatch));
      return;
    }
    if (isRequestBundle(decoded)) {
      // Each member is taken as if it came alone; the bundle is acked once all of them are.
      for (const part of this.broker.split(msg, decoded.requests)) this.onRequest(ch, part);
      return;
    }
    const req = decoded;
    if (this.retiring) {
      this.track(this.answers.refuse(msg, req, this.retiring));
      return;
    }
    if (!msg.fields.redelivered && !this.arrivals) {
      this.enqueue(ch, msg, req, receivedAt);
      return;
    }
    // A redelivered request (its previous holder died or gave it back) may already be batched
    // or answered: ask Redis first. Arrivals behind it wait their turn, so FIFO order holds.
    const next = (this.arrivals ?? Promise.resolve()).then(async () => {
      if (msg.fields.redelivered) {
        const claim = await this.store.reclaimRequest(req.id, this.model.name).catch(() => 'free' as const);
        this.log.debug({ model: this.model.name, id: req.id, claim }, 'redelivered request');
        if (claim === 'drop') {
          this.answers.settle(msg, 'ack');
          return;
        }
      }
      this.enqueue(ch, msg, req, receivedAt);
    });
    this.arrivals = next;
    void next.finally(() => {
      if (this.arrivals === next) this.arrivals = null;
    });
  }

  private enqueue(ch: Channel, msg: ConsumeMessage, req: InferRequestMessage, receivedAt: number): void {
    // Its channel closed while Redis was asked about it: the broker gives it to us again.
    if (ch !== this.intake.channel) return;
    if (this.retiring) {
      this.track(this.answers.refuse(msg, req, this.retiring));
      return;
    }
    const batched = this.model.config.maxBatchSize > 0;
    const gears = this.model.config.gears;
    const gearClass = gears ? gearClassOf(gears, { rows: req.batch, dims: rowDimsOf(gears, req.inputs) }) : undefined;
    if (gears && !gearClass) {
      // The gateway refuses such requests; one from another config generation may still arrive.
      const message = `the request's input shapes fit no gear of model '${this.model.name}' (gears: ${describeGears(gears)})`;
      this.track(this.answers.refuse(msg, req, { code: 'GEAR_MISMATCH', message }));
      return;
    }
    // Under the tier-aware policy a gear model's requests group by gear class; Triton's groups equal shapes.
    const shapeKey =
      gearClass && this.opts.policy !== 'triton'
        ? gearClass.key
        : req.inputs
            .map((t) => `${t.name}:${t.datatype}:${(batched ? t.shape.slice(1) : t.shape).join('x')}`)
            .sort()
            .join('|');
    const level = this.levelOf(req.priority);
    const enqueuedAt = Math.min(req.acceptedAt, Date.now());
    const timeoutUs = this.db ? queueTimeoutUs(levelPolicy(this.db, level), req.timeoutUs) : 0;
    this.queue.push({
      item: gearClass ? { msg, req, receivedAt, gearClass } : { msg, req, receivedAt },
      rows: batched ? req.batch : 1,
      shapeKey,
      enqueuedAt,
      seq: this.seq++,
      level,
      queueDeadline: timeoutUs > 0 ? enqueuedAt + timeoutUs / 1000 : Number.POSITIVE_INFINITY,
      deadline: req.deadline,
      delayed: false,
    });
    this.schedule();
  }

  /** Coalesces a burst of arrivals into one evaluation. */
  private schedule(): void {
    if (this.evaluating) {
      this.again = true;
      return;
    }
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.evaluate();
    });
  }

  private wakeAt(at: number): void {
    clearTimeout(this.timer);
    if (at === Number.POSITIVE_INFINITY) return;
    this.timer = setTimeout(() => this.schedule(), Math.max(0, Math.ceil(at - Date.now())));
  }

  private async evaluate(): Promise<void> {
    if (this.evaluating || this.stopping || this.releasing || !this.intake.channel) return;
    this.evaluating = true;
    clearTimeout(this.timer);
    let wake = Number.POSITIVE_INFINITY;
    try {
      do {
        this.again = false;
        wake = Number.POSITIVE_INFINITY;
        const now = Date.now();
        const { overdue, rejected } = this.queue.expire(now, (level) => this.rejects(level));
        for (const p of [...overdue, ...rejected]) {
          this.track(this.answers.answerError(p, { code: 'TIMEOUT', message: TRITON_MESSAGES.timeout }));
        }
        if (this.queue.size === 0) {
          this.stall = undefined;
          break;
        }
        const limits = this.limits();
        const inFlight = limits.total > 0 ? await this.slots.inFlight() : 0;
        const { d, pending } = this.decideNext(this.queue.walk(), {
          laneIdle: inFlight < limits.idle,
          stageFree: inFlight < limits.total,
        });
        wake = this.queue.nextExpiry();
        if (d.kind === 'wait') {
          if (d.until !== null) wake = Math.min(wake, d.until);
          // Waiting for a lane: a finish notification wakes us; poll too, in case one is missed.
          else if (inFlight >= limits.idle && limits.total > 0) wake = Math.min(wake, Date.now() + SLOT_POLL_MS);
          // With no lane at all there is no slot to wait for: 'live lanes' said so when it went.
          if (d.until === null && limits.total > 0) await this.warnIfStalled(inFlight, limits.total);
          break;
        }
        const members = pending.slice(0, d.take);
        this.queue.remove(members);
        const formed = await this.batches.form(members, d.tier, d.rows, limits.total, inFlight < limits.idle);
        if (formed === 'no-lane') {
          wake = Math.min(wake, Date.now() + SLOT_POLL_MS);
          break;
        }
        if (formed === 'error') {
          wake = Math.min(wake, Date.now() + RETRY_MS);
          break;
        }
        this.stall = undefined;
        this.again = true;
      } while (this.again && !this.stopping && !this.releasing);
    } catch (err) {
      this.log.error({ err, model: this.model.name }, 'batch evaluation failed');
      wake = Date.now() + RETRY_MS;
    } finally {
      this.evaluating = false;
    }
    if (this.again) this.schedule();
    else this.wakeAt(wake);
  }

  /**
   * Requests held and no batch formed for STALL_WARN_MS because every lane
   * slot is taken: say so, with this batcher's count and Redis's (a count
   * that differs points at a lost finish notification; slots that stay taken
   * in Redis point at batches no worker finishes, which lapse with their
   * members' deadlines).
   */
  private async warnIfStalled(inFlight: number, limit: number): Promise<void> {
    const now = Date.now();
    this.stall ??= { since: now, warnedAt: now };
    if (now - this.stall.warnedAt < STALL_WARN_MS) return;
    this.stall.warnedAt = now;
    const inRedis = await this.store.inFlightBatches(this.model.name).catch(() => undefined);
    this.log.warn(
      {
        model: this.model.name,
        pending: this.queue.size,
        lanes: this.slots.lanes,
        limit,
        inFlight,
        inRedis,
        waitingMs: now - this.stall.since,
      },
      'no batch formed: every lane slot is taken',
    );
  }

  /**
   * The next batch to form, and the requests its `take` counts from. A model
   * with gears decides per gear class (every class in one group under
   * --policy triton, where the first shape change closes a batch), the first
   * class ready to send wins.
   */
  private decideNext(pending: readonly Pending[], slots: Slots): { d: Decision; pending: readonly Pending[] } {
    const gears = this.model.config.gears;
    const now = Date.now();
    const policy = this.opts.policy;
    if (!gears)
      return { d: decide({ pending, shape: this.shape, now, slots, policy, cost: this.tierCost() }), pending };
    let until: number | null = null;
    for (const group of policy === 'triton' ? [pending] : byGearClass(pending)) {
      const cls = group[0]?.item.gearClass;
      if (!cls) continue;
      const shape = gearClassShape(this.model, this.shape, cls);
      const d = decide({ pending: group, shape, now, slots, policy, cost: gearClassCost(gears, cls) });
      if (d.kind === 'send') return { d, pending: group };
      if (d.until !== null) until = until === null ? d.until : Math.min(until, d.until);
    }
    return { d: { kind: 'wait', until }, pending };
  }

  /** Lane time per tier, from what the workers measured (rebuilt when the measurements change). */
  private tierCost(): TierCost {
    const costs = this.slots.costs;
    if (this.cost?.from !== costs) this.cost = { from: costs, model: tierCostModel(this.shape.tiers, costs) };
    return this.cost.model;
  }

  private rejects(level: number): boolean {
    return !this.db || levelPolicy(this.db, level).timeoutAction === 'REJECT';
  }

  private track(p: Promise<void>): void {
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p));
  }

  /** Stop taking requests; those held and not batched go back to the broker. */
  private async releaseRequests(): Promise<void> {
    if (!this.intake.channel) return;
    this.releasing = true;
    await this.intake.cancel();
    clearTimeout(this.timer);
    while (this.evaluating) await new Promise((r) => setTimeout(r, 5));
    // Batches already recorded are published and their requests acked on this channel.
    await Promise.allSettled([...this.inFlight]);
    this.queue.drain();
    // Closing the channel requeues every delivery still unacked.
    await this.intake.close();
    this.releasing = false;
  }

  /**
   * The model was unloaded: the batches a worker took go on, and every
   * request held or still queued for the model is answered at once with
   * MODEL_NOT_READY (instead of waiting for its deadline), for up to
   * RETIRE_DRAIN_MS, and so are the members of batches left in the batch
   * queue once this batcher publishes no more; then the batcher stops.
   */
  async retire(): Promise<void> {
    const refusal: WireError = {
      code: 'MODEL_NOT_READY',
      message: `model '${this.model.name}' was unloaded while the request was queued`,
    };
    this.retiring = refusal;
    clearTimeout(this.timer);
    while (this.evaluating) await new Promise((r) => setTimeout(r, 5));
    for (const p of this.queue.drain()) this.track(this.answers.unloaded(p, refusal));
    const queue = this.topo.requests(this.model.name);
    const until = Date.now() + RETIRE_DRAIN_MS;
    for (let ch = this.intake.channel; ch && Date.now() < until; ch = this.intake.channel) {
      const left = await ch.checkQueue(queue).then(
        (q) => q.messageCount,
        () => 0,
      );
      if (left === 0) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    // Nothing more is published: batches no worker took are answered too.
    await Promise.allSettled([...this.inFlight]);
    const { broker, store, log } = this;
    await refuseUnloadedBatches({ broker, store, log }, this.topo.batches(this.model.name), (req) =>
      this.answers.sendError(req, refusal),
    ).catch((err: Error) =>
      log.error({ err: err.message, model: this.model.name }, 'batches left queued after the unload'),
    );
    await this.stop();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.intake.stop();
    await this.releaseRequests();
    await this.intake.resign();
    await this.slots.stop();
  }
}
