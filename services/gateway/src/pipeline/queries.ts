import { MeshError } from '@ge-mesh/protocol';
import type { Authorizer, Principal } from '../auth.js';
import { modelConfigJson } from '../http/model-config-json.js';
import { modelMetadata } from '../http/model-metadata.js';
import type { ModelIndexEntry, ModelStates } from '../model-states.js';
import { canonicalVersion, checkVersionField, resolveModel, resolveNamedModel } from '../resolve-model.js';
import type { InferenceStats } from '../stats/inference-stats.js';

export interface QueryDeps {
  readonly states: ModelStates;
  readonly auth: Authorizer;
  readonly stats: InferenceStats;
  readonly isReady: () => boolean;
}

/** A model a query names, as the ingress got it (see InferCall.versionFrom). */
export interface ModelRef {
  readonly name: string;
  readonly version?: string;
  readonly versionFrom: 'path' | 'field';
}

/**
 * The non-inference questions every ingress answers the same way: health,
 * model metadata, readiness and config, statistics and the repository
 * index, each behind the same API key check and with Triton's errors.
 */
export class MeshQueries {
  constructor(private readonly deps: QueryDeps) {}

  /** The API key check alone (server metadata, and before reading a body). */
  authorize(authorization: string | undefined, model?: string): void {
    this.deps.auth.check(authorization, model);
  }

  /** Server readiness: the mesh can take requests and every model is ready. */
  serverReady(): boolean {
    return this.deps.isReady() && this.deps.states.allReady();
  }

  private resolve(ref: ModelRef) {
    return ref.versionFrom === 'path'
      ? resolveModel(this.deps.states, ref.name, ref.version)
      : resolveNamedModel(this.deps.states, ref.name, ref.version);
  }

  metadata(authorization: string | undefined, ref: ModelRef) {
    this.deps.auth.check(authorization, ref.name);
    const { model, version } = this.resolve(ref);
    const versions =
      ref.version === undefined || ref.version === ''
        ? [...this.deps.states.readyVersions(model.name)].sort((a, b) => Number(a) - Number(b))
        : [version];
    return modelMetadata(model, versions);
  }

  /** Throws unless the model (version) is ready to serve. */
  ready(authorization: string | undefined, ref: ModelRef): void {
    this.deps.auth.check(authorization, ref.name);
    this.resolve(ref);
    if (!this.deps.isReady()) throw new MeshError('MODEL_NOT_READY', 'Model version not ready');
  }

  /** The model's completed ModelConfig in protobuf JSON form (Triton's /config body). */
  config(authorization: string | undefined, ref: ModelRef): Record<string, unknown> {
    this.deps.auth.check(authorization, ref.name);
    return modelConfigJson(this.resolve(ref).model);
  }

  /**
   * Triton's statistics rows: every ready version of every model the caller
   * may see, or of one model; unknown or not-ready models are INVALID_ARGUMENT,
   * as in Triton.
   */
  statistics(
    authorization: string | undefined,
    name: string | undefined,
    version: string | undefined,
    versionFrom: 'path' | 'field',
  ) {
    const { states, auth } = this.deps;
    const principal: Principal | undefined = auth.check(authorization, name);
    const rows: Array<{ model: string; version: string }> = [];
    const ascending = (m: string) => [...states.readyVersions(m)].sort((a, b) => Number(a) - Number(b));
    if (name === undefined) {
      for (const m of states.names()) {
        if (!auth.canSee(principal, m)) continue;
        for (const v of ascending(m)) rows.push({ model: m, version: v });
      }
    } else {
      const ready = ascending(name);
      if (ready.length === 0) throw new MeshError('INVALID_ARGUMENT', `requested model '${name}' is not available`);
      if (version === undefined) {
        for (const v of ready) rows.push({ model: name, version: v });
      } else {
        // A path's non-integer version is an unknown route; a field's is refused as Triton reads it, or not available.
        if (versionFrom === 'field') checkVersionField(version);
        const v = versionFrom === 'path' || /^[0-9]+$/.test(version) ? canonicalVersion(version) : version;
        if (!ready.includes(v)) {
          throw new MeshError('INVALID_ARGUMENT', `requested model version is not available for model '${name}'`);
        }
        rows.push({ model: name, version: v });
      }
    }
    return { model_stats: rows.map((r) => this.deps.stats.json(r.model, r.version)) };
  }

  /** The repository index rows the caller may see. */
  index(authorization: string | undefined, readyOnly: boolean): ModelIndexEntry[] {
    const principal = this.deps.auth.check(authorization);
    return this.deps.states.index(readyOnly).filter((row) => this.deps.auth.canSee(principal, row.name));
  }
}
