import { Packr } from 'msgpackr';
import { AdmissionQueues } from './admission-queues.js';
import { connectRedis, type RedisConnection, scanKeys, unlinkKeys } from './connect.js';
import { ModelKeys } from './model-keys.js';
import { ModelLeads } from './model-leads.js';
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
  /** The batch is in Redis already (a worker's start-batch recorded it first); `notHeldIds`: the members it does not hold. */
  | { ok: false; reason: 'exists'; notHeldIds: string[] }
  /** Carried by a batch a batcher already published (or a worker started), or already answered. */
  | { ok: false; reason: 'claimed'; claimedIds: string[] }
  /** Every lane slot of the model is taken. */
  | { ok: false; reason: 'no-lane'; inFlight: number };

/** Which members of a batch a worker runs; 'poison' when it was started past the delivery limit. */
export type StartBatchResult =
  | { kind: 'done' }
  | { kind: 'poison'; starts: number }
  | { kind: 'run'; members: number[] };

/** A manifest as read back from Redis. */
export type Manifest = NewBatch & { state: BatchState; createdAt: number };

/** What finish-batch and fail-batch publish on a model's lanes channel. */
export interface LanesNotice {
  batchId: string;
  /** The model's batches still in flight just after; absent from a service that does not say. */
  inFlight?: number;
}

export function parseLanesNotice(message: string): LanesNotice {
  const [batchId = '', n] = message.split(' ');
  const inFlight = n === undefined ? Number.NaN : Number(n);
  return Number.isInteger(inFlight) && inFlight >= 0 ? { batchId, inFlight } : { batchId };
}

/** Tier costs not refreshed for this long are forgotten. */
const TIER_COST_TTL_MS = 60 * 60_000;

// cmsgpack in Redis reads plain msgpack maps only.
const packr = new Packr({ useRecords: false });

/** What create-batch, expire-request and reclaim-request answer when a claim's owner was not declared. */
const UNDECLARED_OWNERS = -4;
/** Calls of one of those scripts before giving up; each further call means a claim changed hands meanwhile. */
const MAX_OWNER_ROUNDS = 5;

/**
 * How long batch state outlives the last deadline it covers. Past its deadline a request is never
 * run (batchers and workers answer or drop it), so a claim is needed only until then; the margin
 * covers clocks of different hosts and a copy on its way at that moment.
 */
const STATE_MARGIN_MS = 30_000;

/**
 * Batch state in Redis, all with TTLs: manifests, request claims (which
 * batch answers a request), stored requests, each model's in-flight batches
 * (lane slots) and tier costs. Every change is one Lua script (../lua); the
 * keys are ModelKeys'. The admission queues and the ordering leads share its
 * connection and scripts (`queues`, `leads`).
 */
export class BatchStore extends ModelKeys {
  private readonly scripts: Record<ScriptName, ScriptRunner>;
  /** The admission queues (max_queue_size), on the same connection. */
  readonly queues: AdmissionQueues;
  /** The ordering leads (preserve_ordering), on the same connection. */
  readonly leads: ModelLeads;
  constructor(
    readonly redis: RedisConnection,
    namespace: string,
    /** TTL of state whose deadline is unknown (a claim written for a batch whose manifest is gone). */
    readonly ttlMs = 10 * 60_000,
  ) {
    super(namespace);
    this.scripts = defineScripts(redis);
    this.queues = new AdmissionQueues(redis, this.scripts);
    this.leads = new ModelLeads(this, this.scripts);
  }

  /** Connection health (probed; see RedisHealth), when connected through connect(). */
  health?: RedisHealth;

  /** A single node (redis://, rediss://) or a Cluster (redis+cluster://host:port,...); see connectRedis. */
  static connect(url: string, namespace: string, log?: HealthLog): BatchStore {
    const store = new BatchStore(connectRedis(url), namespace);
    store.health = new RedisHealth(store.redis, log);
    return store;
  }

  /**
   * Run a script that applies the claim rule (lua/includes/claim-taken). The
   * rule reads the manifest of the batch holding a claim, which is known only
   * once the claim is read, and a script may touch declared keys only; so a
   * call that meets a claim of a batch whose manifest it was not given answers
   * UNDECLARED_OWNERS with those batch ids, and is made again with their
   * manifests. Claims change hands only when a batcher died, so nearly every
   * call is the first and only one.
   */
  private async withClaimOwners(
    model: string,
    call: (manifestKeys: string[], owners: string[]) => Promise<unknown>,
  ): Promise<unknown[]> {
    const owners: string[] = [];
    for (let round = 0; round < MAX_OWNER_ROUNDS; round++) {
      const res = (await call(
        owners.map((o) => this.batchKey(model, o)),
        owners,
      )) as unknown[];
      if (res[0] !== UNDECLARED_OWNERS) return res;
      for (const o of res.slice(1)) if (!owners.includes(String(o))) owners.push(String(o));
    }
    throw new Error(`claims of model ${model} kept changing hands over ${MAX_OWNER_ROUNDS} calls`);
  }

  async createBatch(b: NewBatch, opts: CreateBatchOptions = {}): Promise<CreateBatchResult> {
    const now = opts.now ?? Date.now();
    const queueKeys = opts.queueKeys ?? [];
    const keys = [
      this.batchKey(b.model, b.batchId),
      this.inFlightKey(b.model),
      ...b.members.map((m) => this.claimKey(b.model, m.id)),
      ...queueKeys,
    ];
    // The in-flight entry lapses with the last member's deadline: by then every member was answered or given up.
    // Whole ms: Redis refuses a fractional TTL, and a refused batch would hold up every request behind it.
    const lapse = Math.ceil(b.members.reduce((t, m) => Math.max(t, m.deadline), now + 1_000));
    const args = [
      b.batchId,
      stateTtl(lapse, now),
      b.model,
      b.version,
      b.tier,
      b.rows,
      packr.pack(b.members),
      now,
      b.members.length,
      opts.maxInFlight ?? 0,
      lapse,
      queueKeys.length,
      ...b.members.map((m) => m.id),
    ];
    const res = (await this.withClaimOwners(b.model, (manifestKeys, owners) =>
      this.scripts['create-batch']([...keys, ...manifestKeys], [...args, ...owners]),
    )) as number[];
    if (res[0] === 1) return { ok: true };
    const idsAt = (positions: number[]) => positions.map((i) => b.members[i - 1]?.id ?? '');
    if (res[0] === -1) return { ok: false, reason: 'exists', notHeldIds: idsAt(res.slice(1)) };
    if (res[0] === -3) return { ok: false, reason: 'no-lane', inFlight: res[1] ?? 0 };
    return { ok: false, reason: 'claimed', claimedIds: idsAt(res.slice(1)) };
  }

  async setState(batchId: string, model: string, from: BatchState, to: BatchState, now = Date.now()): Promise<boolean> {
    const res = (await this.scripts['set-batch-state']([this.batchKey(model, batchId)], [from, to, now])) as unknown[];
    return res[0] === 1;
  }

  /**
   * A worker is about to run a batch: which of its members (0-based) it
   * answers. `deliveryLimit` starts at most (0 = no limit, e.g. for answering
   * a dead letter).
   */
  async startBatch(
    batchId: string,
    model: string,
    memberIds: readonly string[],
    deliveryLimit = 0,
    now = Date.now(),
  ): Promise<StartBatchResult> {
    const res = (await this.scripts['start-batch'](
      [this.batchKey(model, batchId), ...memberIds.map((id) => this.claimKey(model, id))],
      [batchId, now, this.ttlMs, deliveryLimit],
    )) as number[];
    if (res[0] === 0) return { kind: 'done' };
    if (res[0] === -1) return { kind: 'poison', starts: res[1] ?? 0 };
    return { kind: 'run', members: res.slice(1).map((i) => i - 1) };
  }

  /** Keep a large request beside its message for `ttlMs` (store-request-body). */
  async storeRequestBody(model: string, requestId: string, body: Uint8Array, ttlMs: number): Promise<void> {
    await this.scripts['store-request-body'](
      [this.requestBodyKey(model, requestId)],
      [Buffer.from(body.buffer, body.byteOffset, body.byteLength), Math.max(1, Math.ceil(ttlMs))],
    );
  }

  /** The stored requests, in the order asked; null for one that is gone (expired, or Redis lost it). */
  async requestBodies(model: string, requestIds: readonly string[]): Promise<(Buffer | null)[]> {
    if (requestIds.length === 0) return [];
    return this.redis.mgetBuffer(...requestIds.map((id) => this.requestBodyKey(model, id)));
  }

  /**
   * A worker published every reply of a batch: mark it done and free its
   * lane slot; `run` (the tier it ran at and how long it held its lane)
   * updates the model's tier costs. `storedIds`: the stored requests it
   * answered, deleted now.
   */
  async finishBatch(
    batchId: string,
    model: string,
    run?: { tier: number; ms: number },
    storedIds: readonly string[] = [],
    now = Date.now(),
  ): Promise<boolean> {
    const res = await this.scripts['finish-batch'](
      [
        this.batchKey(model, batchId),
        this.inFlightKey(model),
        this.tierCostKey(model),
        ...storedIds.map((id) => this.requestBodyKey(model, id)),
      ],
      [batchId, now, this.lanesChannel(model), run ? run.tier : '', run ? run.ms : 0, TIER_COST_TTL_MS],
    );
    return res === 1;
  }

  /**
   * A batch that will not run (dead-lettered, or its model unloaded while it
   * waited in the queue): claim the members it still answers, mark it failed
   * (neither a redelivered copy nor a worker that gets it later answers them
   * again), delete their stored requests and free its lane slot. The positions (0-based) of the members to
   * answer with an error; null when it was done or failed already.
   */
  async failBatch(
    batchId: string,
    model: string,
    memberIds: readonly string[],
    now = Date.now(),
  ): Promise<number[] | null> {
    const res = (await this.scripts['fail-batch'](
      [
        this.batchKey(model, batchId),
        this.inFlightKey(model),
        ...memberIds.map((id) => this.claimKey(model, id)),
        ...memberIds.map((id) => this.requestBodyKey(model, id)),
      ],
      [batchId, now, this.lanesChannel(model), this.ttlMs],
    )) as number[];
    return res[0] === 0 ? null : res.slice(1).map((i) => i - 1);
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

  /** The model's batches in flight: each one's id, when its entry lapses (ms since the epoch) and its state. */
  async inFlightBatches(
    model: string,
    now = Date.now(),
  ): Promise<Array<{ batchId: string; lapsesAt: number; state: string | null }>> {
    const entries = await this.redis.zrangebyscore(this.inFlightKey(model), `(${now}`, '+inf', 'WITHSCORES');
    const out: Array<{ batchId: string; lapsesAt: number; state: string | null }> = [];
    for (let i = 0; i < entries.length; i += 2) {
      const batchId = entries[i] as string;
      out.push({
        batchId,
        lapsesAt: Number(entries[i + 1]),
        state: await this.redis.hget(this.batchKey(model, batchId), 'state'),
      });
    }
    return out;
  }

  /**
   * Mark a queued request answered with an error (`reason`), so a redelivered
   * copy is dropped (until its `deadline` has long passed: no copy runs after it). False when a batch already carries it or it was answered:
   * then the caller must not answer it.
   */
  async expireRequest(
    requestId: string,
    model: string,
    reason: string,
    opts: { deadline: number; queueKey?: string | undefined },
    now = Date.now(),
  ): Promise<boolean> {
    const { queueKey } = opts;
    const keys = [this.claimKey(model, requestId), ...(queueKey ? [queueKey] : [])];
    const args = [requestId, `!${reason}`, stateTtl(opts.deadline, now), queueKey ? 1 : 0];
    const res = await this.withClaimOwners(model, (manifestKeys, owners) =>
      this.scripts['expire-request']([...keys, ...manifestKeys], [...args, ...owners]),
    );
    return res[0] === 1;
  }

  /**
   * What a redelivered request's claim means: 'free' (batch it), 'retry'
   * (its batch was never confirmed; that batch's lane slot is freed now) or
   * 'drop' (a confirmed or started batch carries it, or it was answered).
   */
  async reclaimRequest(requestId: string, model: string): Promise<'free' | 'retry' | 'drop'> {
    const keys = [this.claimKey(model, requestId), this.inFlightKey(model)];
    const res = await this.withClaimOwners(model, (manifestKeys, owners) =>
      this.scripts['reclaim-request']([...keys, ...manifestKeys], owners),
    );
    return res[0] === 0 ? 'free' : res[0] === 1 ? 'retry' : 'drop';
  }

  async manifest(batchId: string, model: string): Promise<Manifest | null> {
    return this.readManifest(this.batchKey(model, batchId), batchId);
  }

  private async readManifest(key: string, batchId: string): Promise<Manifest | null> {
    const h = await this.redis.hgetallBuffer(key);
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

  /** Every batch manifest of this namespace, of every model (tests and benchmarks). */
  async manifests(): Promise<Manifest[]> {
    const out: Manifest[] = [];
    for await (const keys of scanKeys(this.redis, `{${this.namespace}:*}:batch:*`)) {
      for (const k of keys) {
        const m = await this.readManifest(k, k.slice(k.lastIndexOf(':batch:') + ':batch:'.length));
        if (m) out.push(m);
      }
    }
    return out;
  }

  /**
   * Remove every key of this namespace (tests and teardown): the models' keys
   * (`{<ns>:<model>}:...`) and the worker registry's (`{<ns>}:...`).
   */
  async purgeNamespace(): Promise<number> {
    let removed = 0;
    for (const pattern of [`{${this.namespace}:*`, `{${this.namespace}}:*`]) {
      for await (const keys of scanKeys(this.redis, pattern)) removed += await unlinkKeys(this.redis, keys);
    }
    return removed;
  }

  async close(): Promise<void> {
    this.health?.stop();
    await this.redis.quit().catch(() => undefined);
  }
}

/** TTL of batch state that covers requests up to `deadline`: see STATE_MARGIN_MS. */
function stateTtl(deadline: number, now: number): number {
  return Math.ceil(Math.max(0, deadline - now)) + STATE_MARGIN_MS;
}
