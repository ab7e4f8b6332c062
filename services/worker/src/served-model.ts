import { afterWrites, type Broker, type Channel, type ConsumeMessage, type Topology } from '@ge-mesh/broker';
import type { RepositoryModel } from '@ge-mesh/model-repository';
import { type BatchMessage, decodeBatch, memberRequests, versionMismatch, type WireError } from '@ge-mesh/protocol';
import type { EngineModelSpec } from '@ge-mesh/runtime';
import type { WorkerModelInfo, WorkerModelState } from '@ge-mesh/store';
import type { Logger } from '@ge-mesh/telemetry';
import type { BatchClaims } from './batch-claims.js';
import { traceWorkerBatch, type WorkerBatchTrace } from './batch-tracing.js';
import { sendErrorReply } from './execute-batch.js';
import { gearOutputLinks } from './gear-outputs.js';
import type { Placement } from './lane-plan.js';
import { LanePool, type LaneRun } from './lane-pool.js';
import { TEST_LANE_DELAY_MS, TEST_LOAD_DELAY_MS } from './test-faults.js';
import { warmupBatch, warmupFailure, warmupSamples } from './warmup.js';

export interface ServedModelDeps {
  readonly broker: Broker;
  readonly topo: Topology;
  readonly claims: BatchClaims;
  readonly log: Logger;
  readonly runtime: string;
  readonly runtimeOptions: Readonly<Record<string, string>>;
  /** Called when the model's state changes (the registry is told at once). */
  readonly onChange: () => void;
  /** Called when a consumer channel closes under the model while it is served. */
  readonly onChannelLost: (model: string) => void;
  /** Told of every batch run: its device, tier and how long it held a lane (metrics). */
  readonly onBatchRan?: (model: string, device: number, tier: number, laneMs: number) => void;
}

/** Batches a device's consumer holds per lane: the one running and the next. */
const BATCHES_IN_HAND_PER_LANE = 2;

interface DeviceConsumer {
  readonly device: number;
  readonly ch: Channel;
  tag?: string;
}

/**
 * One model on this worker: its lanes on every device that loads it (a
 * LanePool per device and version), warmed up before it is ready, and one
 * consumer per device on the model's shared batch queue with prefetch =
 * twice that device's lanes (the batch running and the next). RabbitMQ
 * hands a batch only to a consumer with free credit, so batches go to the
 * least-loaded devices of every worker (pull), and a slow or stuck device
 * gets nothing beyond two batches per lane.
 */
export class ServedModel {
  state: WorkerModelState = 'loading';
  error?: string;
  inflight = 0;
  batches = 0;
  private readonly pools = new Map<number, Map<string, LanePool>>();
  private readonly consumers: DeviceConsumer[] = [];
  private idle: Array<() => void> = [];
  private closing = false;
  /** Deliveries being run, with their channel and batch (once decoded). */
  private readonly inHand = new Map<ConsumeMessage, { ch: Channel; batch?: BatchMessage }>();
  /** Deliveries answered with an error by `answerInHand`: their run, if it ends, publishes and settles nothing. */
  private readonly abandoned = new Set<ConsumeMessage>();

  constructor(
    readonly model: RepositoryModel,
    readonly placement: Placement,
    readonly threads: number,
    public generation: number,
    private readonly deps: ServedModelDeps,
  ) {}

  /** A model that cannot be placed (bad device parameters): reported failed, never loaded. */
  static failed(model: RepositoryModel, generation: number, error: string, deps: ServedModelDeps): ServedModel {
    const s = new ServedModel(model, { devices: [], lanesPerDevice: 0 }, 0, generation, deps);
    s.state = 'failed';
    s.error = error;
    deps.log.error({ model: model.name, err: error }, 'model failed to load');
    return s;
  }

  get name(): string {
    return this.model.name;
  }

  get lanes(): number {
    return this.placement.devices.length * this.placement.lanesPerDevice * this.model.versions.length;
  }

  private laneSpecs(
    device: number,
    version: RepositoryModel['versions'][number],
    outputLinks: EngineModelSpec['outputLinks'],
  ): EngineModelSpec[] {
    const m = this.model;
    return Array.from({ length: this.placement.lanesPerDevice }, (_, stream) => ({
      name: m.name,
      version: version.version,
      modelPath: version.modelPath,
      inputs: m.config.input,
      outputs: m.config.output,
      tiers: m.config.tiers,
      batched: m.config.maxBatchSize > 0,
      parameters: Object.fromEntries(m.config.parameters),
      ...(m.config.ge ? { ge: m.config.ge } : {}),
      ...(m.config.gears ? { gears: m.config.gears, outputLinks } : {}),
      threads: this.threads,
      stream,
      deviceId: device,
      runtime: this.deps.runtime,
      runtimeOptions: this.deps.runtimeOptions,
    }));
  }

  /** Start every lane, warm every tier on every lane, then consume. Never throws: failure is state 'failed'. */
  async load(): Promise<void> {
    const { log } = this.deps;
    const started = Date.now();
    try {
      if (TEST_LOAD_DELAY_MS > 0) await new Promise((r) => setTimeout(r, TEST_LOAD_DELAY_MS));
      const samples = await warmupSamples(this.model);
      for (const device of this.placement.devices) {
        const byVersion = new Map<string, LanePool>();
        this.pools.set(device, byVersion);
        for (const v of this.model.versions) {
          const pool = await LanePool.start(this.laneSpecs(device, v, await gearOutputLinks(this.model, v)), log);
          byVersion.set(v.version, pool);
          const results = await pool.runOnEveryLane(samples.map((s) => warmupBatch(this.model, v.version, s)));
          const failure = warmupFailure(results.flat().map((r) => r.body));
          if (failure) throw new Error(`warmup failed on device ${device}: ${failure}`);
        }
      }
      for (const device of this.placement.devices) await this.consume(device);
      this.state = 'ready';
      log.info(
        {
          model: this.name,
          versions: this.model.versions.map((v) => v.version),
          devices: this.placement.devices,
          lanesPerDevice: this.placement.lanesPerDevice,
          threadsPerLane: this.threads,
          tiers: this.model.config.tiers,
          warmupSamples: samples.length,
          ms: Date.now() - started,
        },
        'serving',
      );
    } catch (err) {
      this.state = 'failed';
      this.error = (err as Error).message;
      log.error({ model: this.name, err: this.error }, 'model failed to load');
      await this.close();
    }
    this.deps.onChange();
  }

  private async consume(device: number): Promise<void> {
    const { broker, topo } = this.deps;
    const lanes = this.placement.lanesPerDevice * this.model.versions.length;
    // Two batches per lane: each lane has its next batch in hand (claimed in Redis, decoded) when
    // the current one ends, so the hop back to the broker overlaps compute instead of adding to it.
    const ch = await broker.channel(lanes * BATCHES_IN_HAND_PER_LANE);
    const c: DeviceConsumer = { device, ch };
    this.consumers.push(c);
    ch.on('close', () => {
      // With the connection gone, the broker's reconnect resumes consuming (resume()); a channel
      // closed under a live connection is a fault of its own.
      // (A connection's channels close just before it reports its own close: look a tick later.)
      setImmediate(() => {
        if (!this.closing && this.state === 'ready' && broker.connected) this.deps.onChannelLost(this.name);
      });
    });
    const queue = topo.batches(this.name);
    await broker.assertWorkQueue(ch, queue);
    c.tag = await broker.consume(ch, queue, (msg) => void this.onBatch(device, ch, msg));
  }

  private async onBatch(device: number, ch: Channel, msg: ConsumeMessage): Promise<void> {
    const { broker, claims, log } = this.deps;
    this.inflight++;
    const hand: { ch: Channel; batch?: BatchMessage } = { ch };
    this.inHand.set(msg, hand);
    const abandoned = () => this.abandoned.has(msg);
    let traced: WorkerBatchTrace | undefined;
    // Once acked, a later failure (finish-batch) must not nack it: a second settle of one delivery
    // is a channel error, which would hand every other batch in hand back for redelivery.
    let acked = false;
    try {
      let batch: BatchMessage;
      try {
        batch = decodeBatch(msg.content);
      } catch (err) {
        // Redelivering it would fail the same way forever: dead-letter it at once.
        log.error({ model: this.name, err: (err as Error).message }, 'undecodable batch dead-lettered');
        ch.nack(msg, false, false);
        return;
      }
      const mismatch = versionMismatch(batch.v, 'batch');
      if (mismatch) {
        // Its members are answered by the dead-letter consumer, which reads requests of any version.
        log.error({ model: this.name, err: mismatch.message }, 'batch of another protocol version dead-lettered');
        ch.nack(msg, false, false);
        return;
      }
      hand.batch = batch;
      traced = traceWorkerBatch(this.name, device, batch, msg.properties.headers);
      // Its previous holder died or gave it back before acking it (a crash, a drain timeout).
      if (msg.fields.redelivered) log.info({ batchId: batch.batchId, model: this.name, device }, 'redelivered batch');
      const pool = this.pools.get(device)?.get(batch.version);
      if (!pool) throw new Error(`version ${batch.version} of '${this.name}' is not served here`);
      // Only the members this batch still answers (null: none, e.g. it was answered before a redelivery).
      // A first delivery runs while its claims are taken (start-batch): replies go out only when
      // the claims grant every member, so nothing is answered twice, and the Redis round trip
      // overlaps the run. A redelivered batch (its worker may have died running it) is claimed
      // first, so the delivery limit stops a batch that kills its workers before it runs again.
      const held = TEST_LANE_DELAY_MS > 0 ? () => new Promise((r) => setTimeout(r, TEST_LANE_DELAY_MS)) : undefined;
      // Members that travelled beside the batch are read from Redis while it is claimed.
      const stored = claims.storedRequests(batch);
      stored?.catch(() => undefined); // awaited below on every path that runs
      // With nothing to wait for, the batch is posted to an idle lane in this tick, before
      // start-batch's write: the lane starts without waiting on that syscall.
      const runOnLane = (body: Buffer): Promise<LaneRun> =>
        held || stored
          ? (async () => {
              await held?.();
              return pool.run(body, await stored);
            })()
          : pool.run(body);
      const early = msg.fields.redelivered ? undefined : runOnLane(msg.content);
      early?.catch(() => undefined); // awaited below on every path that uses it
      const claim = await claims.start(batch, msg.content);
      if (abandoned()) return;
      if (claim === 'poison') {
        await early?.catch(() => undefined);
        ch.nack(msg, false, false);
        return;
      }
      let ran: { tier: number; ms: number } | undefined;
      let run: LaneRun | undefined;
      if (claim?.body === msg.content && early) run = await early;
      else {
        // Only some members (or none) are this batch's to answer: the early run is void.
        await early?.catch(() => undefined);
        if (claim) run = await runOnLane(claim.body);
      }
      if (abandoned()) return;
      if (run) {
        // The tier the lane really ran (expired members may have let it take a smaller one): the
        // batchers plan with each tier's lane time, so the time goes to that tier.
        const tier = run.stages?.tier ?? 0;
        if (tier > 0) {
          ran = { tier, ms: run.laneMs };
          this.deps.onBatchRan?.(this.name, device, ran.tier, ran.ms);
        }
        traced?.ran(run.acquiredAt, run.stages);
        const publishing = traced?.publishing();
        // One message per reply queue (a gateway) for the whole batch, unconfirmed (sendUnconfirmed says why).
        for (const g of run.groups) {
          broker.sendUnconfirmed(
            g.replyTo,
            Buffer.from(g.body.buffer, g.body.byteOffset, g.body.byteLength),
            {},
            publishing?.context,
          );
        }
        publishing?.end();
      }
      // Acked in the same tick as the replies, so both leave in one write. Acked before
      // finish-batch: the answers are out, and a worker dying now must not have the batch run
      // again (finish-batch records its cost and frees its slot; a lost finish expires with the batch).
      ch.ack(msg);
      acked = true;
      // Answered: answerInHand must not answer it again.
      this.inHand.delete(msg);
      // The replies and the ack leave in one write; finish-batch's own write waits for it rather
      // than go first.
      await afterWrites();
      await claims.finish(batch, ran, claim?.ids);
      this.batches++;
      traced?.end();
    } catch (err) {
      traced?.fail(err);
      if (abandoned()) return;
      if (acked) {
        // Answered already: only its finish-batch failed; the slot lapses with the batch's deadlines.
        log.error({ err, model: this.name, device }, 'batch answered, but not recorded as finished');
        return;
      }
      log.error({ err, model: this.name, device }, 'batch failed; returned for redelivery');
      try {
        ch.nack(msg, false, true);
      } catch {
        // The channel is gone: the broker requeued the delivery already.
      }
    } finally {
      this.inHand.delete(msg);
      this.abandoned.delete(msg);
      this.inflight--;
      if (this.inflight === 0) for (const wake of this.idle.splice(0)) wake();
    }
  }

  /** After a reconnect: the old channels died with the connection; consume again on every device. */
  async resume(): Promise<void> {
    if (this.state !== 'ready' || this.closing) return;
    this.consumers.splice(0);
    for (const device of this.placement.devices) await this.consume(device);
  }

  /** Stop taking batches (basic.cancel); deliveries in hand still run. */
  async stopConsuming(): Promise<void> {
    await Promise.all(
      this.consumers.map(async (c) => {
        if (c.tag) await c.ch.cancel(c.tag).catch(() => undefined);
        c.tag = undefined;
      }),
    );
  }

  /** Resolves when no batch is in hand, or after `timeoutMs`; true if drained. */
  drained(timeoutMs: number): Promise<boolean> {
    if (this.inflight === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const t = setTimeout(() => resolve(false), timeoutMs);
      this.idle.push(() => {
        clearTimeout(t);
        resolve(true);
      });
    });
  }

  /**
   * Stop consuming, finish the batches in hand, close the lanes. Batches
   * still running after `timeoutMs` go back to the batch queue, for the
   * version that takes over (a reload); with `answerLeft` (the model is
   * unloaded, so no one will take them) their members are answered with
   * that error instead of waiting out their deadlines.
   */
  async unload(timeoutMs: number, answerLeft?: WireError): Promise<void> {
    this.state = 'unloading';
    this.deps.onChange();
    await this.stopConsuming();
    if (!(await this.drained(timeoutMs))) {
      const { log } = this.deps;
      if (answerLeft) {
        const answered = await this.answerInHand(answerLeft);
        log.warn({ model: this.name, batches: answered }, 'unload: batches still running are answered with an error');
      } else log.warn({ model: this.name, inflight: this.inflight }, 'unload: batches still running are returned');
    }
    await this.close();
  }

  /**
   * Answer the members of every batch in hand with `error` (fail-batch claims
   * them, so a copy run elsewhere answers none twice) and ack the deliveries.
   * Each is marked abandoned first, in this tick, so a run that ends meanwhile
   * publishes nothing. A batch Redis cannot fail now goes back to the queue
   * when its channel closes. Returns how many batches were answered.
   */
  private async answerInHand(error: WireError): Promise<number> {
    const { broker, claims, log } = this.deps;
    const held = [...this.inHand].filter(([, h]) => h.batch);
    for (const [msg] of held) this.abandoned.add(msg);
    let answered = 0;
    for (const [msg, { ch, batch }] of held) {
      if (!batch) continue;
      try {
        const members = await claims.fail(batch);
        for (const req of memberRequests(batch, members ?? [])) sendErrorReply(broker, req, error);
        ch.ack(msg);
        answered++;
      } catch (err) {
        log.error({ err: (err as Error).message, batchId: batch.batchId }, 'batch in hand not answered; returned');
      }
    }
    return answered;
  }

  /** Close the consumer channels (unacked deliveries go back to the queue) and the lanes. */
  async close(): Promise<void> {
    this.closing = true;
    for (const c of this.consumers.splice(0)) await c.ch.close().catch(() => undefined);
    for (const byVersion of this.pools.values()) for (const p of byVersion.values()) await p.close();
    this.pools.clear();
  }

  info(): WorkerModelInfo {
    return {
      model: this.name,
      versions: this.model.versions.map((v) => v.version),
      state: this.state,
      generation: this.generation,
      devices: [...this.placement.devices],
      lanesPerDevice: this.placement.lanesPerDevice,
      lanes: this.lanes,
      tiers: [...this.model.config.tiers],
      threadsPerLane: this.deps.runtime === 'ort' ? this.threads : 0,
      inflight: this.inflight,
      batches: this.batches,
      ...(this.error ? { error: this.error } : {}),
    };
  }
}
