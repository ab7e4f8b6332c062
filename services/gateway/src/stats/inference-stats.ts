import type { StageTimings } from '@ge-mesh/protocol';
import type { StageDurations } from '@ge-mesh/telemetry/metrics';

/** Triton's `{count, ns}` leaf. */
interface Duration {
  count: number;
  ns: number;
}

interface BatchStats {
  count: number;
  inputNs: number;
  inferNs: number;
  outputNs: number;
}

class VersionStats {
  lastInferenceMs = 0;
  inferenceCount = 0;
  executionCount = 0;
  readonly success: Duration = { count: 0, ns: 0 };
  readonly fail: Duration = { count: 0, ns: 0 };
  queueNs = 0;
  computeInputNs = 0;
  computeInferNs = 0;
  computeOutputNs = 0;
  readonly cacheHit: Duration = { count: 0, ns: 0 };
  readonly cacheMiss: Duration = { count: 0, ns: 0 };
  readonly batches = new Map<number, BatchStats>();
}

/** How many batch ids are remembered to drop a redelivered batch's second count. */
const SEEN_BATCHES = 8192;

/**
 * Triton's statistics extension, kept by the service that answers requests.
 * Per request (inference_stats): success and fail with their end-to-end time,
 * queue and compute times from the worker's reply timings, every request
 * charged its whole batch's compute time, as Triton does. Per execution
 * (execution_count, batch_stats): counted from the reply of the batch's member
 * 0, once per batch id, so a batch whose members come back as separate
 * replies (even to different gateways) is one execution, counted once across
 * the mesh. inference_count adds each successful request's rows.
 */
export class InferenceStats {
  private readonly versions = new Map<string, VersionStats>();
  private readonly seen = new Set<string>();
  private readonly seenOrder: string[] = [];

  private of(model: string, version: string): VersionStats {
    const key = `${model}\u0000${version}`;
    let s = this.versions.get(key);
    if (!s) {
      s = new VersionStats();
      this.versions.set(key, s);
    }
    return s;
  }

  requestSucceeded(model: string, version: string, rows: number, d: StageDurations): void {
    const s = this.of(model, version);
    s.inferenceCount += Math.max(1, rows);
    s.success.count++;
    s.success.ns += d.requestNs;
    s.queueNs += d.queueNs;
    s.computeInputNs += d.computeInputNs;
    s.computeInferNs += d.computeInferNs;
    s.computeOutputNs += d.computeOutputNs;
  }

  /**
   * A request answered from the response cache: a success (its end-to-end
   * time included) and a cache hit (the lookup's time); as in Triton it adds
   * no inference, execution, queue or compute time.
   */
  requestCached(model: string, version: string, requestNs: number, lookupNs: number): void {
    const s = this.of(model, version);
    s.success.count++;
    s.success.ns += requestNs;
    s.cacheHit.count++;
    s.cacheHit.ns += lookupNs;
  }

  /** A cache miss: the lookup's and the insertion's time (the request itself counts as any other). */
  cacheMissed(model: string, version: string, ns: number): void {
    const s = this.of(model, version);
    s.cacheMiss.count++;
    s.cacheMiss.ns += ns;
  }

  requestFailed(model: string, version: string, requestNs: number): void {
    const s = this.of(model, version);
    s.fail.count++;
    s.fail.ns += requestNs;
  }

  /**
   * Records the execution a reply came from, if this reply is the one that
   * counts it (member 0, batch id not seen). Returns whether it counted.
   */
  executionReported(model: string, version: string, t: StageTimings, nowMs = Date.now()): boolean {
    if ((t.member ?? 0) !== 0) return false;
    if (t.batchId !== undefined) {
      if (this.seen.has(t.batchId)) return false;
      this.seen.add(t.batchId);
      this.seenOrder.push(t.batchId);
      if (this.seenOrder.length > SEEN_BATCHES) this.seen.delete(this.seenOrder.shift() as string);
    }
    const s = this.of(model, version);
    s.executionCount++;
    if (nowMs > s.lastInferenceMs) s.lastInferenceMs = nowMs;
    let b = s.batches.get(t.batchRows);
    if (!b) {
      b = { count: 0, inputNs: 0, inferNs: 0, outputNs: 0 };
      s.batches.set(t.batchRows, b);
    }
    b.count++;
    b.inputNs += t.computeInputNs;
    b.inferNs += t.computeInferNs;
    b.outputNs += t.computeOutputNs;
    return true;
  }

  /** One entry of `model_stats`, in Triton's field order. */
  json(model: string, version: string) {
    const s = this.versions.get(`${model}\u0000${version}`) ?? new VersionStats();
    const leaf = (count: number, ns: number) => ({ count, ns });
    const n = s.success.count;
    return {
      name: model,
      version,
      last_inference: s.lastInferenceMs,
      inference_count: s.inferenceCount,
      execution_count: s.executionCount,
      inference_stats: {
        success: leaf(n, s.success.ns),
        fail: leaf(s.fail.count, s.fail.ns),
        queue: leaf(n, s.queueNs),
        compute_input: leaf(n, s.computeInputNs),
        compute_infer: leaf(n, s.computeInferNs),
        compute_output: leaf(n, s.computeOutputNs),
        cache_hit: leaf(s.cacheHit.count, s.cacheHit.ns),
        cache_miss: leaf(s.cacheMiss.count, s.cacheMiss.ns),
      },
      // Filled only by backends that report per-response statistics (decoupled models); none here.
      response_stats: {},
      batch_stats: [...s.batches.entries()]
        .sort(([a], [b]) => a - b)
        .map(([size, b]) => ({
          batch_size: size,
          compute_input: leaf(b.count, b.inputNs),
          compute_infer: leaf(b.count, b.inferNs),
          compute_output: leaf(b.count, b.outputNs),
        })),
      memory_usage: [],
    };
  }
}
