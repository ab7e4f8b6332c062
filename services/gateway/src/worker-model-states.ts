import type { ConfigError, Repository, RepositoryModel } from '@ge-mesh/model-repository';
import { CoalescedPasses, type ModelControl, type WorkerInfo, type WorkerRegistry } from '@ge-mesh/store';
import type { Logger } from '@ge-mesh/telemetry';
import { configErrorReason, type ModelIndexEntry, type ModelReadyState, type ModelStates } from './model-states.js';

/** How often the registry is re-read besides its change notifications (a dead worker sends none). */
const REFRESH_MS = 500;
/**
 * How long the registry takes to fill again once Redis is back (or came back
 * empty): live workers rewrite their entries every heartbeat (1 s by
 * default), so two of them and a refresh.
 */
export const REGISTRY_REFILL_MS = 2_500;

interface Snapshot {
  readonly workers: readonly WorkerInfo[];
  readonly controls: ReadonlyMap<string, ModelControl>;
}

/**
 * Model readiness from the worker registry: a version is READY only while
 * a live worker that is not draining has it loaded and warmed up. The
 * repository API's requests show through the model control: LOADING from
 * the load request until a worker reports the model ready, UNLOADING while
 * a worker still holds an unloaded model, then UNAVAILABLE ("unloaded").
 *
 * Answers are synchronous, from a snapshot of the registry refreshed on
 * every registry notification and every REFRESH_MS, so a worker that dies
 * without a word stops counting within its heartbeat TTL plus REFRESH_MS.
 */
export class WorkerModelStates implements ModelStates {
  private snapshot: Snapshot = { workers: [], controls: new Map() };
  private readonly models: Map<string, RepositoryModel>;
  private readonly errors: Map<string, ConfigError>;
  private timer?: NodeJS.Timeout;
  private sub?: WorkerRegistry['redis'];
  private readonly refreshes = new CoalescedPasses(
    () => this.read(),
    (err) => this.log?.warn({ err: err.message }, 'worker registry not read; keeping the last view'),
  );
  /** stateOf's answers for the current snapshot and models (every request asks; they change far less often). */
  private readonly known = new Map<string, { state: ModelReadyState; reason?: string }>();
  private waiters: Array<() => void> = [];
  private started = false;
  private rebuildingUntil = 0;

  private constructor(
    private readonly repository: Repository,
    readonly registry: WorkerRegistry,
    private readonly log?: Logger,
    /** Whether a model with no control entry is loaded (explicit model control: only --load-model). */
    private readonly startsLoaded: (model: string) => boolean = () => true,
  ) {
    this.models = new Map(repository.models);
    this.errors = new Map(repository.errors);
  }

  static async start(
    repository: Repository,
    registry: WorkerRegistry,
    log?: Logger,
    startsLoaded?: (model: string) => boolean,
  ): Promise<WorkerModelStates> {
    const s = new WorkerModelStates(repository, registry, log, startsLoaded);
    await s.refresh();
    const sub = registry.redis.duplicate();
    s.sub = sub;
    sub.on('error', (err: Error) => log?.warn({ err: err.message }, 'registry notifications: redis error'));
    sub.on('message', () => void s.refresh());
    await sub.subscribe(registry.channel);
    s.timer = setInterval(() => void s.refresh(), REFRESH_MS);
    return s;
  }

  /** Re-read the registry now (coalesced with a read in progress). */
  refresh(): Promise<void> {
    return this.refreshes.run();
  }

  private async read(): Promise<void> {
    const [wiped, workers, controls] = await Promise.all([
      this.registry.markAlive(),
      this.registry.liveWorkers(),
      this.registry.controls(),
    ]);
    if (wiped && this.started) {
      // Redis lost everything (FLUSHALL, a restart without persistence): the workers write the
      // registry again with their next heartbeats; until then keep the last view, not ready.
      this.rebuildingUntil = Date.now() + REGISTRY_REFILL_MS;
      this.log?.warn({ refillMs: REGISTRY_REFILL_MS }, 'Redis lost the mesh state; rebuilding it from live workers');
    }
    this.started = true;
    if (this.rebuilding) return;
    this.snapshot = { workers, controls };
    this.known.clear();
    for (const wake of this.waiters.splice(0)) wake();
  }

  /** Resolves true once `done()` holds after a refresh, false after `timeoutMs`. */
  async until(done: () => boolean, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (!done()) {
      const left = deadline - Date.now();
      if (left <= 0) return false;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.min(left, REFRESH_MS * 2));
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    return true;
  }

  /** Redis lost the registry a moment ago and the workers are writing it again. */
  get rebuilding(): boolean {
    return Date.now() < this.rebuildingUntil;
  }

  get workers(): readonly WorkerInfo[] {
    return this.snapshot.workers;
  }

  control(name: string): ModelControl | undefined {
    return this.snapshot.controls.get(name);
  }

  /** A model read again from the repository (the load API): its config replaces the one known. */
  setModel(model: RepositoryModel): void {
    this.models.set(model.name, model);
    this.errors.delete(model.name);
    this.known.clear();
  }

  /**
   * The model's folder no longer loads (a poll found its config broken), or
   * loads again (`err` undefined). A model being served keeps its last good
   * version and shows the error as the reason of its rows; one never loaded
   * shows UNAVAILABLE with it.
   */
  setLoadError(name: string, err: ConfigError | undefined): void {
    if (err) this.errors.set(name, err);
    else this.errors.delete(name);
  }

  model(name: string): RepositoryModel | undefined {
    return this.models.get(name);
  }

  names(): string[] {
    return [...this.models.keys()].sort();
  }

  /** The state of a version, and why it is not ready. */
  private stateOf(name: string, version: string): { state: ModelReadyState; reason?: string } {
    const key = `${name}\u0000${version}`;
    let s = this.known.get(key);
    if (!s) {
      s = this.computeState(name, version);
      this.known.set(key, s);
    }
    return s;
  }

  private computeState(name: string, version: string): { state: ModelReadyState; reason?: string } {
    const ctl = this.snapshot.controls.get(name);
    const ensemble = this.models.get(name)?.config.ensemble;
    if (ensemble) {
      if (ctl?.action === 'unload' || (!ctl && !this.startsLoaded(name)))
        return { state: 'UNAVAILABLE', reason: 'unloaded' };
      return this.ensembleState(ensemble.steps);
    }
    const held = this.snapshot.workers.flatMap((w) =>
      w.models.filter((m) => m.model === name && m.versions.includes(version)).map((m) => ({ w, m })),
    );
    if (ctl?.action === 'unload' || (!ctl && !this.startsLoaded(name)))
      return held.length > 0 ? { state: 'UNLOADING' } : { state: 'UNAVAILABLE', reason: 'unloaded' };
    if (held.some(({ w, m }) => m.state === 'ready' && w.state !== 'draining')) return { state: 'READY' };
    if (held.some(({ m }) => m.state === 'loading')) return { state: 'LOADING' };
    // A load request no worker has answered yet, while some live worker may load the model.
    if (ctl && ctl.generation > 0 && this.eligible(name).some((w) => !this.answered(w, name, ctl.generation))) {
      return { state: 'LOADING' };
    }
    if (held.some(({ m }) => m.state === 'unloading')) return { state: 'UNLOADING' };
    const failed = held.find(({ m }) => m.state === 'failed');
    if (failed) return { state: 'UNAVAILABLE', reason: failed.m.error ?? 'failed to load' };
    return { state: 'UNAVAILABLE', reason: 'no live worker serves this model' };
  }

  /**
   * An ensemble is READY while every step's model has the version it names
   * (or, for -1, some version) ready; LOADING while one of them loads.
   */
  private ensembleState(steps: readonly { modelName: string; modelVersion: number }[]): {
    state: ModelReadyState;
    reason?: string;
  } {
    let loading = false;
    for (const step of steps) {
      const m = this.models.get(step.modelName);
      const versions =
        step.modelVersion === -1 ? (m?.versions.map((v) => v.version) ?? []) : [String(step.modelVersion)];
      const states = m ? versions.map((v) => this.stateOf(step.modelName, v).state) : [];
      if (states.includes('READY')) continue;
      if (states.includes('LOADING')) {
        loading = true;
        continue;
      }
      return { state: 'UNAVAILABLE', reason: `step model '${step.modelName}' is not ready` };
    }
    return loading ? { state: 'LOADING' } : { state: 'READY' };
  }

  /** Live workers, not draining, that may load the model. */
  eligible(name: string): WorkerInfo[] {
    return this.snapshot.workers.filter(
      (w) => w.state !== 'draining' && (w.eligible === '*' || w.eligible.includes(name)),
    );
  }

  /** Whether a worker answered load generation `gen` of a model (ready or failed). */
  answered(w: WorkerInfo, name: string, gen: number): boolean {
    return w.models.some(
      (m) => m.model === name && m.generation >= gen && (m.state === 'ready' || m.state === 'failed'),
    );
  }

  versionState(name: string, version: string): ModelReadyState | undefined {
    const m = this.models.get(name);
    if (!m?.versions.some((v) => v.version === version)) return undefined;
    return this.stateOf(name, version).state;
  }

  readyVersions(name: string): string[] {
    const m = this.models.get(name);
    if (!m) return [];
    return m.versions
      .map((v) => v.version)
      .filter((v) => this.stateOf(name, v).state === 'READY')
      .sort((a, b) => Number(b) - Number(a));
  }

  /** Every model the mesh wants loaded (served at start, or loaded through the API) has a ready version. */
  allReady(): boolean {
    for (const [name, ctl] of this.snapshot.controls) {
      if (ctl.action === 'load' && this.models.has(name) && this.readyVersions(name).length === 0) return false;
    }
    return true;
  }

  index(readyOnly: boolean): ModelIndexEntry[] {
    const rows: ModelIndexEntry[] = [];
    for (const name of [...new Set([...this.models.keys(), ...this.errors.keys()])].sort()) {
      const m = this.models.get(name);
      if (m) {
        const versions = m.versions.map((v) => v.version).sort((a, b) => Number(a) - Number(b));
        for (const version of versions) {
          const s = this.stateOf(name, version);
          if (readyOnly && s.state !== 'READY') continue;
          const broken = this.errors.get(name);
          const reason = !broken
            ? s.reason
            : s.state === 'READY'
              ? `the changed config does not load (${this.reasonOf(broken)}); the last good one serves`
              : this.reasonOf(broken);
          rows.push({ name, version, state: s.state, ...(reason ? { reason } : {}) });
        }
        continue;
      }
      if (readyOnly) continue;
      const err = this.errors.get(name);
      rows.push({ name, state: 'UNAVAILABLE', ...(err ? { reason: this.reasonOf(err) } : {}) });
    }
    return rows;
  }

  private reasonOf(err: ConfigError): string {
    return configErrorReason(this.repository.dir, err);
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.sub?.quit().catch(() => undefined);
  }
}
