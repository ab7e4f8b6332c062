import type { Repository, RepositoryModel } from '@ge-mesh/model-repository';
import {
  configErrorReason,
  type ModelIndexEntry,
  type ModelReadyState,
  type ModelStates,
} from '../../services/gateway/src/model-states.js';

/**
 * Model states read off a repository alone, for tests of the gateway's routes
 * without workers: the models of the repository read at startup are READY
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
      rows.push({
        name,
        state: 'UNAVAILABLE',
        ...(err ? { reason: configErrorReason(this.repository.dir, err) } : {}),
      });
    }
    return rows;
  }
}
