import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { type ConfigError, loadRepository, type Repository, type RepositoryModel } from '@ge-mesh/model-repository';
import type { WorkerRegistry } from '@ge-mesh/store';
import type { Logger } from '@ge-mesh/telemetry';

export interface RepositoryPollerDeps {
  readonly dir: string;
  readonly registry: WorkerRegistry;
  readonly log: Logger;
  /** Before a model's load is announced: make it routable and known to this gateway (queues, metrics, states). */
  readonly prepare: (model: RepositoryModel) => Promise<void>;
  /** A model's folder stopped loading (its error), or loads again (undefined): for the repository index. */
  readonly onLoadError?: (name: string, err: ConfigError | undefined) => void;
}

/**
 * Triton's poll model control: rescans the repository every interval and
 * turns what changed into model control, as the repository API would. A
 * model added, or changed (its config, its version folders, or the time a
 * version's model file or the config was last written), is loaded: a new
 * control generation, so workers read it again and reload it, and batchers
 * take the new config once a worker has it ready. A model whose folder is
 * gone is unloaded. A model whose config no longer loads keeps its last good
 * version serving; the error is logged once per change and shown in the
 * repository index until the folder loads again.
 *
 * One poller per mesh does the work (every gateway of a poll-mode mesh polls;
 * control writes are idempotent per change, so a second poller only repeats
 * a generation the workers answer as unchanged).
 */
export class RepositoryPoller {
  /** Fingerprint of each model as last announced. */
  private readonly known = new Map<string, string>();
  /** Last error logged per model. */
  private readonly errors = new Map<string, string>();
  private timer?: NodeJS.Timeout;
  private polling?: Promise<void>;

  constructor(private readonly deps: RepositoryPollerDeps) {}

  /** Remember the repository as read at start (loaded by every service then), and poll from now on. */
  async start(initial: Repository, intervalMs: number): Promise<void> {
    for (const m of initial.models.values()) this.known.set(m.name, await fingerprint(m));
    const tick = () => {
      this.timer = setTimeout(() => {
        this.polling = this.poll().finally(tick);
      }, intervalMs);
    };
    tick();
  }

  /** One rescan; never throws (a failed scan is logged and the next one tries again). */
  async poll(): Promise<void> {
    const { dir, registry, log } = this.deps;
    try {
      const repo = await loadRepository(dir);
      for (const m of repo.models.values()) {
        const fp = await fingerprint(m);
        if (this.errors.delete(m.name)) this.deps.onLoadError?.(m.name, undefined);
        if (this.known.get(m.name) === fp) continue;
        await this.deps.prepare(m);
        const generation = await registry.setControl(m.name, 'load');
        log.info({ model: m.name, generation, added: !this.known.has(m.name) }, 'repository poll: loading model');
        this.known.set(m.name, fp);
      }
      for (const [name, err] of repo.errors) {
        if (this.errors.get(name) === err.message) continue;
        this.errors.set(name, err.message);
        this.deps.onLoadError?.(name, err);
        log.error({ model: name, err: err.message }, 'repository poll: model not loaded; its last version goes on');
      }
      for (const name of [...this.known.keys()]) {
        if (repo.models.has(name) || repo.errors.has(name)) continue;
        if (this.errors.delete(name)) this.deps.onLoadError?.(name, undefined);
        const generation = await registry.setControl(name, 'unload');
        log.info({ model: name, generation }, 'repository poll: model removed; unloading');
        this.known.delete(name);
      }
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'repository poll failed; next one retries');
    }
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    await this.polling;
  }
}

/** What a change of the model looks like on disk: its parsed config, its versions and when their files were written. */
async function fingerprint(m: RepositoryModel): Promise<string> {
  const written = async (path: string) => (await stat(path).catch(() => undefined))?.mtimeMs ?? 0;
  const files = [
    await written(m.configFile ?? join(m.dir, 'config.pbtxt')),
    ...(await Promise.all(m.versions.map((v) => written(v.modelPath)))),
  ];
  return JSON.stringify([m.config.raw, m.versions, files]);
}
