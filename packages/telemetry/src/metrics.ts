import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { collectProcessMetrics } from './process-metrics.js';

/** Why a request failed, as Triton labels `nv_inference_request_failure`. */
export type FailureReason = 'REJECTED' | 'CANCELED' | 'BACKEND' | 'OTHER';
export const FAILURE_REASONS: readonly FailureReason[] = ['REJECTED', 'CANCELED', 'BACKEND', 'OTHER'];

/** The time one successful request spent in each stage, in ns (Triton's statistics). */
export interface StageDurations {
  /** Accepted → answered. */
  readonly requestNs: number;
  /** Accepted → its batch started computing. */
  readonly queueNs: number;
  /** The whole batch's compute time: each request is charged all of it, as Triton does. */
  readonly computeInputNs: number;
  readonly computeInferNs: number;
  readonly computeOutputNs: number;
}

/** Where a request came in. */
export type Ingress = 'http' | 'amqp' | 'grpc';

const LATENCY_BUCKETS_S = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const BATCH_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256];

// Triton's counters add whole microseconds per request (ns / 1000, truncated).
const us = (ns: number) => Math.floor(ns / 1000);

/**
 * Triton's per-model inference metrics (`nv_inference_*`, labels `model` and
 * `version`; failures add `reason`), plus latency and batch-size histograms,
 * which Triton lacks: unlike its summaries they aggregate across replicas.
 *
 * Counters move when a request completes; only the pending gauge is live.
 * The durations cover the whole mesh (queue = gateway → batcher → broker →
 * worker; compute = the worker's run) because they are read from the timings
 * each worker reply carries: the service that answers a request is the one
 * place that counts it.
 */
export class InferenceMetrics {
  readonly registry: Registry;
  private readonly success: Counter<'model' | 'version'>;
  private readonly failure: Counter<'model' | 'version' | 'reason'>;
  private readonly inferences: Counter<'model' | 'version'>;
  private readonly executions: Counter<'model' | 'version'>;
  private readonly pendingGauge: Gauge<'model' | 'version'>;
  private readonly requestUs: Counter<'model' | 'version'>;
  private readonly queueUs: Counter<'model' | 'version'>;
  private readonly computeInputUs: Counter<'model' | 'version'>;
  private readonly computeInferUs: Counter<'model' | 'version'>;
  private readonly computeOutputUs: Counter<'model' | 'version'>;
  private readonly requestSeconds: Histogram<'model' | 'version'>;
  private readonly queueSeconds: Histogram<'model' | 'version'>;
  private readonly computeSeconds: Histogram<'model' | 'version'>;
  private readonly batchSize: Histogram<'model' | 'version'>;
  private readonly errors: Counter<'code' | 'ingress'>;
  private readonly cacheHits: Counter<'model' | 'version'>;
  private readonly cacheMisses: Counter<'model' | 'version'>;
  private readonly cacheHitUs: Counter<'model' | 'version'>;
  private readonly cacheMissUs: Counter<'model' | 'version'>;

  constructor(options: { registry?: Registry; processMetricsPrefix?: string } = {}) {
    this.registry = options.registry ?? new Registry();
    const registers = [this.registry];
    const perModel = ['model', 'version'] as const;
    const counter = (name: string, help: string) => new Counter({ name, help, labelNames: perModel, registers });
    const histogram = (name: string, help: string, buckets: number[]) =>
      new Histogram({ name, help, labelNames: perModel, buckets, registers });

    this.success = counter('nv_inference_request_success', 'Successful inference requests, all batch sizes.');
    this.failure = new Counter({
      name: 'nv_inference_request_failure',
      help: 'Failed inference requests, all batch sizes, by reason (REJECTED, CANCELED, BACKEND, OTHER).',
      labelNames: [...perModel, 'reason'],
      registers,
    });
    this.inferences = counter('nv_inference_count', 'Inferences performed: the batch rows of successful requests.');
    this.executions = counter('nv_inference_exec_count', 'Model executions (batches) performed.');
    this.pendingGauge = new Gauge({
      name: 'nv_inference_pending_request_count',
      help: 'Requests accepted and not yet answered (queue depth, including the batch in flight).',
      labelNames: perModel,
      registers,
    });
    this.requestUs = counter('nv_inference_request_duration_us', 'Cumulative end-to-end request time, microseconds.');
    this.queueUs = counter('nv_inference_queue_duration_us', 'Cumulative time requests waited before compute, µs.');
    this.computeInputUs = counter(
      'nv_inference_compute_input_duration_us',
      'Cumulative input assembly time, µs; each request is charged its whole batch.',
    );
    this.computeInferUs = counter(
      'nv_inference_compute_infer_duration_us',
      'Cumulative model execution time, µs; each request is charged its whole batch.',
    );
    this.computeOutputUs = counter(
      'nv_inference_compute_output_duration_us',
      'Cumulative output slicing time, µs; each request is charged its whole batch.',
    );
    this.cacheHits = counter('nv_cache_num_hits_per_model', 'Requests answered from the response cache.');
    this.cacheMisses = counter('nv_cache_num_misses_per_model', 'Response cache lookups that found nothing.');
    this.cacheHitUs = counter('nv_cache_hit_duration_per_model', 'Cumulative lookup time of cache hits, µs.');
    this.cacheMissUs = counter(
      'nv_cache_miss_duration_per_model',
      'Cumulative lookup and insertion time of cache misses, µs.',
    );
    this.requestSeconds = histogram(
      'gemesh_inference_request_duration_seconds',
      'End-to-end time of successful requests, seconds.',
      LATENCY_BUCKETS_S,
    );
    this.queueSeconds = histogram(
      'gemesh_inference_queue_duration_seconds',
      'Time successful requests waited before compute (gateway, batcher, broker), seconds.',
      LATENCY_BUCKETS_S,
    );
    this.computeSeconds = histogram(
      'gemesh_inference_compute_duration_seconds',
      'Compute time (input + infer + output) of the batch each successful request ran in, seconds.',
      LATENCY_BUCKETS_S,
    );
    this.batchSize = histogram(
      'gemesh_inference_batch_size',
      'Rows per model execution (padding excluded).',
      BATCH_BUCKETS,
    );
    this.errors = new Counter({
      name: 'gemesh_request_errors_total',
      help: 'Error answers by stable error code and ingress, including requests refused before they reached a model.',
      labelNames: ['code', 'ingress'],
      registers,
    });
    if (options.processMetricsPrefix !== undefined) {
      collectProcessMetrics(this.registry, options.processMetricsPrefix);
    }
  }

  /** Creates every series of a model version at zero, as Triton does when a model loads. */
  addModel(model: string, version: string): void {
    const l = { model, version };
    for (const c of [
      this.success,
      this.inferences,
      this.executions,
      this.requestUs,
      this.queueUs,
      this.computeInputUs,
      this.computeInferUs,
      this.computeOutputUs,
    ]) {
      c.inc(l, 0);
    }
    for (const reason of FAILURE_REASONS) this.failure.inc({ ...l, reason }, 0);
    this.pendingGauge.set(l, 0);
  }

  requestSucceeded(model: string, version: string, batch: number, d: StageDurations): void {
    const l = { model, version };
    this.success.inc(l);
    this.inferences.inc(l, batch);
    this.requestUs.inc(l, us(d.requestNs));
    this.queueUs.inc(l, us(d.queueNs));
    this.computeInputUs.inc(l, us(d.computeInputNs));
    this.computeInferUs.inc(l, us(d.computeInferNs));
    this.computeOutputUs.inc(l, us(d.computeOutputNs));
    this.requestSeconds.observe(l, d.requestNs / 1e9);
    this.queueSeconds.observe(l, d.queueNs / 1e9);
    this.computeSeconds.observe(l, (d.computeInputNs + d.computeInferNs + d.computeOutputNs) / 1e9);
  }

  /** A request answered from the response cache (a success, as in Triton, with no inference or compute). */
  requestCached(model: string, version: string, requestNs: number, lookupNs: number): void {
    const l = { model, version };
    this.success.inc(l);
    this.requestUs.inc(l, us(requestNs));
    this.requestSeconds.observe(l, requestNs / 1e9);
    this.cacheHits.inc(l);
    this.cacheHitUs.inc(l, us(lookupNs));
  }

  cacheMissed(model: string, version: string, ns: number): void {
    const l = { model, version };
    this.cacheMisses.inc(l);
    this.cacheMissUs.inc(l, us(ns));
  }

  requestFailed(model: string, version: string, reason: FailureReason): void {
    this.failure.inc({ model, version, reason });
  }

  /** One model execution of `rows` real rows; call once per batch. */
  executed(model: string, version: string, rows: number): void {
    const l = { model, version };
    this.executions.inc(l);
    this.batchSize.observe(l, rows);
  }

  pending(model: string, version: string, delta: 1 | -1): void {
    this.pendingGauge.inc({ model, version }, delta);
  }

  errorAnswered(code: string, ingress: Ingress): void {
    this.errors.inc({ code, ingress });
  }
}

export * from './batcher-metrics.js';
export * from './connection-metrics.js';
export * from './metrics-server.js';
export * from './worker-metrics.js';
