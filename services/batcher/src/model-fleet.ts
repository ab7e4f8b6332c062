import { type RepositoryModel, sameModel } from '@ge-mesh/model-repository';
import { CoalescedPasses, type WorkerInfo, type WorkerRegistry } from '@ge-mesh/store';
import type { Logger } from '@ge-mesh/telemetry';
import type { ModelBatcher } from './model-batcher.js';

/** Model control is read again this often, should a notification be missed (e.g. across a Redis restart). */
const RECHECK_MS = 5_000;

export interface ModelFleetDeps {
  /** Reads a model again for a load: from the repository, or from what the load API pushed for it. */
  readonly loadModel: (name: string) => Promise<RepositoryModel>;
  readonly registry: WorkerRegistry;
  /** The --models filter. */
  readonly allowed: (model: string) => boolean;
  /** Whether a model with no control entry yet is loaded (settings' loadedAtStart). */
  readonly startsLoaded: (model: string) => boolean;
  readonly create: (model: RepositoryModel) => ModelBatcher;
  readonly log: Logger;
  /** Told of every batcher started (metrics). */
  readonly onStarted?: (model: RepositoryModel) => void;
}

interface Running {
  readonly batcher: ModelBatcher;
  readonly model: RepositoryModel;
  /** The model control generation this batcher answers. */
  generation: number;
}

/**
 * The models this batcher batches, following the mesh's model control (the
 * repository API's load and unload, kept in Redis with a generation per
 * model, which the workers follow too). A model loaded after start gets a
 * batcher; an unloaded one loses it; a model loaded again is read again from
 * the repository, and when its config changed (tiers, delays, queue policy,
 * priorities) a new batcher takes over, but only once a worker reports that
 * generation ready (compiled and warmed), so no batch is formed for a tier no
 * lane has yet. Until then the old batcher goes on with the old config. The
 * batcher it replaces gives its held requests back to the queue, where the new
 * one takes them: none is dropped.
 */
export class ModelFleet {
  private readonly running = new Map<string, Running>();
  /** The generation each model last failed to load at (logged once per generation). */
  private readonly failed = new Map<string, number>();
  private readonly passes = new CoalescedPasses(
    () => this.pass(),
    (err) => this.deps.log.warn({ err: err.message }, 'model control not applied; retrying'),
    () => this.stopped,
  );
  private timer?: NodeJS.Timeout;
  private stopped = false;

  constructor(
    /** The repository as read at start: what generation 0 (no control entry yet) means. */
    private readonly initial: ReadonlyMap<string, RepositoryModel>,
    private readonly deps: ModelFleetDeps,
  ) {}

  get batchers(): ModelBatcher[] {
    return [...this.running.values()].map((r) => r.batcher);
  }

  /** Apply the model control now, then on every change (`notify`) and every RECHECK_MS. */
  async start(): Promise<void> {
    await this.reconcile();
    const tick = () => {
      this.timer = setTimeout(() => {
        void this.reconcile().finally(() => {
          if (!this.stopped) tick();
        });
      }, RECHECK_MS);
    };
    tick();
  }

  /** A registry notification (a control change, or a worker's models changed): reconcile soon. */
  notify(): void {
    void this.reconcile();
  }

  /** One pass at a time; a change during a pass runs another. */
  reconcile(): Promise<void> {
    return this.passes.run();
  }

  private async pass(): Promise<void> {
    const { registry, allowed, log } = this.deps;
    const controls = await registry.controls();
    let workers: WorkerInfo[] | undefined;
    for (const name of new Set([...this.initial.keys(), ...this.running.keys(), ...controls.keys()])) {
      if (this.stopped) return;
      if (!allowed(name)) continue;
      const ctl = controls.get(name);
      // No entry: as the control mode loads models at start (Triton's none and poll: every one).
      const action = ctl?.action ?? (this.deps.startsLoaded(name) ? 'load' : 'unload');
      const generation = ctl?.generation ?? 0;
      const current = this.running.get(name);
      if (action === 'unload') {
        if (current) {
          this.running.delete(name);
          // What is still queued for it is answered now, not left to its deadline.
          await current.batcher.retire();
          log.info({ model: name, generation }, 'model unloaded: batching stopped');
        }
        continue;
      }
      if (current && current.generation >= generation) continue;
      const model = await this.read(name, generation);
      // An ensemble has no queue of its own: the gateways send each step to its model's batcher.
      if (!model || model.config.ensemble) continue;
      if (current && sameModel(current.model, model)) {
        current.generation = generation;
        continue;
      }
      // Generation 0 is the repository every service read at start: no one to wait for.
      if (generation > 0) {
        workers ??= await registry.liveWorkers();
        if (!readyAt(workers, name, generation)) continue; // a worker's report wakes the next pass
      }
      if (current) {
        this.running.delete(name);
        await current.batcher.stop();
      }
      const batcher = this.deps.create(model);
      this.running.set(name, { batcher, model, generation });
      await batcher.start();
      this.deps.onStarted?.(model);
      log.info(
        {
          model: name,
          generation,
          tiers: model.config.tiers,
          delayUs: model.config.dynamicBatching?.maxQueueDelayMicroseconds ?? 0,
          replaced: current !== undefined,
        },
        current ? 'model config changed: batching with the new one' : 'batching model',
      );
    }
  }

  /** The model as this generation means it: the start-time read for 0, read again for a load. */
  private async read(name: string, generation: number): Promise<RepositoryModel | undefined> {
    const known = this.initial.get(name);
    if (generation === 0 && known) return known;
    try {
      const model = await this.deps.loadModel(name);
      this.failed.delete(name);
      return model;
    } catch (err) {
      // The old batcher (if any) goes on; the workers keep the old version serving too.
      if (this.failed.get(name) !== generation) {
        this.failed.set(name, generation);
        this.deps.log.error({ model: name, generation, err: (err as Error).message }, 'model not loaded');
      }
      return undefined;
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.passes.idle();
    await Promise.all(this.batchers.map((b) => b.stop()));
  }
}

/** Some live worker serves the model ready at this control generation or a later one. */
function readyAt(workers: readonly WorkerInfo[], model: string, generation: number): boolean {
  return workers.some(
    (w) =>
      w.state !== 'draining' &&
      w.models.some((m) => m.model === model && m.state === 'ready' && m.generation >= generation),
  );
}
