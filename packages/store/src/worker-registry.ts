import type { RedisConnection } from './connect.js';
import { defineScripts, type ScriptName, type ScriptRunner } from './scripts.js';

/** Where a worker is in its life. */
export type WorkerState = 'starting' | 'ready' | 'draining';

/** Where one model is on one worker. */
export type WorkerModelState = 'loading' | 'ready' | 'unloading' | 'failed';

/** What a worker says about one model it holds. */
export interface WorkerModelInfo {
  model: string;
  /** Versions with lanes on this worker. */
  versions: string[];
  state: WorkerModelState;
  /** The control generation (set-model-control) this state answers; 0 = the worker's own start. */
  generation: number;
  /** Devices of this worker that load the model (device_ids). */
  devices: number[];
  /** Lanes (streams) per device and version. */
  lanesPerDevice: number;
  /** Lanes of the model on this worker: devices × lanesPerDevice × versions. */
  lanes: number;
  tiers: number[];
  /** CPU threads of each lane (ort), or 0 where the runtime does not use them. */
  threadsPerLane: number;
  /** Batches of the model running or waiting for a lane on this worker now. */
  inflight: number;
  /** Batches of the model this worker finished since it started. */
  batches: number;
  /** Why the model failed to load (state 'failed'). */
  error?: string;
}

/** A worker's entry in the registry, rewritten on every heartbeat. */
export interface WorkerInfo {
  id: string;
  /** Machine whose devices it leases. */
  node: string;
  host: string;
  pid: number;
  runtime: string;
  /** Device kind of its leases: 'cpu' (ort) or 'npu' (ge). */
  kind: string;
  /** Devices it drives (leased or given). */
  devices: number[];
  state: WorkerState;
  /** Models it may load: '*' (every model of its runtime) or names. */
  eligible: '*' | string[];
  models: WorkerModelInfo[];
  startedAt: number;
  beatAt: number;
}

/** What the repository API asked for a model, with its generation. */
export interface ModelControl {
  action: 'load' | 'unload';
  generation: number;
}

export type HeartbeatResult = { ok: true } | { ok: false; lostDevices: number[] };

/** Control state is the wanted set of models: kept a day past its last change. */
const CONTROL_TTL_MS = 24 * 3600_000;

/**
 * The worker registry and device leases in Redis (scripts in ../lua):
 * which workers are alive, which devices they hold, what they serve (models,
 * versions, tiers, lanes, load) and the model control set by the repository
 * API. Everything has a TTL: a worker that stops beating drops out within
 * its TTL and its leases lapse with it.
 *
 * Key layout: the registry's keys are used together (a heartbeat renews the
 * worker's entry, its leases and the control hash at once), so all of them
 * are under the namespace's hash tag `{<ns>}`: one Redis Cluster slot.
 */
export class WorkerRegistry {
  private readonly scripts: Record<ScriptName, ScriptRunner>;
  constructor(
    readonly redis: RedisConnection,
    readonly namespace: string,
  ) {
    this.scripts = defineScripts(redis);
  }

  /** Prefix of every registry key: its hash tag. */
  get tag(): string {
    return `{${this.namespace}}`;
  }
  get workersKey(): string {
    return `${this.tag}:workers`;
  }
  workerKey(id: string): string {
    return `${this.tag}:worker:${id}`;
  }
  leaseKey(node: string, kind: string, device: number): string {
    return `${this.tag}:lease:${node}:${kind}:${device}`;
  }
  get controlKey(): string {
    return `${this.tag}:control`;
  }
  /** Pub/sub channel: 'worker:<id>' when a worker's description changed, 'control:<model>' on load/unload. */
  get channel(): string {
    return `${this.namespace}:registry`;
  }

  /** A key without TTL, written once: its absence means Redis lost the namespace's data. */
  get aliveKey(): string {
    return `${this.tag}:alive`;
  }

  /**
   * Make sure the alive mark exists; true when it had to be written (the
   * first start of the namespace, or Redis lost everything since).
   */
  async markAlive(): Promise<boolean> {
    return (await this.redis.set(this.aliveKey, String(Date.now()), 'NX')) === 'OK';
  }

  /**
   * Take `count` free devices among `candidates` (in that order) for `workerId`,
   * all or none; null while fewer are free.
   */
  async claimDevices(
    workerId: string,
    node: string,
    kind: string,
    candidates: readonly number[],
    count: number,
    leaseTtlMs: number,
  ): Promise<number[] | null> {
    if (count < 1 || count > candidates.length) {
      throw new RangeError(`cannot claim ${count} of ${candidates.length} devices`);
    }
    const res = (await this.scripts['claim-devices'](
      candidates.map((d) => this.leaseKey(node, kind, d)),
      [workerId, leaseTtlMs, count],
    )) as number[];
    if (res[0] !== 1) return null;
    return res.slice(1).map((i) => candidates[i - 1] as number);
  }

  /** Holder of a device's lease, or null when it is free. */
  leaseHolder(node: string, kind: string, device: number): Promise<string | null> {
    return this.redis.get(this.leaseKey(node, kind, device));
  }

  /**
   * Renew the worker's leases and description. `wanted`: models to mark
   * wanted unless the control hash already has them (first beat).
   */
  async heartbeat(
    info: WorkerInfo,
    opts: { ttlMs: number; leaseTtlMs: number; changed: boolean; wanted?: readonly string[]; now?: number },
  ): Promise<HeartbeatResult> {
    const res = (await this.scripts['heartbeat-worker'](
      [
        this.workersKey,
        this.workerKey(info.id),
        this.controlKey,
        ...info.devices.map((d) => this.leaseKey(info.node, info.kind, d)),
      ],
      [
        info.id,
        opts.now ?? Date.now(),
        opts.ttlMs,
        JSON.stringify(info),
        opts.leaseTtlMs,
        this.channel,
        opts.changed ? '1' : '0',
        CONTROL_TTL_MS,
        ...(opts.wanted ?? []),
      ],
    )) as number[];
    if (res[0] === 1) return { ok: true };
    return { ok: false, lostDevices: res.slice(1).map((i) => info.devices[i - 1] as number) };
  }

  /** Leave the registry and free the leases; the number of leases freed. */
  async release(info: Pick<WorkerInfo, 'id' | 'node' | 'kind' | 'devices'>): Promise<number> {
    return (await this.scripts['release-worker'](
      [this.workersKey, this.workerKey(info.id), ...info.devices.map((d) => this.leaseKey(info.node, info.kind, d))],
      [info.id, this.channel],
    )) as number;
  }

  /** Every worker whose heartbeat has not lapsed, by id. */
  async liveWorkers(now = Date.now()): Promise<WorkerInfo[]> {
    const ids = await this.redis.zrangebyscore(this.workersKey, `(${now}`, '+inf');
    if (ids.length === 0) return [];
    const docs = await this.redis.mget(...ids.map((id) => this.workerKey(id)));
    const out: WorkerInfo[] = [];
    for (const d of docs) {
      if (!d) continue;
      try {
        out.push(JSON.parse(d) as WorkerInfo);
      } catch {
        // A malformed entry is skipped; its worker rewrites it on the next beat.
      }
    }
    return out.sort((a, b) => a.id.localeCompare(b.id));
  }

  /**
   * Lanes ready for a model on live workers that are not draining: the
   * number of batches the mesh can run at once.
   */
  async liveLanes(model: string, now = Date.now()): Promise<number> {
    return lanesOf(await this.liveWorkers(now), model);
  }

  /** Ask the mesh to load or unload a model; the new control generation. */
  async setControl(model: string, action: ModelControl['action']): Promise<number> {
    const gen = (await this.scripts['set-model-control'](
      [this.controlKey],
      [model, action, CONTROL_TTL_MS, this.channel],
    )) as number;
    if (gen < 0) throw new RangeError(`unknown model control action '${action}'`);
    return gen;
  }

  /** The control entry of every model that has one. */
  async controls(): Promise<Map<string, ModelControl>> {
    const h = await this.redis.hgetall(this.controlKey);
    const out = new Map<string, ModelControl>();
    for (const [model, v] of Object.entries(h)) {
      const m = /^(load|unload):(\d+)$/.exec(v);
      if (m) out.set(model, { action: m[1] as ModelControl['action'], generation: Number(m[2]) });
    }
    return out;
  }
}

/** Ready lanes of `model` among `workers` (draining workers excluded). */
export function lanesOf(workers: readonly WorkerInfo[], model: string): number {
  let lanes = 0;
  for (const w of workers) {
    if (w.state === 'draining') continue;
    for (const m of w.models) if (m.model === model && m.state === 'ready') lanes += m.lanes;
  }
  return lanes;
}
