import { ConfigError, checkEnsembleSteps, loadModel, type RepositoryModel } from '@ge-mesh/model-repository';
import { MeshError } from '@ge-mesh/protocol';
import type { Logger } from '@ge-mesh/telemetry';
import type { Authorizer } from '../auth.js';
import type { WorkerModelStates } from '../worker-model-states.js';

export interface RepositoryControlDeps {
  states: WorkerModelStates;
  auth: Authorizer;
  /** The model repository folder (models are read again from it on load). */
  repositoryDir: string;
  /** Declares the model's request queue, so requests for a newly loaded model are routable. */
  prepareModel: (model: RepositoryModel) => Promise<void>;
  /** Longest a load waits for the workers (compile and warmup included). */
  loadTimeoutMs?: number;
  /** Longest an unload waits for the workers to finish their batches and let go. */
  unloadTimeoutMs?: number;
  /** Poll model control: the repository is the only source of loads and unloads, as in Triton. */
  polling?: boolean;
  /** How long a load waits for some live worker to say it may load the model (a few heartbeats). */
  noWorkerGraceMs?: number;
  log?: Logger;
}

/** A load or unload as an ingress decoded it. */
export interface ControlCall {
  readonly authorization?: string;
  readonly model: string;
  /** A repository name the client gave (Triton refuses one); undefined or '' = none. */
  readonly repository?: string;
  /** The keys of the request's `parameters`, read after the admin check. */
  readonly parameterKeys: () => Promise<readonly string[]> | readonly string[];
}

/**
 * Triton's model repository extension (load / unload), for REST and gRPC.
 *
 * How a request reaches the workers: the gateway records the wanted state
 * of the model with a new generation in Redis (the model control,
 * set-model-control) and announces it on the registry channel; every worker
 * applies it at once (and re-reads the control on each heartbeat, should
 * the message be missed), then reports the model's state and the generation
 * it answered in its registry entry. The gateway answers when the workers
 * did: a load returns once some worker has the model ready (INVALID_ARGUMENT
 * with the workers' error if every worker that may load it failed), an
 * unload once no worker holds it any more. Readiness follows the registry
 * throughout (LOADING, UNLOADING, then READY or UNAVAILABLE).
 *
 * Both need an admin API key when keys are configured.
 */
export class RepositoryControl {
  constructor(private readonly deps: RepositoryControlDeps) {}

  private async admit(call: ControlCall, action: 'load' | 'unload'): Promise<void> {
    this.deps.auth.requireAdmin(call.authorization);
    if (this.deps.polling) {
      // Triton's answer in this mode; the repository poller owns loads and unloads.
      throw new MeshError('UNAVAILABLE', 'explicit model load / unload is not allowed if polling is enabled');
    }
    if (call.repository !== undefined && call.repository !== '') {
      throw new MeshError('INVALID_ARGUMENT', "'repository_name' specification is not supported");
    }
    const keys = await call.parameterKeys();
    if (keys.some((k) => k === 'config' || k.startsWith('file:'))) {
      throw new MeshError(
        'UNSUPPORTED',
        `failed to ${action} '${call.model}', a config or model files sent with the request are not supported: change the model repository and load again`,
      );
    }
  }

  async load(call: ControlCall): Promise<void> {
    const { states } = this.deps;
    const registry = states.registry;
    const loadTimeoutMs = this.deps.loadTimeoutMs ?? 120_000;
    const graceMs = this.deps.noWorkerGraceMs ?? 3_000;
    await this.admit(call, 'load');
    const name = call.model;
    let model: RepositoryModel;
    try {
      model = await loadModel(this.deps.repositoryDir, name);
      checkEnsembleSteps(model, (step) => (step === name ? undefined : states.model(step)));
    } catch (err) {
      const detail =
        err instanceof ConfigError
          ? err.detail
          : err instanceof MeshError && err.code === 'MODEL_NOT_FOUND'
            ? 'failed to poll from model repository'
            : (err as Error).message;
      throw new MeshError('INVALID_ARGUMENT', `failed to load '${name}', ${detail}`);
    }
    if (model.config.ensemble) return this.loadEnsemble(call, model, loadTimeoutMs);
    states.setModel(model);
    await this.deps.prepareModel(model);
    const gen = await registry.setControl(name, 'load');
    this.deps.log?.info({ model: name, generation: gen }, 'load requested');
    const started = Date.now();
    let outcome: 'ready' | 'failed' | 'no-worker' | undefined;
    await states.until(() => {
      const eligible = states.eligible(name);
      const mine = eligible.flatMap((w) => w.models.filter((m) => m.model === name && m.generation >= gen));
      if (mine.some((m) => m.state === 'ready')) outcome = 'ready';
      else if (eligible.length > 0 && eligible.every((w) => states.answered(w, name, gen))) outcome = 'failed';
      else if (eligible.length === 0 && Date.now() - started > graceMs) outcome = 'no-worker';
      return outcome !== undefined;
    }, loadTimeoutMs);
    if (outcome === 'ready') return;
    const why =
      outcome === 'failed'
        ? (states
            .eligible(name)
            .flatMap((w) => w.models.filter((m) => m.model === name && m.error))
            .map((m) => m.error)[0] ?? 'the workers failed to load it')
        : outcome === 'no-worker'
          ? 'no live worker may serve it (runtime, --models or device_ids)'
          : `no worker had it ready within ${loadTimeoutMs / 1000} s`;
    throw new MeshError('INVALID_ARGUMENT', `failed to load '${name}', ${why}`);
  }

  /**
   * An ensemble has no worker: as in Triton, loading it loads the step
   * models that are not loaded, and it is ready once they all are.
   */
  private async loadEnsemble(call: ControlCall, model: RepositoryModel, timeoutMs: number): Promise<void> {
    const { states } = this.deps;
    const steps = [...new Set(model.config.ensemble?.steps.map((s) => s.modelName))];
    for (const step of steps) {
      if (states.control(step)?.action !== 'load' && states.readyVersions(step).length === 0) {
        await this.load({ ...call, model: step });
      }
    }
    states.setModel(model);
    await this.deps.prepareModel(model);
    const gen = await states.registry.setControl(model.name, 'load');
    this.deps.log?.info({ model: model.name, generation: gen, steps }, 'ensemble load requested');
    await states.refresh();
    const latest = model.versions[0]?.version as string;
    const ready = await states.until(() => states.versionState(model.name, latest) === 'READY', timeoutMs);
    if (!ready) {
      const why = states.index(false).find((r) => r.name === model.name)?.reason ?? 'its steps are not ready';
      throw new MeshError('INVALID_ARGUMENT', `failed to load '${model.name}', ${why}`);
    }
  }

  async unload(call: ControlCall): Promise<void> {
    const { states } = this.deps;
    await this.admit(call, 'unload');
    const name = call.model;
    if (!states.model(name)) {
      throw new MeshError('INVALID_ARGUMENT', `failed to unload '${name}', no model of that name is known`);
    }
    const gen = await states.registry.setControl(name, 'unload');
    this.deps.log?.info({ model: name, generation: gen }, 'unload requested');
    await states.refresh();
    // No worker holds an ensemble; its step models stay loaded (Triton unloads them only when asked).
    if (states.model(name)?.config.ensemble) return;
    const released = await states.until(
      () => states.workers.every((w) => !w.models.some((m) => m.model === name)),
      this.deps.unloadTimeoutMs ?? 60_000,
    );
    if (!released) this.deps.log?.warn({ model: name }, 'unload: a worker still holds the model');
  }
}
