import {
  ConfigError,
  checkEnsembleSteps,
  checkOverridePath,
  configTextFromJson,
  loadModel,
  loadOverriddenModel,
  type ModelOverride,
  overrideId,
  type RepositoryModel,
} from '@ge-mesh/model-repository';
import { MeshError } from '@ge-mesh/protocol';
import type { ModelOverrides } from '@ge-mesh/store';
import type { Logger } from '@ge-mesh/telemetry';
import type { Authorizer } from '../auth.js';
import type { WorkerModelStates } from '../worker-model-states.js';

export interface RepositoryControlDeps {
  states: WorkerModelStates;
  auth: Authorizer;
  /** The model repository folder (models are read again from it on load). */
  repositoryDir: string;
  /** Models pushed through the load API, in Redis for every service. */
  overrides: ModelOverrides;
  /** Where this host stages pushed models (overrideStagingDir). */
  stagingDir: string;
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

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** A load or unload as an ingress decoded it. */
export interface ControlCall {
  readonly authorization?: string;
  readonly model: string;
  /** A repository name the client gave (Triton refuses one); undefined or '' = none. */
  readonly repository?: string;
  /** The request's `parameters`, read after the admin check (REST: JSON values; gRPC: the oneof's value). */
  readonly parameters: () =>
    | Promise<Readonly<Record<string, ControlParameter>>>
    | Readonly<Record<string, ControlParameter>>;
}

/** A load/unload parameter: `file:` contents are base64 text over REST, bytes over gRPC. */
export type ControlParameter = string | number | boolean | Uint8Array | null | object;

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

  /** The admin and mode checks; then the request's parameters (a malformed body fails here). */
  private async admit(call: ControlCall): Promise<Readonly<Record<string, ControlParameter>>> {
    this.deps.auth.requireAdmin(call.authorization);
    if (this.deps.polling) {
      // Triton's answer in this mode; the repository poller owns loads and unloads.
      throw new MeshError('UNAVAILABLE', 'explicit model load / unload is not allowed if polling is enabled');
    }
    if (call.repository !== undefined && call.repository !== '') {
      throw new MeshError('INVALID_ARGUMENT', "'repository_name' specification is not supported");
    }
    return call.parameters();
  }

  /**
   * Triton's load parameters: `config` (the ModelConfig as JSON) and
   * `file:<version>/<name>` contents (which need a config: together they
   * replace the model's folder). Undefined when the load names neither.
   */
  private overrideOf(name: string, params: Readonly<Record<string, ControlParameter>>): ModelOverride | undefined {
    const files = new Map<string, Uint8Array>();
    for (const [key, value] of Object.entries(params)) {
      if (!key.startsWith('file:')) continue;
      const path = key.slice('file:'.length);
      try {
        checkOverridePath(path);
      } catch (err) {
        throw new MeshError('INVALID_ARGUMENT', `failed to load '${name}', ${(err as ConfigError).detail}`);
      }
      if (value instanceof Uint8Array) files.set(path, value);
      else if (typeof value === 'string' && BASE64.test(value)) files.set(path, Buffer.from(value, 'base64'));
      else {
        throw new MeshError(
          'INVALID_ARGUMENT',
          `failed to load '${name}', parameter '${key}' must be the file's contents in base64`,
        );
      }
    }
    const config = params.config;
    if (config === undefined || config === null) {
      if (files.size === 0) return undefined;
      throw new MeshError(
        'INVALID_ARGUMENT',
        `failed to load '${name}', model files sent with the request need a 'config' parameter too (the files and the config replace the model's folder)`,
      );
    }
    if (typeof config !== 'string') {
      throw new MeshError('INVALID_ARGUMENT', `failed to load '${name}', parameter 'config' must be a JSON string`);
    }
    let text: string;
    try {
      text = configTextFromJson(config, `config of '${name}'`);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      throw new MeshError('INVALID_ARGUMENT', `failed to load '${name}', ${err.detail}`);
    }
    return { id: overrideId(text, files), config: text, files };
  }

  async load(call: ControlCall): Promise<void> {
    const { states } = this.deps;
    const registry = states.registry;
    const loadTimeoutMs = this.deps.loadTimeoutMs ?? 120_000;
    const graceMs = this.deps.noWorkerGraceMs ?? 3_000;
    const params = await this.admit(call);
    const name = call.model;
    const override = this.overrideOf(name, params);
    let model: RepositoryModel;
    try {
      model = override
        ? await loadOverriddenModel(this.deps.repositoryDir, name, override, this.deps.stagingDir)
        : await loadModel(this.deps.repositoryDir, name);
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
    // Every service reads the model again for this load: from the override, or (none) the repository.
    if (override) await this.deps.overrides.put(name, override);
    else await this.deps.overrides.clear(name);
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
        // The step as the repository has it: the ensemble's own parameters are not the step's.
        await this.load({ ...call, model: step, parameters: () => ({}) });
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
    await this.admit(call);
    const name = call.model;
    // Unloading a model no one knows changes nothing, and succeeds, as in Triton.
    if (!states.model(name)) return;
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
