import type { RedisConnection } from './connect.js';

/** Runtime settings outlive restarts for this long after their last change (Redis keeps nothing for ever). */
const SETTINGS_TTL_S = 30 * 24 * 3600;

/**
 * Settings an operator changes at runtime through the API (Triton's logging
 * and trace extensions), shared by every service of a namespace: one Redis
 * hash, a JSON value per section, and a pub/sub channel that announces a
 * changed section. A service reads every section when it starts and follows
 * the channel; while Redis is away it keeps what it has.
 */
export class RuntimeSettings {
  private sub?: RedisConnection;

  constructor(
    private readonly redis: RedisConnection,
    private readonly namespace: string,
  ) {}

  get key(): string {
    return `{${this.namespace}}:runtime-settings`;
  }
  get channel(): string {
    return `{${this.namespace}}:runtime-settings`;
  }

  async read(section: string): Promise<unknown> {
    const raw = await this.redis.hget(this.key, section);
    return raw === null ? undefined : parse(raw);
  }

  /** Stores a section and tells every service (each applies it on the message). */
  async write(section: string, value: unknown): Promise<void> {
    await this.redis.multi().hset(this.key, section, JSON.stringify(value)).expire(this.key, SETTINGS_TTL_S).exec();
    await this.redis.publish(this.channel, section);
  }

  /**
   * Calls `apply` with every stored section now, then with each section
   * another process changes. Resolves once subscribed.
   */
  async follow(apply: (section: string, value: unknown) => void): Promise<void> {
    const sub = this.redis.duplicate();
    this.sub = sub;
    sub.on('error', () => undefined); // the main connection's health watch reports Redis outages
    sub.on('message', (_channel: string, section: string) => {
      this.read(section).then(
        (value) => value !== undefined && apply(section, value),
        () => undefined,
      );
    });
    await sub.subscribe(this.channel);
    const all = await this.redis.hgetall(this.key).catch(() => ({}) as Record<string, string>);
    for (const [section, raw] of Object.entries(all)) {
      const value = parse(raw);
      if (value !== undefined) apply(section, value);
    }
  }

  async close(): Promise<void> {
    await this.sub?.quit().catch(() => undefined);
  }
}

function parse(raw: string): unknown {
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return undefined;
  }
}
