import { relative } from 'node:path';
import type { ConfigError, RepositoryModel } from '@ge-mesh/model-repository';

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

/** Why a model's config did not load, as `<file>:<line>:<col>: <detail>` with the file relative to the repository (no server path leaks out). */
export function configErrorReason(repositoryDir: string, err: ConfigError): string {
  const file = relative(repositoryDir, err.file);
  const at = err.line !== undefined ? `:${err.line}:${err.column}` : '';
  return `${file}${at}: ${err.detail}`;
}
