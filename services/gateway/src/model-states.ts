import { relative } from 'node:path';
import type { ConfigError, Repository, RepositoryModel } from '@ge-mesh/model-repository';

/** Triton's model version states, as the repository index names them. */
export type ModelReadyState = 'UNKNOWN' | 'READY' | 'UNAVAILABLE' | 'LOADING' | 'UNLOADING';

/** One row of the repository index: a model version and its state, or a model with none. */
export interface ModelIndexEntry {
  readonly name: string;
  /** Absent for a model with no version known (e.g. its config failed to load). */
  readonly version?: string;
  readonly state: ModelReadyState;
  /** Why the model is not ready; absent when there is nothing to say. */
  readonly reason?: string;
}

/**
 * What the gateway asks about models: which exist, which versions are ready,
 * and the repository index. Every answer is read at call time, so an
 * implementation may change underneath (models loaded and unloaded, workers
 * coming and going).
 *
 * The gateway routes, answers metadata/config/ready/stats and validates
 * requests with it; it never reads the repository itself.
 */
export interface ModelStates {
  /** The model with its config, or undefined when no model of that name is known. */
  model(name: string): RepositoryModel | undefined;
  /** Every known model's name, sorted. */
  names(): string[];
  /** The state of one version; undefined when the model has no such version. */
  versionState(name: string, version: string): ModelReadyState | undefined;
  /** The ready versions of a model, highest first (empty when none or unknown). */
  readyVersions(name: string): string[];
  /** Whether every known model has a ready version (Triton's strict readiness). */
  allReady(): boolean;
  /** The repository index, sorted by name then version; `readyOnly` keeps READY rows only. */
  index(readyOnly: boolean): ModelIndexEntry[];
}

/**
 * Today's states: the models of the repository read at startup are READY
 * (every servable version), and folders whose config did not load are
 * UNAVAILABLE with the reason. Paths in reasons are made relative to the
 * repository so no server path leaks out.
 */
export class RepositoryModelStates implements ModelStates {
  constructor(private readonly repository: Repository) {}

  model(name: string): RepositoryModel | undefined {
    return this.repository.models.get(name);
  }

  names(): string[] {
    return [...this.repository.models.keys()].sort();
  }

  versionState(name: string, version: string): ModelReadyState | undefined {
    const m = this.repository.models.get(name);
    return m?.versions.some((v) => v.version === version) ? 'READY' : undefined;
  }

  readyVersions(name: string): string[] {
    return this.repository.models.get(name)?.versions.map((v) => v.version) ?? [];
  }

  allReady(): boolean {
    for (const m of this.repository.models.values()) if (m.versions.length === 0) return false;
    return true;
  }

  index(readyOnly: boolean): ModelIndexEntry[] {
    const rows: ModelIndexEntry[] = [];
    const names = [...new Set([...this.repository.models.keys(), ...this.repository.errors.keys()])].sort();
    for (const name of names) {
      const m = this.repository.models.get(name);
      if (m) {
        const versions = [...m.versions].map((v) => v.version).sort((a, b) => Number(a) - Number(b));
        for (const version of versions) rows.push({ name, version, state: 'READY' });
        continue;
      }
      if (readyOnly) continue;
      const err = this.repository.errors.get(name);
      rows.push({ name, state: 'UNAVAILABLE', ...(err ? { reason: this.reasonOf(err) } : {}) });
    }
    return rows;
  }

  // `<file>:<line>:<col>: <detail>` with the file relative to the repository.
  private reasonOf(err: ConfigError): string {
    const file = relative(this.repository.dir, err.file);
    const at = err.line !== undefined ? `:${err.line}:${err.column}` : '';
    return `${file}${at}: ${err.detail}`;
  }
}
