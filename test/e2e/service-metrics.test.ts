import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { demoModel, sampleInputs } from '@ge-mesh/demo-models';
import { ROOT, tryItLines } from '@ge-mesh/launcher';
import { skipNative } from '../native/support.js';
import { tinyVariants } from '../support/batcher-fixtures.js';
import { startTestMesh, type TestMesh } from '../support/mesh-harness.js';
import {
  familyNames,
  metricNamesInQuery,
  parsePrometheusText,
  type Sample,
  sampleValue,
} from '../support/prometheus-text.js';
import { jsonInferBody } from '../support/reference.js';

/**
 * Every service's Prometheus endpoint against a known workload: ten requests
 * of 3 rows, one after another, to a model with tiers [4, 8] are ten batches
 * at tier 4 with one padding row each. The ports are ephemeral (the harness
 * sets GEMESH_METRICS_PORT=0); each service logs its port in its ready line.
 */
const MODEL = 't48';
const REQUESTS = 10;
const ROWS = 3;

describe('metrics from every service', { timeout: 180_000 }, () => {
  let mesh: TestMesh;
  let repo: Awaited<ReturnType<typeof tinyVariants>>;
  const port: Record<string, number> = {};

  before(async () => {
    repo = await tinyVariants({ [MODEL]: 'max_batch_size: 8\ndynamic_batching { preferred_batch_size: [ 4, 8 ] }' });
    mesh = await startTestMesh({ modelRepository: repo.dir, models: [MODEL] });
    for (const [svc, msg] of [
      ['gateway', 'gateway ready'],
      ['batcher', 'batcher ready'],
      ['worker-0', 'worker ready'],
    ] as const) {
      const ready = mesh.lines.find((l) => l.startsWith(`[${svc}]`) && l.includes(`"msg":"${msg}"`)) ?? '';
      port[svc] = Number(/"metricsPort":(\d+)/.exec(ready)?.[1]);
      assert.ok(port[svc] > 0, `${svc} logs its metrics port: ${ready}`);
    }
  });
  after(async () => {
    await mesh?.teardown();
    await repo?.remove();
  });

  const scrape = async (svc: string): Promise<string> => (await fetch(`http://127.0.0.1:${port[svc]}/metrics`)).text();

  /** Scrapes until `check` holds (counters move after the answer: acks and finish come later). */
  async function eventually(svc: string, check: (s: Sample[]) => boolean): Promise<Sample[]> {
    const until = Date.now() + 10_000;
    for (;;) {
      const samples = parsePrometheusText(await scrape(svc));
      if (check(samples) || Date.now() > until) return samples;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  it('ten requests of 3 rows on tiers [4, 8]: ten batches at tier 4, ten padded rows, ten executions', async () => {
    const before = parsePrometheusText(await scrape('batcher'));
    assert.equal(sampleValue(before, 'gemesh_batcher_batches_total', { model: MODEL, tier: '8' }), 0, 'tiers at zero');
    for (let i = 0; i < REQUESTS; i++) {
      const res = await fetch(`${mesh.url}/v2/models/${MODEL}/infer`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: jsonInferBody(sampleInputs(demoModel('tiny'), ROWS, i + 1)),
      });
      assert.equal(res.status, 200, await res.text());
    }
    const tier4 = { model: MODEL, tier: '4' };
    const b = await eventually('batcher', (s) => sampleValue(s, 'gemesh_batcher_batches_total', tier4) === REQUESTS);
    assert.equal(sampleValue(b, 'gemesh_batcher_batches_total', tier4), REQUESTS);
    assert.equal(sampleValue(b, 'gemesh_batcher_batch_rows_total', tier4), REQUESTS * ROWS);
    assert.equal(sampleValue(b, 'gemesh_batcher_padded_rows_total', tier4), REQUESTS * (4 - ROWS));
    // The tiny model's input x is 16 floats a row.
    assert.equal(sampleValue(b, 'gemesh_batcher_batch_elements_total', tier4), REQUESTS * ROWS * 16);
    assert.equal(sampleValue(b, 'gemesh_batcher_padded_elements_total', tier4), REQUESTS * (4 - ROWS) * 16);
    assert.equal(sampleValue(b, 'gemesh_batcher_batches_total', { model: MODEL, tier: '8' }), 0);
    assert.equal(sampleValue(b, 'gemesh_batcher_pending_requests', { model: MODEL }), 0);
    assert.equal(sampleValue(b, 'gemesh_batcher_oldest_pending_age_seconds', { model: MODEL }), 0);

    const w = await eventually(
      'worker-0',
      (s) => sampleValue(s, 'gemesh_worker_executions_total', { model: MODEL, tier: '4' }) === REQUESTS,
    );
    assert.equal(sampleValue(w, 'gemesh_worker_executions_total', { model: MODEL, device: '0', tier: '4' }), REQUESTS);
    assert.equal(sampleValue(w, 'gemesh_worker_executions_total', { model: MODEL, tier: '8' }), undefined);
    assert.equal(sampleValue(w, 'gemesh_worker_lanes', { model: MODEL, device: '0' }), 1);
    const busy = sampleValue(w, 'gemesh_worker_lane_busy_seconds_total', { model: MODEL, device: '0' }) ?? 0;
    assert.ok(busy > 0 && busy < 10, `lane busy ${busy} s`);
    assert.equal(sampleValue(w, 'gemesh_dead_letters_total', { kind: 'batch', reason: 'rejected' }), 0);

    const g = await eventually(
      'gateway',
      (s) => sampleValue(s, 'nv_inference_exec_count', { model: MODEL }) === REQUESTS,
    );
    assert.equal(sampleValue(g, 'nv_inference_request_success', { model: MODEL }), REQUESTS);
    assert.equal(sampleValue(g, 'nv_inference_count', { model: MODEL }), REQUESTS * ROWS);
    assert.equal(sampleValue(g, 'nv_inference_exec_count', { model: MODEL }), REQUESTS);
  });

  it('every service reports its broker and Redis connections', async () => {
    for (const svc of ['gateway', 'batcher', 'worker-0']) {
      const s = parsePrometheusText(await scrape(svc));
      for (const dependency of ['broker', 'redis']) {
        assert.equal(sampleValue(s, 'gemesh_dependency_connected', { dependency }), 1, `${svc} ${dependency}`);
        assert.equal(sampleValue(s, 'gemesh_dependency_reconnects_total', { dependency }), 0, `${svc} ${dependency}`);
      }
    }
  });

  it("the start banner's example uses a model the mesh serves, and its request works", async () => {
    const lines = await tryItLines(mesh.url);
    assert.match(lines[0] ?? '', new RegExp(`/v2/models/${MODEL}$`));
    const body = /-d '(.*)'$/.exec(lines[2] ?? '')?.[1];
    assert.ok(body, lines.join('\n'));
    const res = await fetch(`${mesh.url}/v2/models/${MODEL}/infer`, { method: 'POST', body });
    assert.equal(res.status, 200, await res.text());
  });

  it('every metric the shipped Grafana dashboard queries is exposed by some service', async () => {
    const exposed = new Set<string>();
    for (const svc of ['gateway', 'batcher', 'worker-0'])
      for (const n of familyNames(await scrape(svc))) exposed.add(n);
    const dashboard = JSON.parse(await readFile(join(ROOT, 'infra/grafana/ge-mesh-dashboard.json'), 'utf8')) as {
      panels: { title: string; targets?: { expr: string }[] }[];
    };
    const queried = dashboard.panels.flatMap((p) =>
      (p.targets ?? []).flatMap((t) => metricNamesInQuery(t.expr).map((name) => ({ name, panel: p.title }))),
    );
    assert.ok(queried.length > 20, `${queried.length} metric references`);
    const missing = queried.filter((q) => !exposed.has(q.name));
    assert.deepEqual(missing, [], 'metrics the dashboard queries that no service exposes');
  });
});

describe('device memory from an NPU worker (ge runtime on the CANN simulator)', {
  timeout: 120_000,
  skip: skipNative,
}, () => {
  let mesh: TestMesh;
  let repo: Awaited<ReturnType<typeof tinyVariants>>;

  before(async () => {
    repo = await tinyVariants({ tiny_ge: 'max_batch_size: 8' });
    const config = join(repo.dir, 'tiny_ge', 'config.pbtxt');
    await writeFile(config, (await readFile(config, 'utf8')).replace('backend: "onnxruntime"', 'backend: "npu_ge"'));
    mesh = await startTestMesh({
      modelRepository: repo.dir,
      models: ['tiny_ge'],
      flags: { worker: ['--runtime', 'ge'] },
    });
  });
  after(async () => {
    await mesh?.teardown();
    await repo?.remove();
  });

  it('reports used and total bytes of its device, used > 0 with the model loaded', async () => {
    const ready = mesh.lines.find((l) => l.startsWith('[worker-0]') && l.includes('"msg":"worker ready"')) ?? '';
    const port = Number(/"metricsPort":(\d+)/.exec(ready)?.[1]);
    const s = parsePrometheusText(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text());
    const device = /"devices":\[(\d+)/.exec(ready)?.[1] ?? '0';
    const used = sampleValue(s, 'gemesh_device_memory_used_bytes', { device }) ?? 0;
    const total = sampleValue(s, 'gemesh_device_memory_total_bytes', { device }) ?? 0;
    assert.ok(total > 0, `total ${total}`);
    assert.ok(used > 0 && used < total, `used ${used} of ${total}`);
  });
});
