import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MeshError, type StageTimings } from '@ge-mesh/protocol';
import { InferenceMetrics } from '@ge-mesh/telemetry/metrics';
import { failureReason } from '../../services/gateway/src/pipeline/infer-pipeline.js';
import { InferenceStats } from '../../services/gateway/src/stats/inference-stats.js';

/**
 * Triton's statistics and metrics from reply timings: per request, per
 * execution (counted once, from member 0, whatever the number of replies),
 * and the metric families with Triton's names and labels.
 */
const timings = (t: Partial<StageTimings> & Pick<StageTimings, 'batchRows'>): StageTimings => ({
  queueNs: 0,
  computeInputNs: 0,
  computeInferNs: 0,
  computeOutputNs: 0,
  tier: t.batchRows,
  ...t,
});

/** The series of one metric family as `labels → value`, from the Prometheus text. */
function series(text: string, name: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+)(\{[^}]*\})? (\S+)$/.exec(line);
    if (m && m[1] === name) out.set(m[2] ?? '', Number(m[3]));
  }
  return out;
}

describe('gateway statistics', () => {
  it('counts 6 requests in 2 executions (sizes 1 and 5) as Triton does', () => {
    const s = new InferenceStats();
    // Execution A: one request of 1 row. Execution B: requests of 2 and 3 rows, answered separately.
    const a = timings({
      batchRows: 1,
      batchId: 'A',
      member: 0,
      members: 1,
      computeInputNs: 10,
      computeInferNs: 100,
      computeOutputNs: 1,
    });
    const b0 = timings({
      batchRows: 5,
      batchId: 'B',
      member: 0,
      members: 2,
      computeInputNs: 20,
      computeInferNs: 300,
      computeOutputNs: 2,
    });
    const b1 = { ...b0, member: 1 };
    assert.equal(s.executionReported('m', '1', a, 1000), true);
    assert.equal(s.executionReported('m', '1', b1, 2000), false);
    assert.equal(s.executionReported('m', '1', b0, 3000), true);
    // A redelivered batch answers member 0 again: still one execution.
    assert.equal(s.executionReported('m', '1', b0, 4000), false);
    const charge = (t: StageTimings, requestNs: number, queueNs: number) => ({
      requestNs,
      queueNs,
      computeInputNs: t.computeInputNs,
      computeInferNs: t.computeInferNs,
      computeOutputNs: t.computeOutputNs,
    });
    s.requestSucceeded('m', '1', 1, charge(a, 1_000, 400));
    s.requestSucceeded('m', '1', 2, charge(b0, 2_000, 500));
    s.requestSucceeded('m', '1', 3, charge(b1, 3_000, 600));
    s.requestFailed('m', '1', 777);

    const expected = {
      name: 'm',
      version: '1',
      last_inference: 3000,
      inference_count: 6,
      execution_count: 2,
      inference_stats: {
        success: { count: 3, ns: 6_000 },
        fail: { count: 1, ns: 777 },
        queue: { count: 3, ns: 1_500 },
        compute_input: { count: 3, ns: 10 + 20 + 20 },
        compute_infer: { count: 3, ns: 100 + 300 + 300 },
        compute_output: { count: 3, ns: 1 + 2 + 2 },
        cache_hit: { count: 0, ns: 0 },
        cache_miss: { count: 0, ns: 0 },
      },
      response_stats: {},
      batch_stats: [
        {
          batch_size: 1,
          compute_input: { count: 1, ns: 10 },
          compute_infer: { count: 1, ns: 100 },
          compute_output: { count: 1, ns: 1 },
        },
        {
          batch_size: 5,
          compute_input: { count: 1, ns: 20 },
          compute_infer: { count: 1, ns: 300 },
          compute_output: { count: 1, ns: 2 },
        },
      ],
      memory_usage: [],
    };
    assert.equal(JSON.stringify(s.json('m', '1')), JSON.stringify(expected));
  });

  it('reports zeros for a version that has seen nothing, and counts replies without a batch id each', () => {
    const s = new InferenceStats();
    assert.equal(s.json('x', '2').execution_count, 0);
    assert.deepEqual(s.json('x', '2').inference_stats.success, { count: 0, ns: 0 });
    s.executionReported('x', '2', timings({ batchRows: 2 }));
    s.executionReported('x', '2', timings({ batchRows: 2 }));
    assert.equal(s.json('x', '2').execution_count, 2);
    assert.deepEqual(
      s.json('x', '2').batch_stats.map((b) => [b.batch_size, b.compute_infer.count]),
      [[2, 2]],
    );
  });

  it('maps error codes to Triton failure reasons', () => {
    assert.equal(failureReason(new MeshError('QUEUE_FULL', 'x')), 'REJECTED');
    assert.equal(failureReason(new MeshError('TIMEOUT', 'x')), 'REJECTED');
    assert.equal(failureReason(new MeshError('EXECUTION_FAILED', 'x')), 'BACKEND');
    assert.equal(failureReason(new MeshError('UNAVAILABLE', 'x')), 'OTHER');
    assert.equal(failureReason(new Error('x')), 'OTHER');
  });
});

describe('gateway metrics', () => {
  it("exposes Triton's families with model/version labels, whole-µs counters and histograms", async () => {
    const m = new InferenceMetrics();
    m.addModel('tiny', '1');
    let text = await m.registry.metrics();
    for (const name of [
      'nv_inference_request_success',
      'nv_inference_count',
      'nv_inference_exec_count',
      'nv_inference_request_duration_us',
      'nv_inference_queue_duration_us',
      'nv_inference_compute_input_duration_us',
      'nv_inference_compute_infer_duration_us',
      'nv_inference_compute_output_duration_us',
      'nv_inference_pending_request_count',
    ]) {
      assert.deepEqual([...series(text, name)], [['{model="tiny",version="1"}', 0]], name);
    }
    assert.deepEqual(
      [...series(text, 'nv_inference_request_failure').keys()],
      ['REJECTED', 'CANCELED', 'BACKEND', 'OTHER'].map((r) => `{model="tiny",version="1",reason="${r}"}`),
    );

    const d = { requestNs: 2_999, queueNs: 1_001, computeInputNs: 999, computeInferNs: 5_000, computeOutputNs: 1_500 };
    m.requestSucceeded('tiny', '1', 3, d);
    m.requestSucceeded('tiny', '1', 1, d);
    m.requestFailed('tiny', '1', 'REJECTED');
    m.executed('tiny', '1', 4);
    m.pending('tiny', '1', 1);
    m.pending('tiny', '1', 1);
    m.pending('tiny', '1', -1);
    m.errorAnswered('BAD_JSON', 'http');
    text = await m.registry.metrics();
    const v = (name: string, labels = '{model="tiny",version="1"}') => series(text, name).get(labels);
    assert.equal(v('nv_inference_request_success'), 2);
    assert.equal(v('nv_inference_count'), 4);
    assert.equal(v('nv_inference_exec_count'), 1);
    // Triton adds ns / 1000, truncated, per request.
    assert.equal(v('nv_inference_request_duration_us'), 4);
    assert.equal(v('nv_inference_queue_duration_us'), 2);
    assert.equal(v('nv_inference_compute_input_duration_us'), 0);
    assert.equal(v('nv_inference_compute_infer_duration_us'), 10);
    assert.equal(v('nv_inference_compute_output_duration_us'), 2);
    assert.equal(v('nv_inference_pending_request_count'), 1);
    assert.equal(v('nv_inference_request_failure', '{model="tiny",version="1",reason="REJECTED"}'), 1);
    assert.equal(v('gemesh_inference_request_duration_seconds_count'), 2);
    assert.equal(v('gemesh_inference_request_duration_seconds_bucket', '{le="0.0005",model="tiny",version="1"}'), 2);
    assert.equal(v('gemesh_inference_batch_size_bucket', '{le="2",model="tiny",version="1"}'), 0);
    assert.equal(v('gemesh_inference_batch_size_bucket', '{le="4",model="tiny",version="1"}'), 1);
    assert.equal(v('gemesh_request_errors_total', '{code="BAD_JSON",ingress="http"}'), 1);
  });
});
