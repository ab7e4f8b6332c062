import { randomUUID } from 'node:crypto';
import type { RepositoryModel } from '@ge-mesh/model-repository';
import { type InferResponseMessage, MeshError, PROTOCOL_VERSION } from '@ge-mesh/protocol';
import type { FailureReason, InferenceMetrics } from '@ge-mesh/telemetry/metrics';
import type { Authorizer } from '../auth.js';
import type { InferResult, ParsedInfer, ValidatedInfer } from '../infer/index.js';
import { validateInfer } from '../infer/index.js';
import type { ModelStates } from '../model-states.js';
import { resolveModel, resolveNamedModel } from '../resolve-model.js';
import type { InferenceStats } from '../stats/inference-stats.js';
import type { CachedResponses } from './cached-responses.js';
import type { Dispatch } from './dispatch.js';
import { runEnsemble } from './ensemble.js';
import { type InferTrace, traceInfer } from './infer-tracing.js';

/** Triton's failure reasons for the mesh's error codes. */
export function failureReason(err: unknown): FailureReason {
  const code = err instanceof MeshError ? err.code : 'INTERNAL';
  if (code === 'QUEUE_FULL' || code === 'TIMEOUT') return 'REJECTED';
  if (code === 'EXECUTION_FAILED') return 'BACKEND';
  return 'OTHER';
}

/** One inference request as an ingress decoded it, before anything was checked. */
export interface InferCall {
  readonly model: string;
  /** The version the client named; undefined = the highest ready one. */
  readonly version?: string;
  /**
   * Where the version came from: a REST path segment (a non-integer is an
   * unknown route there, 404 "Not Found") or a message field (an unknown version).
   */
  readonly versionFrom: 'path' | 'field';
  /** The `Authorization` value the client sent (header, AMQP header or gRPC metadata). */
  readonly authorization?: string;
  /**
   * Reads the request's tensors and parameters. Called once the model is
   * known (its name goes into some messages), so a request for an unknown
   * model or one sent without a valid key is never decoded.
   */
  readonly decode: (model: RepositoryModel) => ParsedInfer | Promise<ParsedInfer>;
  /** Absolute deadline (ms since the epoch) the client asked for; the gateway's timeout caps it. */
  readonly deadlineMs?: number;
  /** Aborted when the client went away. */
  readonly signal?: AbortSignal;
  /** Where the request came in (span attribute). */
  readonly ingress?: 'http' | 'amqp' | 'grpc';
  /** Headers that may carry the caller's trace context (traceparent, tracestate). */
  readonly traceHeaders?: Readonly<Record<string, unknown>>;
  /** Told the request's traceparent once its span started (tracing on): the ingress returns it. */
  readonly onTraced?: (traceparent: string) => void;
}

/** What a successful call returns: enough for any ingress to encode its answer. */
export interface InferOutcome {
  readonly model: RepositoryModel;
  readonly version: string;
  readonly request: ValidatedInfer;
  /** The worker's outputs, with the ids ingresses echo. */
  readonly result: InferResult;
}

export interface PipelineDeps {
  readonly states: ModelStates;
  readonly auth: Authorizer;
  readonly dispatch: Dispatch;
  readonly stats: InferenceStats;
  /** Whether the mesh can take requests now (broker connected, Redis up, not stopping). */
  readonly isReady: () => boolean;
  readonly metrics?: InferenceMetrics;
  /** The response cache, for models with `response_cache { enable: true }`; absent = none. */
  readonly cache?: CachedResponses;
}

/**
 * The one inference path of the gateway, shared by REST, AMQP and gRPC:
 * auth, readiness, model and version, decoding, validation against the model
 * config, admission, publish, the reply wait, statistics and metrics. Every
 * failure is a MeshError with a stable code; each ingress only decodes its
 * request into an InferCall and encodes the outcome or the error.
 *
 * Statistics and metrics count requests from the point they are dispatched:
 * requests refused before (bad input, auth, limits) are not inference
 * requests for Triton's statistics.
 */
export class InferPipeline {
  constructor(private readonly deps: PipelineDeps) {}

  get stats(): InferenceStats {
    return this.deps.stats;
  }

  /** Give to the reply router: sees every reply, late ones included, to count executions once. */
  readonly observeReply = (res: InferResponseMessage): void => {
    const t = res.timings;
    if (t && this.deps.stats.executionReported(res.model, res.version, t)) {
      this.deps.metrics?.executed(res.model, res.version, t.batchRows);
    }
  };

  async infer(call: InferCall): Promise<InferOutcome> {
    const traced = traceInfer(call.model, call.ingress ?? 'unknown', call.traceHeaders);
    if (!traced) return this.inferTraced(call, undefined);
    call.onTraced?.(traced.traceparent);
    try {
      const outcome = await this.inferTraced(call, traced);
      traced.end({ 'gemesh.version': outcome.version, 'gemesh.request.rows': outcome.request.batch });
      return outcome;
    } catch (err) {
      traced.fail(err);
      throw err;
    }
  }

  private async inferTraced(call: InferCall, traced: InferTrace | undefined): Promise<InferOutcome> {
    const { states, auth } = this.deps;
    auth.check(call.authorization, call.model);
    if (!this.deps.isReady()) throw new MeshError('UNAVAILABLE', 'Server is not ready');
    const { model, version } =
      call.versionFrom === 'path'
        ? resolveModel(states, call.model, call.version)
        : resolveNamedModel(states, call.model, call.version);
    const validating = traced?.step('gateway validate');
    let request: ValidatedInfer;
    let priority: number;
    try {
      const parsed = await call.decode(model);
      request = validateInfer(parsed, model.config);
      priority = parsed.priority;
    } catch (err) {
      validating?.fail(err);
      throw err;
    }
    validating?.end();
    const res = await this.run(model, version, request, priority, call, traced);
    return {
      model,
      version,
      request,
      result: {
        model: model.name,
        version,
        ...(request.clientId !== undefined ? { id: request.clientId } : {}),
        outputs: res.outputs ?? [],
        ...(model.labels ? { labels: model.labels } : {}),
      },
    };
  }

  private async run(
    model: RepositoryModel,
    version: string,
    req: ValidatedInfer,
    /** The priority the client sent (an ensemble's steps map it to their models' levels). */
    priority: number,
    call: InferCall,
    traced: InferTrace | undefined,
  ): Promise<InferResponseMessage> {
    const { stats, metrics } = this.deps;
    const started = process.hrtime.bigint();
    const cache = model.config.responseCache ? this.deps.cache : undefined;
    const key = cache?.key(model.name, version, req);
    let missNs = 0; // the lookup's time, on a miss
    if (cache && key) {
      const outputs = await cache.get(key);
      const lookupNs = Number(process.hrtime.bigint() - started);
      if (outputs) {
        stats.requestCached(model.name, version, lookupNs, lookupNs);
        metrics?.requestCached(model.name, version, lookupNs, lookupNs);
        return { v: PROTOCOL_VERSION, id: key, correlationId: key, model: model.name, version, outputs };
      }
      missNs = lookupNs;
    }
    metrics?.pending(model.name, version, 1);
    try {
      const res = model.config.ensemble
        ? await this.runEnsemble(model, version, req, priority, call, traced)
        : await this.deps.dispatch.send(model, version, req, {
            ...(call.deadlineMs !== undefined ? { deadlineMs: call.deadlineMs } : {}),
            ...(call.signal !== undefined ? { signal: call.signal } : {}),
            ...(traced ? { trace: traced } : {}),
          });
      if (cache && key) {
        // Stored after the answer, not before it (the same connection sends it ahead of any later
        // lookup); Triton charges a miss the lookup and the insertion. Errors are never stored.
        const inserting = process.hrtime.bigint();
        const lookupNs = missNs;
        void cache.put(key, res.outputs ?? []).then(() => {
          const ns = lookupNs + Number(process.hrtime.bigint() - inserting);
          stats.cacheMissed(model.name, version, ns);
          metrics?.cacheMissed(model.name, version, ns);
        });
      }
      const requestNs = Number(process.hrtime.bigint() - started);
      const t = res.timings;
      const d = {
        requestNs,
        queueNs: t?.queueNs ?? 0,
        computeInputNs: t?.computeInputNs ?? 0,
        computeInferNs: t?.computeInferNs ?? 0,
        computeOutputNs: t?.computeOutputNs ?? 0,
      };
      stats.requestSucceeded(model.name, version, req.batch, d);
      metrics?.requestSucceeded(model.name, version, Math.max(1, req.batch), d);
      return res;
    } catch (err) {
      if (cache && key) {
        stats.cacheMissed(model.name, version, missNs);
        metrics?.cacheMissed(model.name, version, missNs);
      }
      stats.requestFailed(model.name, version, Number(process.hrtime.bigint() - started));
      metrics?.requestFailed(model.name, version, failureReason(err));
      throw err;
    } finally {
      metrics?.pending(model.name, version, -1);
    }
  }

  /**
   * An ensemble request: its steps run here, each as a request of its model
   * through run() (so each is batched, counted and cached as its model's
   * own); the answer carries the outputs asked for and the steps' summed times.
   */
  private async runEnsemble(
    model: RepositoryModel,
    version: string,
    req: ValidatedInfer,
    priority: number,
    call: InferCall,
    traced: InferTrace | undefined,
  ): Promise<InferResponseMessage> {
    const r = await runEnsemble(model, req, priority, this.deps.states, (m, v, stepReq) =>
      this.run(m, v, stepReq, priority, call, traced),
    );
    const wanted = new Set(req.outputs.map((o) => o.name));
    const id = randomUUID();
    return {
      v: PROTOCOL_VERSION,
      id,
      correlationId: id,
      model: model.name,
      version,
      outputs: req.allOutputs ? r.outputs : r.outputs.filter((t) => wanted.has(t.name)),
      timings: r.timings,
    };
  }
}
