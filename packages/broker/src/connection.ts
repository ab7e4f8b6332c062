import type { Socket } from 'node:net';
import type { Logger } from '@ge-mesh/telemetry';
import { type Context, headersFromContext, tracingActive } from '@ge-mesh/telemetry/tracing';
import amqp, { type Channel, type ChannelModel, type ConfirmChannel, type ConsumeMessage, type Options } from 'amqplib';
import { ChannelAcks } from './channel-acks.js';
import { DeliveryParts, partsOf, type Settlement } from './delivery-parts.js';
import { DEFAULT_DELIVERY_LIMIT, type Durability, type Topology } from './topology.js';

export type { Channel, ConfirmChannel, ConsumeMessage };

/** Reconnect delays: capped exponential, with jitter so a fleet does not reconnect in step. */
const RECONNECT_BASE_MS = 250;
const RECONNECT_CAP_MS = 5_000;
/**
 * AMQP heartbeat, seconds: a silent peer (a black-holed or half-open
 * connection) is declared dead after two missed beats, within 10 s, instead
 * of amqplib's 60 s default.
 */
export const HEARTBEAT_SECONDS = 4;

/** The broker is not reachable now; the caller answers UNAVAILABLE (or retries later). */
export class BrokerUnavailableError extends Error {
  override name = 'BrokerUnavailableError';
  constructor() {
    super('the message broker is not reachable');
  }
}

/** Set the heartbeat on an AMQP URL unless it sets one itself. */
export function withHeartbeat(url: string, seconds = HEARTBEAT_SECONDS): string {
  const u = new URL(url);
  if (!u.searchParams.has('heartbeat')) u.searchParams.set('heartbeat', String(seconds));
  return u.toString();
}

type Setup = () => Promise<void>;

/**
 * One AMQP connection that outlives the broker: a confirm channel for
 * publishing, separate channels for consumers (a consumer's prefetch is per
 * channel), and a reconnect loop. When the connection drops (broker restart,
 * a cut or silent socket) it reconnects with capped exponential backoff and
 * jitter, opens a new publisher, and runs every registered setup again in
 * order (declare topology, open channels and consumers, restore prefetch),
 * so each component states once what it needs on the broker. Meanwhile
 * publishes fail at once with BrokerUnavailableError.
 */
export class Broker {
  private closing = false;
  private model?: ChannelModel;
  private confirm?: ConfirmChannel;
  /** Publishes without confirms (see sendUnconfirmed). */
  private unconfirmed?: Channel;
  private readonly setups: Setup[] = [];
  private readonly lostListeners: Array<() => void> = [];
  private attempts = 0;
  private lostAt = 0;
  /** An attempt (connect + setups) is running: a drop during it is that attempt's failure. */
  private opening = false;
  /** The channel each delivery came on: it can be settled there only. */
  private readonly origin = new WeakMap<ConsumeMessage, Channel>();
  /** The bundle each part of one came from (split). */
  private readonly partOf = new WeakMap<ConsumeMessage, DeliveryParts>();
  /** Channels whose acks are coalesced (consume's `coalesceAcks`). */
  private readonly acks = new WeakMap<Channel, ChannelAcks>();
  /** Reconnections since start (a metric). */
  reconnects = 0;

  private constructor(
    private readonly url: string,
    readonly topology: Topology,
    private readonly log: Logger,
    private readonly name: string,
  ) {}

  /** Connect, waiting for the broker as long as it takes (a service may start before it). */
  static async connect(url: string, topo: Topology, log: Logger, name: string): Promise<Broker> {
    const b = new Broker(withHeartbeat(url), topo, log, name);
    while (!(await b.open())) {
      if (b.closing) break;
      await new Promise((r) => setTimeout(r, b.nextDelay()));
    }
    return b;
  }

  get connected(): boolean {
    return this.model !== undefined && this.confirm !== undefined && !this.closing;
  }

  /** The live connection; throws while the broker is away. */
  get connection(): ChannelModel {
    if (!this.model) throw new BrokerUnavailableError();
    return this.model;
  }

  /** The live confirm channel for publishing; throws while the broker is away. */
  get publisher(): ConfirmChannel {
    if (!this.confirm) throw new BrokerUnavailableError();
    return this.confirm;
  }

  /**
   * Run `setup` now (when connected, unless `runNow` is false: the caller has
   * just done it) and again after every reconnect. A setup that fails drops
   * the connection, so the next attempt starts clean.
   */
  async onReady(setup: Setup, runNow = true): Promise<void> {
    this.setups.push(setup);
    if (runNow && this.connected) await setup();
  }

  /** Called at once when the connection is lost: state tied to its channels (deliveries) is void. */
  onLost(listener: () => void): void {
    this.lostListeners.push(listener);
  }

  private nextDelay(): number {
    this.attempts++;
    const cap = Math.min(RECONNECT_CAP_MS, RECONNECT_BASE_MS * 2 ** Math.min(this.attempts - 1, 16));
    return Math.round(cap / 2 + Math.random() * (cap / 2));
  }

  /** One connection attempt with the setups; false when it failed (logged). */
  private async open(): Promise<boolean> {
    let model: ChannelModel | undefined;
    this.opening = true;
    try {
      // noDelay: without it request/reply suffers Nagle + delayed-ACK stalls (p99 ~47 ms).
      model = await amqp.connect(this.url, { noDelay: true, clientProperties: { connection_name: this.name } });
      coalesceWrites((model.connection as unknown as { stream: Socket }).stream);
      model.on('error', (err: Error) => this.log.warn({ err: err.message }, 'broker connection error'));
      model.on('close', () => this.lost(model as ChannelModel));
      this.confirm = await model.createConfirmChannel();
      this.confirm.on('error', (err: Error) => this.log.warn({ err: err.message }, 'broker publisher channel error'));
      this.unconfirmed = await this.openUnconfirmedChannel(model);
      this.model = model;
      for (const setup of this.setups) await setup();
    } catch (err) {
      this.model = undefined;
      this.confirm = undefined;
      this.unconfirmed = undefined;
      await model?.close().catch(() => undefined);
      if (!this.closing) {
        this.log.warn({ err: (err as Error).message, attempt: this.attempts + 1 }, 'broker not reachable');
      }
      return false;
    } finally {
      this.opening = false;
    }
    if (this.lostAt > 0) {
      this.reconnects++;
      this.log.info({ attempts: this.attempts, downMs: Date.now() - this.lostAt }, 'broker connection restored');
    }
    this.attempts = 0;
    this.lostAt = 0;
    return true;
  }

  private lost(model: ChannelModel): void {
    if (this.model !== model) return; // a half-open attempt that failed: already handled
    this.model = undefined;
    this.confirm = undefined;
    this.unconfirmed = undefined;
    if (this.closing) return;
    this.lostAt ||= Date.now();
    this.log.error('broker connection lost; reconnecting');
    for (const l of this.lostListeners) {
      try {
        l();
      } catch (err) {
        this.log.error({ err }, 'broker loss listener failed');
      }
    }
    // A drop while the setups run fails that attempt; its loop retries.
    if (!this.opening) void this.reconnect();
  }

  private async reconnect(): Promise<void> {
    while (!this.closing) {
      const delayMs = this.nextDelay();
      this.log.warn({ attempt: this.attempts, delayMs }, 'broker reconnect scheduled');
      await new Promise((r) => setTimeout(r, delayMs));
      if (this.closing || (await this.open())) return;
    }
  }

  /**
   * Publish and resolve once the broker confirmed it (at-least-once hand-off).
   * With tracing on, the message carries `trace` (default: the active
   * context) as W3C traceparent/tracestate headers to the next hop.
   */
  publish(
    exchange: string,
    routingKey: string,
    body: Buffer,
    options: Options.Publish = {},
    trace?: Context,
  ): Promise<void> {
    const ch = this.confirm;
    if (!ch) return Promise.reject(new BrokerUnavailableError());
    return new Promise((resolve, reject) => {
      ch.publish(exchange, routingKey, body, this.withTrace(options, trace), (err) =>
        err ? reject(err instanceof Error ? err : new Error(String(err))) : resolve(),
      );
    });
  }

  /** Send to a queue through the default exchange (trace: as publish). */
  send(queue: string, body: Buffer, options: Options.Publish = {}, trace?: Context): Promise<void> {
    return this.publish('', queue, body, options, trace);
  }

  /**
   * Send to a queue unconfirmed: returns once the frames are queued on the
   * socket. For messages whose loss the sender's deadline already covers:
   * replies (reply queues are exclusive and transient) and, in the fast mode,
   * requests (transient messages die with the broker anyway, and a gateway's
   * reply queue dies with its connection, so a confirm would turn only the
   * last moment's requests into an early error instead of a timeout). It spares
   * the broker a frame and the sender a wakeup per message. Frames leave in
   * order on the connection, so an ack written after this call reaches the
   * broker after the message. Throws BrokerUnavailableError while the broker
   * is away.
   */
  sendUnconfirmed(queue: string, body: Buffer, options: Options.Publish = {}, trace?: Context): void {
    const ch = this.unconfirmed;
    if (!ch) throw new BrokerUnavailableError();
    ch.publish('', queue, body, this.withTrace(options, trace));
  }

  private withTrace(options: Options.Publish, trace: Context | undefined): Options.Publish {
    if (!tracingActive()) return options;
    const carried = headersFromContext(trace);
    return carried ? { ...options, headers: { ...options.headers, ...carried } } : options;
  }

  /** The unconfirmed publisher; one closed under a live connection (a channel error) is opened again. */
  private async openUnconfirmedChannel(model: ChannelModel): Promise<Channel> {
    const ch = await model.createChannel();
    ch.on('error', (err: Error) => this.log.warn({ err: err.message }, 'broker unconfirmed publisher channel error'));
    ch.on('close', () => {
      if (this.unconfirmed !== ch) return;
      this.unconfirmed = undefined;
      if (this.model === model && !this.closing) {
        void this.openUnconfirmedChannel(model).then(
          (next) => {
            if (this.model === model) this.unconfirmed = next;
          },
          () => undefined, // the connection is going too: the reconnect opens a new one
        );
      }
    });
    return ch;
  }

  /** Messages of the request and batch hops are persistent only in the durable mode. */
  get persistent(): boolean {
    return this.topology.durability === 'durable';
  }

  /**
   * Declare a work queue, dead-lettered. Durable mode: a quorum queue with the
   * broker's delivery limit. Fast mode: a classic queue (the declaration
   * survives a broker restart, its transient messages do not); classic queues
   * refuse x-delivery-limit, so consumers count deliveries themselves (the
   * worker's start-batch does, in Redis).
   */
  async assertWorkQueue(
    ch: Channel,
    queue: string,
    durability: Durability = this.topology.durability,
    deliveryLimit = DEFAULT_DELIVERY_LIMIT,
  ): Promise<void> {
    await ch.assertExchange(this.topology.deadLetterExchange, 'fanout', { durable: true });
    await ch.assertQueue(this.topology.deadLetterQueue, { durable: true });
    await ch.bindQueue(this.topology.deadLetterQueue, this.topology.deadLetterExchange, '');
    const deadLetters = { 'x-dead-letter-exchange': this.topology.deadLetterExchange };
    await ch.assertQueue(queue, {
      durable: true,
      arguments:
        durability === 'durable'
          ? { 'x-queue-type': 'quorum', 'x-delivery-limit': deliveryLimit, ...deadLetters }
          : { 'x-queue-type': 'classic', ...deadLetters },
    });
  }

  async channel(prefetch?: number): Promise<Channel> {
    const ch = await this.connection.createChannel();
    ch.on('error', (err: Error) => this.log.error({ err }, 'broker channel error'));
    if (prefetch !== undefined) await ch.prefetch(prefetch);
    return ch;
  }

  /**
   * Consume with manual acks. A null message means the broker cancelled the
   * consumer (e.g. the queue was deleted); it must never be acked.
   *
   * `coalesceAcks`: the acks of a tick go out in as few frames as they can
   * (ChannelAcks); every delivery on the channel must then be settled
   * through `settle`.
   */
  async consume(
    ch: Channel,
    queue: string,
    onMessage: (msg: ConsumeMessage) => void,
    { coalesceAcks = false, ...options }: Options.Consume & { coalesceAcks?: boolean } = {},
  ): Promise<string> {
    let acks = this.acks.get(ch);
    if (coalesceAcks && !acks) {
      acks = new ChannelAcks(ch);
      this.acks.set(ch, acks);
    }
    const { consumerTag } = await ch.consume(
      queue,
      (msg) => {
        if (msg === null) {
          if (!this.closing) this.log.warn({ queue }, 'consumer cancelled by the broker');
          return;
        }
        this.origin.set(msg, ch);
        acks?.delivered(msg);
        onMessage(msg);
      },
      options,
    );
    return consumerTag;
  }

  /**
   * Close a channel, its coalesced acks sent first: once the close is on its
   * way the broker ignores them and requeues what they would have acked.
   * Every delivery still unsettled goes back to its queue.
   */
  async closeChannel(ch: Channel): Promise<void> {
    this.acks.get(ch)?.flush();
    await ch.close();
  }

  /**
   * A delivery that carries several messages, as one delivery per message
   * (`contents`): each part is settled through `settle` like any delivery,
   * and the whole once every part is (DeliveryParts says how).
   */
  split(msg: ConsumeMessage, contents: readonly Uint8Array[]): ConsumeMessage[] {
    const parts = partsOf(msg, contents);
    const whole = new DeliveryParts(parts, (how) => this.settle(msg, how));
    for (const p of parts) this.partOf.set(p, whole);
    return parts;
  }

  /**
   * Ack, requeue or dead-letter a delivery on the channel it came on. False
   * when that channel is gone: the broker has requeued the delivery already
   * (a delivery tag means nothing on any other channel). A coalesced ack
   * leaves at the end of the tick, and one its channel closed before is
   * dropped, as the delivery is requeued.
   */
  settle(msg: ConsumeMessage, how: Settlement): boolean {
    const parts = this.partOf.get(msg);
    if (parts) return parts.settle(msg, how);
    const ch = this.origin.get(msg);
    if (!ch) return false;
    try {
      const acks = this.acks.get(ch);
      if (acks) {
        if (how === 'ack') acks.ack(msg);
        else acks.nack(msg, how === 'requeue');
      } else if (how === 'ack') ch.ack(msg);
      else ch.nack(msg, false, how === 'requeue');
      return true;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    this.closing = true;
    try {
      await this.model?.close();
    } catch {
      // Already closed.
    }
  }
}

/**
 * Coalesce every frame written to the broker socket in one tick into one
 * write: amqplib writes each frame (publish, ack, confirm) on its own, and
 * with noDelay each is a syscall and a TCP segment. Corking until the next
 * tick turns a burst of acks and publishes into a single writev.
 */
export function coalesceWrites(socket: Socket): void {
  const write = socket.write.bind(socket) as (...args: unknown[]) => boolean;
  let corked = false;
  const uncork = () => {
    corked = false;
    socket.uncork();
  };
  socket.write = ((...args: unknown[]) => {
    if (!corked) {
      corked = true;
      socket.cork();
      process.nextTick(uncork);
    }
    return write(...args);
  }) as Socket['write'];
}

/**
 * Resolves once the frames published or acked in this tick have left for the
 * broker. Work that writes to another socket right after a publish (a Redis
 * script) awaits it first, so its syscall does not hold the publish back.
 * amqplib hands a channel's frames to the socket in a setImmediate (its
 * Mux), scheduled from the tick queue when the channel's buffer turns
 * readable; an immediate scheduled from a later tick-queue entry runs after
 * it, and coalesceWrites' uncork (a tick-queue entry of that immediate) in
 * between.
 */
export function afterWrites(): Promise<void> {
  return new Promise((resolve) => process.nextTick(() => setImmediate(resolve)));
}
