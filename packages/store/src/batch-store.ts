import { Redis } from 'ioredis';
import { Packr } from 'msgpackr';
import { type HealthLog, RedisHealth } from './redis-health.js';
import { defineScripts, type ScriptName, type ScriptRunner } from './scripts.js';

/** What Redis keeps about a batch: enough to rebuild or fail it after a crash. */
export interface ManifestMember {
  id: string;
  rows: number;
  replyTo: string;
  correlationId: string;
  deadline: number;
}

export interface NewBatch {
  batchId: string;
  model: string;
  version: string;
  tier: number;
  rows: number;
  members: ManifestMember[];
}

export interface CreateBatchOptions {
  /** Most batches the model may have in flight (formed, waiting for a lane or running); 0 = no limit. */
  maxInFlight?: number;
  /** Admission queues the members leave (`queueKey`), for levels with a max_queue_size. */
  queueKeys?: string[];
  now?: number;
}

export type BatchState = 'formed' | 'published' | 'running' | 'done' | 'failed';

export type CreateBatchResult =
  | { ok: true }
  | { ok: false; reason: 'exists' }
  /** Carried by a batch a batcher already published (or a worker started), or already answered. */
  | { ok: false; reason: 'claimed'; claimedIds: string[] }
  /** Every lane slot of the model is taken. */
  | { ok: false; reason: 'no-lane'; inFlight: number };

/** Which members of a batch a worker runs; 'poison' when it was started past the delivery limit. */
export type StartBatchResult =
  | { kind: 'done' }
  | { kind: 'poison'; starts: number }
  | { kind: 'run'; members: number[] };

/** Tier costs not refreshed for this long are forgotten. */
const TIER_COST_TTL_MS = 60 * 60_000;

// cmsgpack in Redis reads plain msgpack maps only.
const packr = new Packr({ useRecords: false });

/**
 * Batch state in Redis, all with TTLs: manifests, request claims (which
 * batch answers a request), each model's in-flight batches (lane slots) and
 * the admission queues. Every change is one Lua script (../lua).
 */
export class BatchStore {
  private readonly scripts: Record<ScriptName, ScriptRunner>;
  constructor(
    readonly redis: Redis,
    readonly namespace: string,
    readonly ttlMs = 10 * 60_000,
  ) {
    this.scripts = defineScripts(redis);
  }

  /** Connection health (probed; see RedisHealth), when connected through connect(). */
  health?: RedisHealth;

  static connect(url: string, namespace: string, log?: HealthLog): BatchStore {
    // Workers and batchers wait out a Redis restart rather than fail requests early.
    const store = new BatchStore(new Redis(url, { maxRetriesPerRequest: 3, enableAutoPipelining: true }), namespace);
    store.health = new RedisHealth(store.redis, log);
    return store;
  }

  batchKey(batchId: string): string {
    return `${this.namespace}:batch:${batchId}`;
  }
  claimKey(requestId: string): string {
    return `${this.namespace}:claim:${requestId}`;
  }
  /** Zset of the model's batches that are formed and not yet finished by a worker. */
  inFlightKey(model: string): string {
    return `${this.namespace}:inflight:${model}`;
  }
  /** Zset of the requests admitted to a model's priority level and not yet batched or answered. */
  queueKey(model: string, level: number): string {
    return `${this.namespace}:queue:${model}:${level}`;
  }
  /** Which batcher batches a model whose responses must keep request order. */
  leadKey(model: string): string {
    return `${this.namespace}:lead:${model}`;
  }
  /** Hash of the model's measured lane time per tier (finish-batch keeps it). */
  tierCostKey(model: string): string {
    return `${this.namespace}:tiercost:${model}`;
  }
  /** Pub/sub channel on which workers announce that a batch of the model finished. */
  lanesChannel(model: string): string {
    return `${this.namespace}:lanes:${model}`;
  }

  async createBatch(b: NewBatch, opts: CreateBatchOptions = {}): Promise<CreateBatchResult> {
    const now = opts.now ?? Date.now();
    const queueKeys = opts.queueKeys ?? [];
    const keys = [
      this.batchKey(b.batchId),
      this.inFlightKey(b.model),
      ...b.members.map((m) => this.claimKey(m.id)),
      ...queueKeys,
    ];
    // The in-flight entry lapses with the last member's deadline: by then every member was answered or given up.
    const lapse = b.members.reduce((t, m) => Math.max(t, m.deadline), now + 1_000);
    const res = (await this.scripts['create-batch-2'](keys, [
      b.batchId,
      this.ttlMs,
      b.model,
      b.version,
      b.tier,
      b.rows,
      packr.pack(b.members),
      now,
      b.members.length,
      opts.maxInFlight ?? 0,
      lapse,
      `${this.namespace}:batch:`,
      ...b.members.map((m) => m.id),
    ])) as number[];
    if (res[0] === 1) return { ok: true };
    if (res[0] === -1) return { ok: false, reason: 'exists' };
    if (res[0] === -3) return { ok: false, reason: 'no-lane', inFlight: res[1] ?? 0 };
    const claimedIds = res.slice(1).map((i) => b.members[i - 1]?.id ?? '');
    return { ok: false, reason: 'claimed', claimedIds };
  }

  async setState(batchId: string, from: BatchState, to: BatchState, now = Date.now()): Promise<boolean> {
    const res = (await this.scripts['set-batch-state-1']([this.batchKey(batchId)], [from, to, now])) as unknown[];
    return res[0] === 1;
  }

  /**
   * A worker is about to run a batch: which of its members (0-based) it
   * answers. `deliveryLimit` starts at most (0 = no limit, e.g. for answering
   * a dead letter).
   */
  async startBatch(
    batchId: string,
    memberIds: readonly string[],
    deliveryLimit = 0,
    now = Date.now(),
  ): Promise<StartBatchResult> {
    const res = (await this.scripts['start-batch-1'](
      [this.batchKey(batchId), ...memberIds.map((id) => this.claimKey(id))],
      [batchId, now, this.ttlMs, deliveryLimit],
    )) as number[];
    if (res[0] === 0) return { kind: 'done' };
    if (res[0] === -1) return { kind: 'poison', starts: res[1] ?? 0 };
    return { kind: 'run', members: res.slice(1).map((i) => i - 1) };
  }

  /**
   * A worker published every reply of a batch: mark it done and free its
   * lane slot; `run` (the tier it ran at and how long it held its lane)
   * updates the model's tier costs.
   */
  async finishBatch(
    batchId: string,
    model: string,
    run?: { tier: number; ms: number },
    now = Date.now(),
  ): Promise<boolean> {
    const res = await this.scripts['finish-batch-2'](
      [this.batchKey(batchId), this.inFlightKey(model), this.tierCostKey(model)],
      [batchId, now, this.lanesChannel(model), run ? run.tier : '', run ? run.ms : 0, TIER_COST_TTL_MS],
    );
    return res === 1;
  }

  /**
   * A dead-lettered batch had every member answered with an error: mark it
   * failed (a redelivered dead letter is then skipped) and free its lane slot.
   * False when it was already done or failed.
   */
  async failBatch(batchId: string, model: string, now = Date.now()): Promise<boolean> {
    const res = await this.scripts['fail-batch-1'](
      [this.batchKey(batchId), this.inFlightKey(model)],
      [batchId, now, this.lanesChannel(model)],
    );
    return res === 1;
  }

  /** The model's measured lane time per tier, ms (a moving average; tiers never run are absent). */
  async tierCosts(model: string): Promise<Map<number, number>> {
    const h = await this.redis.hgetall(this.tierCostKey(model));
    return new Map(Object.entries(h).map(([t, ms]) => [Number(t), Number(ms)]));
  }

  /** Batches of the model formed and not yet finished (lapsed entries excluded). */
  async inFlight(model: string, now = Date.now()): Promise<number> {
    return this.redis.zcount(this.inFlightKey(model), `(${now}`, '+inf');
  }

  /**
   * Mark a queued request answered with an error (`reason`), so a redelivered
   * copy is dropped. False when a batch already carries it or it was answered:
   * then the caller must not answer it.
   */
  async expireRequest(requestId: string, reason: string, queueKey?: string): Promise<boolean> {
    const keys = [this.claimKey(requestId), ...(queueKey ? [queueKey] : [])];
    const res = (await this.scripts['expire-request-1'](keys, [
      requestId,
      `!${reason}`,
      this.ttlMs,
      `${this.namespace}:batch:`,
    ])) as unknown[];
    return res[0] === 1;
  }

  /**
   * What a redelivered request's claim means: 'free' (batch it), 'retry'
   * (its batch was never confirmed; that batch's lane slot is freed now) or
   * 'drop' (a confirmed or started batch carries it, or it was answered).
   */
  async reclaimRequest(requestId: string, model: string): Promise<'free' | 'retry' | 'drop'> {
    const res = (await this.scripts['reclaim-request-1'](
      [this.claimKey(requestId), this.inFlightKey(model)],
      [`${this.namespace}:batch:`],
    )) as unknown[];
    return res[0] === 0 ? 'free' : res[0] === 1 ? 'retry' : 'drop';
  }

  /** Admit a request to a level's queue unless it holds `maxQueueSize` already; exact across processes. */
  async admit(
    queueKey: string,
    requestId: string,
    deadline: number,
    maxQueueSize: number,
    now = Date.now(),
  ): Promise<{ admitted: boolean; size: number }> {
    const res = (await this.scripts['admit-request-1']([queueKey], [requestId, deadline, now, maxQueueSize])) as [
      number,
      number,
    ];
    return { admitted: res[0] === 1, size: res[1] };
  }

  /** Take requests out of a level's queue that will never reach a batcher. */
  async leaveQueue(queueKey: string, requestIds: readonly string[]): Promise<number> {
    if (requestIds.length === 0) return 0;
    return (await this.scripts['leave-queue-1']([queueKey], [...requestIds])) as number;
  }

  /** Requests counted in a level's queue now (lapsed entries excluded). */
  async queueSize(queueKey: string, now = Date.now()): Promise<number> {
    return this.redis.zcount(queueKey, `(${now}`, '+inf');
  }

  async manifest(
    batchId: string,
  ): Promise<(Omit<NewBatch, 'members'> & { members: ManifestMember[]; state: BatchState; createdAt: number }) | null> {
    const h = await this.redis.hgetallBuffer(this.batchKey(batchId));
    if (!h.state) return null;
    return {
      batchId,
      model: h.model?.toString() ?? '',
      version: h.version?.toString() ?? '',
      tier: Number(h.tier),
      rows: Number(h.rows),
      state: h.state.toString() as BatchState,
      createdAt: Number(h.createdAt),
      members: h.members ? (packr.unpack(h.members) as ManifestMember[]) : [],
    };
  }

  /** Take or renew the lead of a model for `ttlMs` (0 = give it up); false while another batcher holds it. */
  async lead(model: string, token: string, ttlMs: number): Promise<boolean> {
    return (await this.scripts['lead-model-1']([this.leadKey(model)], [token, ttlMs])) === 1;
  }

  /** Every batch manifest of this namespace (tests and benchmarks). */
  async manifests(): Promise<NonNullable<Awaited<ReturnType<BatchStore['manifest']>>>[]> {
    const prefix = `${this.namespace}:batch:`;
    const out: NonNullable<Awaited<ReturnType<BatchStore['manifest']>>>[] = [];
    let cursor = '0';
    do {
      const [next, keys] = await this.redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
      cursor = next;
      for (const k of keys) {
        const m = await this.manifest(k.slice(prefix.length));
        if (m) out.push(m);
      }
    } while (cursor !== '0');
    return out;
  }

  /** Remove every key of this namespace (tests and teardown). */
  async purgeNamespace(): Promise<number> {
    let removed = 0;
    let cursor = '0';
    do {
      const [next, keys] = await this.redis.scan(cursor, 'MATCH', `${this.namespace}:*`, 'COUNT', 500);
      cursor = next;
      if (keys.length > 0) removed += await this.redis.unlink(...keys);
    } while (cursor !== '0');
    return removed;
  }

  async close(): Promise<void> {
    this.health?.stop();
    await this.redis.quit().catch(() => undefined);
  }
}
