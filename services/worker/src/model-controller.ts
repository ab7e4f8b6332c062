import { availableParallelism } from 'node:os';
import { loadModelOrOverride, type RepositoryModel, sameModel } from '@ge-mesh/model-repository';
import type { ModelOverrides, WorkerModelInfo, WorkerRegistry } from '@ge-mesh/store';
import type { Logger } from '@ge-mesh/telemetry';
import { coreBudget, type Placement, placeModel, threadsPerLane } from './lane-plan.js';
import { ServedModel, type ServedModelDeps } from './served-model.js';
import type { WorkerSettings } from './settings.js';

export interface ModelControllerOptions {
  readonly settings: Pick<
    WorkerSettings,
    'modelRepository' | 'namespace' | 'runtime' | 'drainTimeoutMs' | 'cpuThreads'
  >;
  /** Where the repository API's load/unload requests (model control) are read. */
  readonly registry: WorkerRegistry;
  readonly overrides: ModelOverrides;
  /** The repository's models this worker may serve (its runtime and --models); an explicit load refreshes an entry. */
  readonly view: Map<string, RepositoryModel>;
  /** The --models filter. */
  readonly allowed: (name: string) => boolean;
  /** Whether the control mode loads a model at start (Triton's none and poll: every one). */
  readonly startsLoaded: (name: string) => boolean;
  /** Devices of the machine (ids 0..deviceCount-1). */
  readonly deviceCount: number;
  readonly served: ServedModelDeps;
  /** What this worker serves changed: report it (the registry entry). */
  readonly changed: () => void;
  readonly stopping: () => boolean;
  readonly log: Logger;
}

/**
 * The models a worker serves, kept in line with the model control: loads
 * (and reloads without a gap) what is wanted, drains and unloads what is not.
 * One pass at a time (the caller coalesces them).
 */
export class ModelController {
  /** Models served, by name (loading, ready or failed). */
  readonly served = new Map<string, ServedModel>();
  /**
   * Reloads that failed, each reported beside the version still serving (state
   * 'failed' at the load's generation, with the error), so the load answers
   * with the error while the model stays ready; dropped on the model's next load or unload.
   */
  private readonly failedReloads = new Map<string, ServedModel>();
  /** Model control generation each model was last acted on (loaded, unloaded, or found unplaceable). */
  private readonly acted = new Map<string, number>();
  private devices: readonly number[] = [];
  private cores = 1;

  constructor(private readonly o: ModelControllerOptions) {}

  /**
   * The devices this worker leased: models are placed on them, and the lanes
   * of each model share this worker's part of the cores (lanes × threads
   * must fit it, or lanes fight over them).
   */
  lease(devices: readonly number[]): void {
    this.devices = devices;
    const { settings, deviceCount } = this.o;
    this.cores = coreBudget(settings.cpuThreads, availableParallelism(), devices.length, deviceCount);
  }

  /** Every model reported: those served and the failed reloads beside them. */
  infos(): WorkerModelInfo[] {
    return [...this.served.values(), ...this.failedReloads.values()].map((s) => s.info());
  }

  /** Models of the view that this worker's devices may load. */
  eligible(): string[] {
    return [...this.o.view.values()].filter((m) => this.placeable(m)).map((m) => m.name);
  }

  placeable(m: RepositoryModel): boolean {
    let p: Placement;
    try {
      p = placeModel(m.config, this.devices, this.o.deviceCount);
    } catch {
      return true; // reported as failed when loaded
    }
    return p.devices.length > 0;
  }

  /** Bring the served models in line with the model control (load/unload from the repository API). */
  async reconcile(): Promise<void> {
    const { view, log, settings } = this.o;
    const controls = await this.o.registry.controls();
    for (const name of new Set([...view.keys(), ...controls.keys()])) {
      if (this.o.stopping()) return;
      if (!this.o.allowed(name)) continue;
      const ctl = controls.get(name);
      // No entry: as the control mode loads models at start (Triton's none and poll: every one).
      const action = ctl?.action ?? (this.o.startsLoaded(name) ? 'load' : 'unload');
      const gen = ctl?.generation ?? 0;
      const current = this.served.get(name);
      if (action === 'unload') {
        if (this.failedReloads.delete(name)) this.o.changed();
        if (current && current.state !== 'unloading') {
          log.info({ model: name, generation: gen }, 'unloading');
          await current.unload(settings.drainTimeoutMs, {
            code: 'MODEL_NOT_READY',
            message: `model '${name}' was unloaded while the request was running, and its run did not end within the worker's drain timeout (${settings.drainTimeoutMs} ms)`,
          });
          this.served.delete(name);
          this.o.changed();
        }
        this.acted.set(name, gen);
        continue;
      }
      if (current ? current.generation >= gen : (this.acted.get(name) ?? -1) >= gen) continue;
      this.acted.set(name, gen);
      if (this.failedReloads.delete(name)) this.o.changed();
      const model = await this.read(name, gen);
      if (!model) continue;
      let p: Placement;
      try {
        p = placeModel(model.config, this.devices, this.o.deviceCount);
      } catch (err) {
        this.served.set(name, ServedModel.failed(model, gen, (err as Error).message, this.o.served));
        this.o.changed();
        continue;
      }
      if (p.devices.length === 0) continue;
      if (current) {
        if (current.state === 'ready' && sameModel(current.model, model)) {
          // Loading a model that is loaded and unchanged: nothing to do but answer this generation.
          current.generation = gen;
          this.o.changed();
          continue;
        }
        if (current.state === 'ready') {
          await this.reload(current, model, p, gen);
          continue;
        }
        await current.unload(settings.drainTimeoutMs);
        this.served.delete(name);
      }
      const sm = new ServedModel(model, p, this.threads(model, p), gen, this.o.served);
      this.served.set(name, sm);
      this.o.changed();
      await sm.load();
    }
  }

  /**
   * The model to load: the view's, or, for an explicit load (or a model the
   * view lacks), read again as Triton re-reads the repository; undefined
   * when it cannot be read or is another runtime's.
   */
  private async read(name: string, gen: number): Promise<RepositoryModel | undefined> {
    const { view, settings } = this.o;
    const known = view.get(name);
    if (gen === 0 && known) return known;
    let model: RepositoryModel;
    try {
      model = await loadModelOrOverride(
        settings.modelRepository,
        name,
        await this.o.overrides.get(name),
        settings.namespace,
      );
    } catch (err) {
      this.o.log.error({ model: name, err: (err as Error).message }, 'model not loaded');
      return undefined;
    }
    if (model.config.runtime !== settings.runtime) return undefined;
    view.set(name, model);
    return model;
  }

  /**
   * Each model's lanes split the worker's cores between them. Models do not
   * divide the cores among themselves: a model alone under load (the common
   * case) then uses the whole device, and ORT's threads do not spin, so
   * models busy at once share the cores without burning them.
   */
  private threads(model: RepositoryModel, p: Placement): number {
    return threadsPerLane(this.cores, p.devices.length * p.lanesPerDevice * model.versions.length);
  }

  /**
   * A changed model without a gap: the new version loads and warms (its own
   * lanes, beside the current ones) while the current version serves, then
   * consumes the batch queue with it, and only then is the current one drained
   * and closed. Batches formed under the old config still reach the new lanes
   * meanwhile; a batch larger than its largest tier runs in several runs
   * (execute-batch). A new version that fails to load leaves the current one
   * serving and its failure reported (failedReloads).
   */
  private async reload(current: ServedModel, model: RepositoryModel, p: Placement, gen: number): Promise<void> {
    const { log } = this.o;
    const name = model.name;
    log.info({ model: name, generation: gen }, 'reloading: the new version warms up while the current one serves');
    const next = new ServedModel(model, p, this.threads(model, p), gen, this.o.served);
    await next.load();
    if (next.state !== 'ready') {
      this.failedReloads.set(name, next);
      this.o.changed();
      log.error(
        { model: name, generation: gen, err: next.error },
        'reload failed: the current version goes on serving',
      );
      return;
    }
    this.served.set(name, next);
    this.o.changed();
    await current.unload(this.o.settings.drainTimeoutMs);
    log.info({ model: name, generation: gen }, 'reloaded: the previous version drained');
  }
}
