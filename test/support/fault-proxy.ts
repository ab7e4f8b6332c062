import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';

/**
 * A TCP proxy for fault tests: clients connect to it on a loopback port
 * instead of RabbitMQ or Redis, and a test breaks the path between them on
 * purpose (cut, black hole, latency, throttle) and heals it again. Pure
 * node:net, so it runs wherever the tests run, without root, tc or iptables.
 *
 * Data held back (black hole, latency, throttle) is queued in order, never
 * dropped: TCP retransmits across a real outage, so what was sent arrives once
 * the path heals, unless a peer gave up on the connection first. The queue is
 * bounded: past HIGH_WATER bytes the sending side is paused, so a stalled
 * path pushes back on the sender as a full TCP window would.
 */

export interface FaultProxyOptions {
  /** Where connections are forwarded. */
  target: { host: string; port: number };
  /** Listening port on 127.0.0.1; 0 (default) picks a free one. */
  port?: number;
}

export interface FaultProxyStats {
  /** Connections accepted and forwarded (or held for forwarding while black-holed). */
  opened: number;
  /** Connections destroyed by cut(). */
  cut: number;
  /** Connections reset at once because new ones were being refused. */
  refused: number;
  /** Connections open now. */
  active: number;
}

export interface BlackholeOptions {
  /**
   * New connections while black-holed: `hang` (default) accepts them and forwards nothing, not even
   * the connect to the target, until heal() (a partition: the client's connect looks fine, then
   * nothing answers); `refuse` resets them at once (the target is down).
   */
  newConnections?: 'hang' | 'refuse';
}

interface Faults {
  blackhole: boolean;
  refuseNew: boolean;
  latencyMs: number;
  /** 0: unlimited. */
  bytesPerSec: number;
}

const HIGH_WATER = 1 << 20;
const LOW_WATER = 1 << 18;
/** Throttled data goes in slices of this share of a second, so the rate holds over short spans too. */
const THROTTLE_SLICE_S = 0.05;

/** One direction of one connection: queues chunks and releases them as the faults allow. */
class Pipe {
  private readonly queue: Array<{ buf: Buffer; due: number }> = [];
  private queuedBytes = 0;
  private lastDue = 0;
  private nextSendAt = 0;
  private waitingDrain = false;
  private ended = false;
  private timer: NodeJS.Timeout | undefined;
  /** Unset while the connect to the target is held back by a black hole. */
  to: Socket | undefined;

  constructor(
    private readonly from: Socket,
    private readonly faults: Faults,
  ) {
    from.on('data', (buf: Buffer) => this.push(buf));
    from.on('end', () => {
      this.ended = true;
      this.pump();
    });
  }

  private push(buf: Buffer): void {
    // Never before an earlier chunk: a shorter latency set meanwhile must not reorder the stream.
    const due = Math.max(Date.now() + this.faults.latencyMs, this.lastDue);
    this.lastDue = due;
    this.queue.push({ buf, due });
    this.queuedBytes += buf.length;
    if (this.queuedBytes > HIGH_WATER) this.from.pause();
    this.pump();
  }

  /** Healed: what was held goes now (in order), at whatever rate limit is still set. */
  releaseHeld(): void {
    for (const c of this.queue) c.due = 0;
    this.lastDue = 0;
    this.nextSendAt = 0;
    this.pump();
  }

  pump(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const to = this.to;
    if (!to || to.destroyed || this.faults.blackhole || this.waitingDrain) return;
    while (this.queue.length > 0) {
      const head = this.queue[0] as { buf: Buffer; due: number };
      const now = Date.now();
      const at = Math.max(head.due, this.nextSendAt);
      if (at > now) {
        this.timer = setTimeout(() => this.pump(), at - now);
        return;
      }
      let piece = head.buf;
      const rate = this.faults.bytesPerSec;
      if (rate > 0) {
        const max = Math.max(1, Math.floor(rate * THROTTLE_SLICE_S));
        if (piece.length > max) {
          piece = head.buf.subarray(0, max);
          head.buf = head.buf.subarray(max);
        } else this.queue.shift();
        this.nextSendAt = now + (piece.length * 1000) / rate;
      } else this.queue.shift();
      this.queuedBytes -= piece.length;
      if (this.queuedBytes < LOW_WATER && this.from.isPaused()) this.from.resume();
      if (!to.write(piece)) {
        this.waitingDrain = true;
        to.once('drain', () => {
          this.waitingDrain = false;
          this.pump();
        });
        return;
      }
    }
    // The sender's FIN goes on only after everything it sent before it (half-close kept).
    if (this.ended && !to.writableEnded) to.end();
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}

class Connection {
  upstream: Socket | undefined;
  readonly up: Pipe;
  down: Pipe | undefined;
  private closed = false;

  constructor(
    readonly client: Socket,
    private readonly target: FaultProxyOptions['target'],
    private readonly faults: Faults,
    private readonly onClosed: (c: Connection) => void,
  ) {
    this.up = new Pipe(client, faults);
    client.on('error', () => this.destroy());
    client.on('close', (hadError) => this.onSocketClose(hadError));
    if (!faults.blackhole) this.connectUpstream();
  }

  /** Opens the target side; held back while black-holed (a partition drops the SYN as well). */
  connectUpstream(): void {
    if (this.upstream || this.closed) return;
    const upstream = tcpConnect({ host: this.target.host, port: this.target.port, allowHalfOpen: true });
    upstream.setNoDelay(true);
    this.upstream = upstream;
    this.up.to = upstream;
    this.down = new Pipe(upstream, this.faults);
    this.down.to = this.client;
    upstream.on('error', () => this.destroy());
    upstream.on('close', (hadError) => this.onSocketClose(hadError));
    this.up.pump();
  }

  pipes(): Pipe[] {
    return this.down ? [this.up, this.down] : [this.up];
  }

  /**
   * A clean close (both directions finished) waits for the other side to finish too; a socket that
   * died (reset, error) takes the other side with it, as a broken TCP path would.
   */
  private onSocketClose(hadError: boolean): void {
    if (this.client.destroyed && (!this.upstream || this.upstream.destroyed)) this.finish();
    else if (hadError) this.destroy();
  }

  destroy(how: 'close' | 'reset' = 'close'): void {
    for (const s of [this.client, this.upstream]) {
      if (!s || s.destroyed) continue;
      if (how === 'reset') s.resetAndDestroy();
      else s.destroy();
    }
    this.finish();
  }

  private finish(): void {
    if (this.closed) return;
    this.closed = true;
    for (const p of this.pipes()) p.dispose();
    this.onClosed(this);
  }
}

export class FaultProxy {
  private readonly faults: Faults = { blackhole: false, refuseNew: false, latencyMs: 0, bytesPerSec: 0 };
  private readonly connections = new Set<Connection>();
  private readonly counts = { opened: 0, cut: 0, refused: 0 };

  private constructor(
    private readonly server: Server,
    readonly port: number,
    readonly target: FaultProxyOptions['target'],
  ) {}

  static async start(opts: FaultProxyOptions): Promise<FaultProxy> {
    // allowHalfOpen: a client's FIN is relayed only after the data queued before it.
    const server = createServer({ allowHalfOpen: true });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(opts.port ?? 0, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    const address = server.address();
    if (!address || typeof address === 'string') throw new Error('fault proxy: no TCP address');
    const proxy = new FaultProxy(server, address.port, opts.target);
    server.on('connection', (socket) => proxy.accept(socket));
    return proxy;
  }

  /** host:port clients connect to. */
  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  get stats(): FaultProxyStats {
    return { ...this.counts, active: this.connections.size };
  }

  /** Destroys every open connection, both sides; returns how many. `reset` sends an RST instead of a FIN. */
  cut(how: 'close' | 'reset' = 'close'): number {
    const n = this.connections.size;
    for (const c of [...this.connections]) c.destroy(how);
    this.counts.cut += n;
    return n;
  }

  /** Sockets stay open, nothing moves either way until heal(). */
  blackhole(opts: BlackholeOptions = {}): void {
    this.faults.blackhole = true;
    this.faults.refuseNew = opts.newConnections === 'refuse';
  }

  /** Each chunk, each way, is delivered `ms` later than it arrived, in order. */
  latency(ms: number): void {
    if (!(ms >= 0)) throw new Error(`latency must be ≥ 0 ms, got ${ms}`);
    this.faults.latencyMs = ms;
  }

  /** At most `bytesPerSec` each way per connection (0: unlimited). */
  throttle(bytesPerSec: number): void {
    if (!(bytesPerSec >= 0)) throw new Error(`throttle must be ≥ 0 bytes/s, got ${bytesPerSec}`);
    this.faults.bytesPerSec = bytesPerSec;
    for (const c of this.connections) for (const p of c.pipes()) p.pump();
  }

  /** Back to a clean path: held data flows again, held connects go out, no latency or limit. */
  heal(): void {
    Object.assign(this.faults, { blackhole: false, refuseNew: false, latencyMs: 0, bytesPerSec: 0 });
    for (const c of this.connections) {
      c.connectUpstream();
      for (const p of c.pipes()) p.releaseHeld();
    }
  }

  /** Stops listening and destroys every connection. */
  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const c of [...this.connections]) c.destroy();
    await closed;
  }

  private accept(socket: Socket): void {
    socket.setNoDelay(true);
    if (this.faults.blackhole && this.faults.refuseNew) {
      this.counts.refused++;
      socket.on('error', () => undefined);
      socket.resetAndDestroy();
      return;
    }
    this.counts.opened++;
    this.connections.add(new Connection(socket, this.target, this.faults, (c) => this.connections.delete(c)));
  }
}
