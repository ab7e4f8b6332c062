import { isCluster, type RedisConnection } from './connect.js';

/** What the health watch logs through (pino's shape, kept minimal so the store needs no logger). */
export interface HealthLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** How often the connection is probed, and how long a probe may take before it counts as dead. */
const PROBE_EVERY_MS = 2_000;
const PROBE_TIMEOUT_MS = 4_000;

/**
 * The health of one Redis connection, as the service sees it. ioredis
 * reconnects a closed connection by itself, but a silent one (a black-holed
 * or half-open socket) looks connected forever: commands just never return.
 * So the connection is probed with PING every 2 s, and one that has not
 * answered for 4 s is dropped and reconnected, which puts a dead Redis in
 * view within about 6 s. One log line per state change; reconnects counted.
 *
 * On a Cluster the same holds for the cluster client as a whole: its status
 * is 'ready' once it knows the slots and reaches the nodes, a PING goes to
 * one of them, and dropping it reconnects every node.
 */
export class RedisHealth {
  reconnects = 0;
  private lostAt = 0;
  /** When the connection last became ready (0: never). */
  private readyAt = 0;
  private readonly timer: NodeJS.Timeout;
  private probing = false;

  constructor(
    private readonly redis: RedisConnection,
    private readonly log?: HealthLog,
  ) {
    redis.on('ready', () => {
      this.readyAt = Date.now();
      if (this.lostAt === 0) return;
      this.reconnects++;
      this.log?.info({ downMs: Date.now() - this.lostAt }, 'redis connection restored');
      this.lostAt = 0;
    });
    redis.on('close', () => this.lost('closed'));
    redis.on('error', (err: Error) => this.log?.warn({ err: err.message }, 'redis connection error'));
    if (isCluster(redis)) {
      // A node's own connection errors; the cluster client reroutes or reconnects by itself.
      redis.on('node error', (err: Error, node: string) =>
        this.log?.warn({ err: err.message, node }, 'redis cluster node error'),
      );
    }
    this.timer = setInterval(() => void this.probe(), PROBE_EVERY_MS);
    this.timer.unref();
  }

  get connected(): boolean {
    return this.redis.status === 'ready' && this.lostAt === 0;
  }

  /** How long the connection has been up without a break, ms (0 while it is down). */
  get upMs(): number {
    return this.connected && this.readyAt > 0 ? Date.now() - this.readyAt : 0;
  }

  /**
   * How long the connection has been up since it came back from its last loss, ms: Infinity
   * when it has never been lost (what others wrote to Redis meanwhile needs no time to return),
   * 0 while it is down.
   */
  get upSinceRestoreMs(): number {
    if (!this.connected) return 0;
    return this.reconnects === 0 ? Number.POSITIVE_INFINITY : this.upMs;
  }

  private lost(why: string): void {
    if (this.lostAt !== 0 || this.redis.status === 'end') return;
    this.lostAt = Date.now();
    this.log?.error({ why }, 'redis connection lost; reconnecting');
  }

  private async probe(): Promise<void> {
    if (this.probing || this.redis.status !== 'ready') return;
    this.probing = true;
    let timer: NodeJS.Timeout | undefined;
    const silent = new Promise<'silent'>((r) => {
      timer = setTimeout(() => r('silent'), PROBE_TIMEOUT_MS);
    });
    try {
      const res = await Promise.race([this.redis.ping().catch(() => 'failed'), silent]);
      if (res === 'silent' && this.redis.status === 'ready') {
        this.lost(`no answer to PING in ${PROBE_TIMEOUT_MS} ms`);
        // Drop the silent socket; ioredis reconnects and replays what it queued.
        this.redis.disconnect(true);
      }
    } finally {
      clearTimeout(timer);
      this.probing = false;
    }
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
