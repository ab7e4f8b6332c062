import { Redis } from 'ioredis';
import { Packr } from 'msgpackr';
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

export type BatchState = 'formed' | 'published' | 'running' | 'done' | 'failed';

export type CreateBatchResult =
  | { ok: true }
  | { ok: false; reason: 'exists' }
  | { ok: false; reason: 'claimed'; claimedIds: string[] };

// cmsgpack in Redis reads plain msgpack maps only.
const packr = new Packr({ useRecords: false });

/** Batch manifests and request claims in Redis, all with TTLs. */
export class BatchStore {
  private readonly scripts: Record<ScriptName, ScriptRunner>;
  constructor(
    readonly redis: Redis,
    readonly namespace: string,
    readonly ttlMs = 10 * 60_000,
  ) {
    this.scripts = defineScripts(redis);
  }

  static connect(url: string, namespace: string): BatchStore {
    // Workers and batchers wait out a Redis restart rather than fail requests early.
    return new BatchStore(new Redis(url, { maxRetriesPerRequest: 3, enableAutoPipelining: true }), namespace);
  }

  batchKey(batchId: string): string {
    return `${this.namespace}:batch:${batchId}`;
  }
  claimKey(requestId: string): string {
    return `${this.namespace}:claim:${requestId}`;
  }

  async createBatch(b: NewBatch, now = Date.now()): Promise<CreateBatchResult> {
    const keys = [this.batchKey(b.batchId), ...b.members.map((m) => this.claimKey(m.id))];
    const res = (await this.scripts['create-batch-1'](keys, [
      b.batchId,
      this.ttlMs,
      b.model,
      b.version,
      b.tier,
      b.rows,
      packr.pack(b.members),
      now,
    ])) as number[];
    if (res[0] === 1) return { ok: true };
    if (res[0] === -1) return { ok: false, reason: 'exists' };
    const claimedIds = res.slice(1).map((i) => b.members[i - 1]?.id ?? '');
    return { ok: false, reason: 'claimed', claimedIds };
  }

  async setState(batchId: string, from: BatchState, to: BatchState, now = Date.now()): Promise<boolean> {
    const res = (await this.scripts['set-batch-state-1']([this.batchKey(batchId)], [from, to, now])) as unknown[];
    return res[0] === 1;
  }

  async manifest(
    batchId: string,
  ): Promise<(Omit<NewBatch, 'members'> & { members: ManifestMember[]; state: BatchState }) | null> {
    const h = await this.redis.hgetallBuffer(this.batchKey(batchId));
    if (!h.state) return null;
    return {
      batchId,
      model: h.model?.toString() ?? '',
      version: h.version?.toString() ?? '',
      tier: Number(h.tier),
      rows: Number(h.rows),
      state: h.state.toString() as BatchState,
      members: h.members ? (packr.unpack(h.members) as ManifestMember[]) : [],
    };
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
    await this.redis.quit().catch(() => undefined);
  }
}
