import type { RepositoryModel } from '@ge-mesh/model-repository';
import { type InferResponseMessage, MeshError } from '@ge-mesh/protocol';
import type { FailureReason, InferenceMetrics } from '@ge-mesh/telemetry/metrics';
import type { ValidatedInfer } from './infer/index.js';
import type { InferService } from './infer-service.js';
import type { InferenceStats } from './stats/inference-stats.js';

/** Triton's failure reasons for the mesh's error codes. */
export function failureReason(err: unknown): FailureReason {
  const code = err instanceof MeshError ? err.code : 'INTERNAL';
  if (code === 'QUEUE_FULL' || code === 'TIMEOUT') return 'REJECTED';
  if (code === 'EXECUTION_FAILED') return 'BACKEND';
  return 'OTHER';
}

/**
 * Runs validated requests through the mesh, for REST and AMQP alike, and
 * keeps the books: statistics and metrics per request (end-to-end time here,
 * queue and compute times from the worker's reply), per execution from every
 * reply the gateway receives, and the pending gauge while a request is out.
 * Requests refused before this point (bad input, auth, limits) are not
 * inference requests for Triton's statistics and are not counted here.
 */
export class Inference {
  constructor(
    private readonly service: InferService,
    readonly stats: InferenceStats,
    private readonly metrics?: InferenceMetrics,
  ) {}

  /** Give to the reply router: sees every reply, late ones included, to count executions once. */
  readonly observeReply = (res: InferResponseMessage): void => {
    const t = res.timings;
    if (t && this.stats.executionReported(res.model, res.version, t)) {
      this.metrics?.executed(res.model, res.version, t.batchRows);
    }
  };

  async run(model: RepositoryModel, version: string, req: ValidatedInfer): Promise<InferResponseMessage> {
    const started = process.hrtime.bigint();
    this.metrics?.pending(model.name, version, 1);
    try {
      const res = await this.service.infer(model, version, req);
      const requestNs = Number(process.hrtime.bigint() - started);
      const t = res.timings;
      const d = {
        requestNs,
        queueNs: t?.queueNs ?? 0,
        computeInputNs: t?.computeInputNs ?? 0,
        computeInferNs: t?.computeInferNs ?? 0,
        computeOutputNs: t?.computeOutputNs ?? 0,
      };
      this.stats.requestSucceeded(model.name, version, req.batch, d);
      this.metrics?.requestSucceeded(model.name, version, Math.max(1, req.batch), d);
      return res;
    } catch (err) {
      this.stats.requestFailed(model.name, version, Number(process.hrtime.bigint() - started));
      this.metrics?.requestFailed(model.name, version, failureReason(err));
      throw err;
    } finally {
      this.metrics?.pending(model.name, version, -1);
    }
  }
}
