import { randomUUID } from 'node:crypto';
import { afterWrites, type Broker } from '@ge-mesh/broker';
import { gearElements, gearFor, memberElements, type RepositoryModel, rowDimsOf } from '@ge-mesh/model-repository';
import { type BatchMessage, PROTOCOL_VERSION, withEncoded } from '@ge-mesh/protocol';
import type { BatchStore } from '@ge-mesh/store';
import type { Logger } from '@ge-mesh/telemetry';
import { traceBatch } from './batch-tracing.js';
import type { Pending, RequestAnswers } from './held-requests.js';
import type { LaneSlots } from './lane-slots.js';
import { crashArmed, crashPoint } from './test-faults.js';

/** Input elements of a batch: those its requests sent, and those run (tier and gear padding included). */
export interface BatchElements {
  readonly real: number;
  readonly run: number;
}

/** What came of forming a batch: recorded (or its members settled), no lane slot free, or Redis failed. */
export type Formed = 'ok' | 'no-lane' | 'error';

export interface BatchPublisherDeps {
  readonly model: RepositoryModel;
  readonly broker: Broker;
  readonly store: BatchStore;
  /** The model's batch queue. */
  readonly queue: string;
  readonly slots: LaneSlots;
  readonly answers: RequestAnswers;
  /** Admission queue of each level with a max_queue_size. */
  readonly queueKeys: ReadonlyMap<number, string>;
  /** Gives a member back to the batcher's queue (its batch was refused). */
  readonly putBack: (m: Pending) => void;
  /** Keeps a publish in flight until it settles (shutdown and unload wait for them). */
  readonly track: (p: Promise<void>) => void;
  readonly log: Logger;
  /** Told of every batch published (metrics): its tier and rows, and its input elements, real and run (padding included). */
  readonly onBatchPublished?: (tier: number, rows: number, elements: BatchElements) => void;
}

/** The longest an idle lane's batch waits for its confirm before create-batch is written anyway. */
const CONFIRM_WAIT_MS = 20;

/** Resolves when `p` settles, either way, or after `ms`, whichever comes first. */
function settledWithin(p: Promise<unknown>, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    const done = () => {
      clearTimeout(timer);
      resolve();
    };
    p.then(done, done);
  });
}

/**
 * Turns the members the batch policy chose into a batch: recorded in Redis
 * (create-batch claims them, takes a lane slot, takes them out of the
 * admission queues) and published to the model's batch queue, its members
 * acked once the broker confirmed it.
 */
export class BatchPublisher {
  constructor(private readonly d: BatchPublisherDeps) {}

  /**
   * Record a batch in Redis (create-batch) and publish it. A batch for an
   * idle lane is published first and create-batch written once the broker
   * has it, so neither the Redis round trip nor Redis's work is on the way
   * of a request that runs at once; its members are acked only once
   * create-batch took it. Such a batch often reaches its worker first: then
   * start-batch writes it, taking free claims only, and create-batch
   * completes it (details, lane slot, admission queues) and names the
   * members it does not hold. Should create-batch refuse it, the batch sent
   * is an orphan: its members go back to the queue as they would have
   * anyway, and start-batch lets the orphan run only the members no other
   * batch holds, so each is answered once. A batch for a busy lane would
   * wait anyway: it is published after create-batch, as before.
   */
  async form(members: Pending[], tier: number, rows: number, maxInFlight: number, laneIdle: boolean): Promise<Formed> {
    const { store, slots, log } = this.d;
    const model = this.d.model.name;
    const batchId = randomUUID();
    const version = members[0]?.item.req.version ?? '';
    const slot = slots.forming();
    const queueKeys = [...new Set(members.flatMap((m) => this.d.queueKeys.get(m.level) ?? []))];
    const sent = laneIdle ? this.send(batchId, version, members, tier, rows) : undefined;
    sent?.catch(() => undefined); // settled in publish(), or left to the orphan's worker
    // create-batch waits until the broker has the batch (fast mode: its confirm, a broker turn, for at
    // most CONFIRM_WAIT_MS, so a stalled broker does not hold this model's batching; durable mode,
    // where a confirm is a quorum write of milliseconds: until it has left). On two cores, Redis
    // running the script while the broker hands the batch to a worker delays the worker.
    if (sent) await (this.d.broker.persistent ? afterWrites() : settledWithin(sent, CONFIRM_WAIT_MS));
    const creating = store.createBatch(
      {
        batchId,
        model,
        version,
        tier,
        rows,
        members: members.map(({ item: { req } }) => ({
          id: req.id,
          rows: req.batch,
          replyTo: req.replyTo,
          correlationId: req.correlationId,
          deadline: req.deadline,
        })),
      },
      { maxInFlight, queueKeys },
    );
    if (sent && crashArmed('sent')) {
      // The window under test: both writes have left, neither is answered.
      await afterWrites();
      crashPoint('sent', log);
    }
    // Sent early and refused, the batch is an orphan that may still run the members it can claim.
    const putBack = (m: Pending) => this.d.putBack(sent ? { ...m, item: { ...m.item, orphaned: true } } : m);
    let res: Awaited<ReturnType<BatchStore['createBatch']>>;
    try {
      res = await creating;
    } catch (err) {
      slot.failed();
      log.error({ err, model }, 'batch not recorded; retrying');
      for (const m of members) putBack(m);
      return 'error';
    }
    // Sent early, the batch may have reached a worker before create-batch ran: start-batch wrote it.
    const took = res.ok || (sent !== undefined && res.reason === 'exists');
    slot.recorded(took);
    if (res.ok || took) {
      let carried = members;
      if (!res.ok && res.reason === 'exists') {
        // start-batch took only free claims: a member whose claim an abandoned batch holds is
        // batched again (create-batch takes such claims over). The members the batch carries left
        // their admission queues in create-batch.
        const notHeld = new Set(res.notHeldIds);
        carried = members.filter((m) => !notHeld.has(m.item.req.id));
        for (const m of members) if (notHeld.has(m.item.req.id)) this.d.putBack(m);
      }
      crashPoint('recorded', log);
      this.d.track(
        this.publish(batchId, carried, tier, rows, sent ?? this.send(batchId, version, members, tier, rows)),
      );
      return 'ok';
    }
    if (res.reason === 'claimed') {
      // Redelivered copies of requests another batch already carries (or that were answered): drop them.
      const taken = new Set(res.claimedIds);
      for (const m of members) {
        if (taken.has(m.item.req.id)) this.d.answers.settle(m.item.msg, 'ack');
        else putBack(m);
      }
      log.warn({ model, duplicates: taken.size }, 'dropped requests already batched');
      return 'ok';
    }
    for (const m of members) putBack(m);
    if (res.reason === 'no-lane') slot.observed(res.inFlight);
    return res.reason === 'no-lane' ? 'no-lane' : 'error';
  }

  /** Publish a batch (confirmed); resolves once the broker has it. */
  private async send(batchId: string, version: string, members: Pending[], tier: number, rows: number): Promise<void> {
    const model = this.d.model.name;
    const body: BatchMessage = {
      v: PROTOCOL_VERSION,
      batchId,
      model,
      version,
      tier,
      rows,
      members: members.map(({ item: { msg, req } }) => ({
        id: req.id,
        rows: req.batch,
        body: msg.content,
        ...(req.stored ? { stored: true as const } : {}),
      })),
      formedAt: Date.now(),
    };
    const traced = traceBatch(model, batchId, members, tier, rows);
    try {
      const bytes = members.reduce((n, m) => n + m.item.msg.content.byteLength, 0);
      await withEncoded(body, bytes, (encoded) =>
        this.d.broker.send(
          this.d.queue,
          encoded,
          { persistent: this.d.broker.persistent, messageId: batchId },
          traced?.context,
        ),
      );
      traced?.end();
    } catch (err) {
      traced?.fail(err);
      throw err;
    }
  }

  /** A batch create-batch took: once the broker confirms it, its requests are acked. */
  private async publish(batchId: string, members: Pending[], tier: number, rows: number, sent: Promise<void>) {
    const { answers, log } = this.d;
    try {
      await sent;
    } catch (err) {
      // The batch stays 'formed': the redelivered requests are taken over by the next batch formed
      // (create-batch), and a worker that got this one after all skips them (start-batch).
      log.error({ err, batchId }, 'batch not published; its requests go back to the queue');
      for (const m of members) answers.settle(m.item.msg, 'requeue');
      return;
    }
    crashPoint('published', log);
    // The batch stays 'formed' in Redis until a worker starts it: no Redis call here. Should this
    // batcher die before its acks reach the broker, the redelivered requests are batched again
    // (their batch still reads 'formed') and the worker that gets this batch skips them
    // (start-batch): each is run and answered once. Marking the batch published would spare that
    // rare rerun at the price of a Redis round trip for every batch.
    for (const m of members) answers.settle(m.item.msg, 'ack');
    this.d.onBatchPublished?.(tier, rows, batchElements(this.d.model, members, tier, rows));
    log.debug({ model: this.d.model.name, batchId, tier, rows, requests: members.length }, 'batch published');
  }
}

/** Input elements of a batch, real and as run (for the padding-waste metrics). */
function batchElements(model: RepositoryModel, members: readonly Pending[], tier: number, rows: number): BatchElements {
  let real = 0;
  for (const m of members) for (const t of m.item.req.inputs) real += t.shape.reduce((a, b) => a * b, 1);
  const { gears, maxBatchSize } = model.config;
  if (gears) {
    const dims = members.map((m) => ({ rows: m.item.req.batch, dims: rowDimsOf(gears, m.item.req.inputs) }));
    const gear = gearFor(gears, dims);
    if (gear) {
      // Inputs the gears do not fill have fixed rows: they are padded by rows only.
      const filled = dims.reduce((n, d) => n + memberElements(gears, d), 0);
      const fixed = real - filled;
      return { real, run: gearElements(gears, gear) + (rows > 0 ? (fixed / rows) * gear.batch : 0) };
    }
  }
  return { real, run: rows > 0 && maxBatchSize > 0 ? (real / rows) * tier : real };
}
