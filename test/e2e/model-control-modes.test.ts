import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { demoModel, sampleInputs } from '@ge-mesh/demo-models';
import { tiersConfig, tinyVariants, writeTinyVariant } from '../support/batcher-fixtures.js';
import { httpCall } from '../support/http-call.js';
import { startTestMesh, type TestMesh } from '../support/mesh-harness.js';
import { jsonInferBody, Reference, toleranceRatio } from '../support/reference.js';

/**
 * Triton's model control modes across the whole mesh (gateway, batcher and
 * worker read the same --model-control-mode): explicit loads only the
 * --load-model names at start and the rest by the repository API; poll
 * follows the repository folder (added, changed and removed models) and
 * refuses the API.
 */
const TIERS_1248 = tiersConfig([1, 2, 4, 8]);

function client(mesh: () => TestMesh, ref: Reference) {
  const call = (method: string, path: string, body?: unknown) => httpCall(mesh().url, method, path, body);
  return {
    call,
    /** A 2-row request to a tiny variant, checked against onnxruntime on the same inputs. */
    async infer(model: string, seed: number) {
      const inputs = sampleInputs(demoModel('tiny'), 2, seed);
      const r = await call('POST', `/v2/models/${model}/infer`, jsonInferBody(inputs));
      if (r.status !== 200) return { ...r, ratio: Number.NaN };
      const y = (JSON.parse(r.text) as { outputs: Array<{ data: number[] }> }).outputs[0]?.data ?? [];
      const expected = (await ref.run('tiny', inputs)).y?.data ?? new Float32Array();
      return { ...r, ratio: toleranceRatio(y, expected, 1e-4, 1e-3) };
    },
    async states() {
      const rows = JSON.parse((await call('POST', '/v2/repository/index')).text) as Array<{
        name: string;
        state?: string;
        reason?: string;
      }>;
      return Object.fromEntries(rows.map((r) => [r.name, [r.state, r.reason].filter(Boolean).join(': ')]));
    },
  };
}

async function eventually(check: () => Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`not within ${timeoutMs / 1000} s: ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('model control: explicit', { timeout: 180_000 }, () => {
  let mesh: TestMesh;
  let repo: Awaited<ReturnType<typeof tinyVariants>>;
  const ref = new Reference();
  const c = client(() => mesh, ref);

  before(async () => {
    repo = await tinyVariants({ a: TIERS_1248, b: TIERS_1248 });
    mesh = await startTestMesh({
      modelRepository: repo.dir,
      models: ['a', 'b'],
      env: { GEMESH_MODEL_CONTROL_MODE: 'explicit', GEMESH_LOAD_MODEL: 'a' },
    });
  });
  after(async () => {
    await ref.close();
    await mesh?.teardown();
    await repo?.remove();
  });

  it('loads only --load-model at start; the rest loads by the API and is then batched and answered', async () => {
    await eventually(async () => (await c.states()).a === 'READY', 'a ready');
    assert.deepEqual(await c.states(), { a: 'READY', b: 'UNAVAILABLE: unloaded' });
    assert.equal((await c.call('GET', '/v2/health/ready')).status, 200);
    const a = await c.infer('a', 1);
    assert.equal(a.status, 200, a.text);
    assert.ok(a.ratio <= 1, String(a.ratio));
    assert.notEqual((await c.infer('b', 2)).status, 200);

    assert.deepEqual(await c.call('POST', '/v2/repository/models/b/load'), { status: 200, text: '' });
    assert.deepEqual(await c.states(), { a: 'READY', b: 'READY' });
    const b = await c.infer('b', 3);
    assert.equal(b.status, 200, b.text);
    assert.ok(b.ratio <= 1, String(b.ratio));
    // Batched by a batcher that started following it: 32 requests at once take fewer executions.
    const burst = await Promise.all(Array.from({ length: 32 }, (_, i) => c.infer('b', 100 + i)));
    assert.deepEqual(
      burst.filter((r) => r.status !== 200 || !(r.ratio <= 1)).map((r) => r.text),
      [],
    );
    const stats = JSON.parse((await c.call('GET', '/v2/models/b/stats')).text) as {
      model_stats: Array<{ inference_count: number; execution_count: number }>;
    };
    const st = stats.model_stats[0];
    assert.ok(st);
    // 33 requests of 2 rows each.
    assert.equal(st.inference_count, 66);
    assert.ok(st.execution_count < 33, `executions ${st.execution_count} for 33 requests`);

    // Unloaded: not ready, and requests get Triton's answer.
    assert.deepEqual(await c.call('POST', '/v2/repository/models/b/unload'), { status: 200, text: '' });
    await eventually(async () => (await c.states()).b === 'UNAVAILABLE: unloaded', 'b unloaded');
    assert.equal((await c.call('GET', '/v2/models/b/ready')).status, 404);
    const refused = await c.infer('b', 4);
    assert.deepEqual(
      { status: refused.status, text: refused.text },
      { status: 404, text: `{"error":"Request for unknown model: 'b' has no available versions"}` },
    );
  });
});

describe('model control: poll', { timeout: 180_000 }, () => {
  let mesh: TestMesh;
  let repo: Awaited<ReturnType<typeof tinyVariants>>;
  const ref = new Reference();
  const c = client(() => mesh, ref);

  before(async () => {
    repo = await tinyVariants({ a: TIERS_1248, gone: TIERS_1248 });
    mesh = await startTestMesh({
      modelRepository: repo.dir,
      models: ['a', 'gone', 'added'],
      env: { GEMESH_MODEL_CONTROL_MODE: 'poll' },
      flags: { gateway: ['--repository-poll-secs', '1'] },
    });
  });
  after(async () => {
    await ref.close();
    await mesh?.teardown();
    await repo?.remove();
  });

  it("refuses the repository API with Triton's answer", async () => {
    assert.deepEqual(await c.call('POST', '/v2/repository/models/a/load'), {
      status: 503,
      text: '{"error":"explicit model load / unload is not allowed if polling is enabled"}',
    });
  });

  /** Requests to `model` one after another until stopped: every status and answer kept. */
  function steadyLoad(model: string) {
    const results: Array<{ status: number; ratio: number; text: string }> = [];
    let stopped = false;
    const running = (async () => {
      for (let seed = 0; !stopped; seed++) {
        results.push(await c.infer(model, 10_000 + seed));
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    return {
      results,
      async stop() {
        stopped = true;
        await running;
        return results;
      },
    };
  }
  const failures = (rs: Array<{ status: number; ratio: number; text: string }>) =>
    rs.filter((r) => r.status !== 200 || !(r.ratio <= 1)).map((r) => `${r.status} ${r.text.slice(0, 120)}`);

  it('loads a model added to the folder, applies a changed config, unloads a removed model; no request to a model that stays fails', async () => {
    await eventually(async () => (await c.states()).a === 'READY', 'a ready');
    // Steady load on the model that stays, across every change below.
    const onA = steadyLoad('a');
    await writeTinyVariant(repo.dir, 'added', TIERS_1248);
    // Poll period 1 s: each change is expected within a few periods (load and warmup included).
    await eventually(async () => (await c.states()).added === 'READY', 'the added model ready', 15_000);
    const first = await c.infer('added', 4);
    assert.equal(first.status, 200, first.text);
    assert.ok(first.ratio <= 1, String(first.ratio));

    // Changed preferred sizes (tiers) and delay, under steady load on the changed model too: its
    // workers warm the new config beside the old one, so no request of either kind fails.
    const onAdded = steadyLoad('added');
    await writeTinyVariant(
      repo.dir,
      'added',
      'max_batch_size: 2\ndynamic_batching { preferred_batch_size: [ 1, 2 ] max_queue_delay_microseconds: 3000 }',
    );
    const changed = () =>
      mesh.lines.findIndex(
        (l) =>
          l.startsWith('[batcher]') &&
          l.includes('"msg":"model config changed: batching with the new one"') &&
          l.includes('"model":"added"') &&
          l.includes('"tiers":[1,2]') &&
          l.includes('"delayUs":3000'),
      );
    await eventually(async () => changed() >= 0, 'the batcher on the changed config', 15_000);
    const served = mesh.lines.findIndex(
      (l) =>
        l.startsWith('[worker') &&
        l.includes('"msg":"serving"') &&
        l.includes('"model":"added"') &&
        l.includes('"tiers":[1,2]'),
    );
    assert.ok(served >= 0 && changed() > served, `worker serving at ${served}, batcher switched at ${changed()}`);
    // A few requests on the new config before the load stops.
    const switchedAt = onAdded.results.length;
    await eventually(async () => onAdded.results.length >= switchedAt + 5, 'requests on the new config');
    const added = await onAdded.stop();
    assert.deepEqual(failures(added), [], `requests to 'added' across its change (${added.length} sent)`);

    // A config that no longer loads: the last good one goes on serving, and the index and the log say why.
    await writeTinyVariant(repo.dir, 'a', 'max_batch_size: 8\ndynamic_batching { preferred_batch_size: [ 16 ] }');
    const brokenReason = async () =>
      (
        JSON.parse((await c.call('POST', '/v2/repository/index')).text) as Array<{ name: string; reason?: string }>
      ).find((r) => r.name === 'a')?.reason ?? '';
    await eventually(async () => (await brokenReason()) !== '', 'the broken config in the index', 15_000);
    assert.equal(
      await brokenReason(),
      'the changed config does not load (a/config.pbtxt:4:44: preferred batch size 16 is above max_batch_size 8, so no batch can reach it; lower it or raise max_batch_size); the last good one serves',
    );
    assert.equal((await c.states()).a?.split(':')[0], 'READY');
    assert.ok(
      mesh.lines.some(
        (l) =>
          l.includes('"msg":"repository poll: model not loaded; its last version goes on"') &&
          l.includes('"model":"a"'),
      ),
    );
    await writeTinyVariant(repo.dir, 'a', TIERS_1248);
    await eventually(async () => (await brokenReason()) === '', 'the mended config loaded', 15_000);

    await rm(join(repo.dir, 'gone'), { recursive: true, force: true });
    await eventually(
      async () => (await c.states()).gone === 'UNAVAILABLE: unloaded',
      'the removed model unloaded',
      15_000,
    );
    assert.notEqual((await c.infer('gone', 6)).status, 200);
    assert.equal((await c.call('GET', '/v2/health/ready')).status, 200);
    const a = await onA.stop();
    assert.ok(a.length >= 20, `only ${a.length} requests to 'a'`);
    assert.deepEqual(failures(a), [], `requests to 'a' across the changes (${a.length} sent)`);
  });
});

/**
 * Model `slow`: one row per batch, each held `laneDelayMs` on the model's one lane, three batches
 * staged per lane. At an unload one batch runs, one is in the worker's hand (prefetch two) and two
 * wait in the batch queue, which no one consumes once the worker stops taking batches.
 */
async function startSlowMesh(laneDelayMs: number, env: Record<string, string> = {}) {
  const repo = await tinyVariants({ slow: 'max_batch_size: 1\ndynamic_batching { }' });
  const mesh = await startTestMesh({
    modelRepository: repo.dir,
    models: ['slow'],
    env: { GEMESH_TEST_LANE_DELAY_MS: String(laneDelayMs), ...env },
    flags: { batcher: ['--staged-batches', '3'] },
  });
  return { repo, mesh };
}

/** Twelve one-row requests to `slow`, then its unload 400 ms later: every answer, with when it came (ms). */
async function unloadUnderLoad(c: ReturnType<typeof client>) {
  await eventually(async () => (await c.states()).slow === 'READY', 'slow ready');
  const started = Date.now();
  const inputs = sampleInputs(demoModel('tiny'), 1, 7);
  const sent = Array.from({ length: 12 }, () =>
    c.call('POST', '/v2/models/slow/infer', jsonInferBody(inputs)).then((r) => ({ ...r, at: Date.now() - started })),
  );
  await new Promise((r) => setTimeout(r, 400));
  assert.deepEqual(await c.call('POST', '/v2/repository/models/slow/unload'), { status: 200, text: '' });
  return { inputs, answers: await Promise.all(sent) };
}

describe('model control: unload while requests are queued', { timeout: 180_000 }, () => {
  let mesh: TestMesh;
  let repo: Awaited<ReturnType<typeof tinyVariants>>;
  const ref = new Reference();
  const c = client(() => mesh, ref);

  before(async () => {
    // Each batch held 1 s: requests pile up in the queue.
    ({ repo, mesh } = await startSlowMesh(1000));
  });
  after(async () => {
    await ref.close();
    await mesh?.teardown();
    await repo?.remove();
  });

  it('answers every queued request and every batch left in the queue (MODEL_NOT_READY); those in hand finish', async () => {
    const { inputs, answers } = await unloadUnderLoad(c);
    const ok = answers.filter((a) => a.status === 200);
    const refused = answers.filter(
      (a) => a.status === 400 && a.text.includes("model 'slow' was unloaded while the request was queued"),
    );
    // The batch running at the unload and the one in the worker's hand are answered; the two in
    // the batch queue and the eight queued before any batch are refused.
    assert.equal(ok.length, 2, JSON.stringify(answers));
    assert.equal(refused.length, 10, JSON.stringify(answers));
    // Nothing waited for its deadline (the gateway's request timeout is 60 s).
    assert.ok(Math.max(...answers.map((a) => a.at)) < 15_000, JSON.stringify(answers.map((a) => a.at)));
    const swept = mesh.lines.filter((l) => l.includes('unloaded model: a batch no worker took was answered'));
    assert.equal(swept.length, 2, swept.join('\n'));
    for (const line of swept) assert.match(line, /"requests":1\b/);
    const expected = (await ref.run('tiny', inputs)).y?.data ?? new Float32Array();
    for (const a of ok) {
      const y = (JSON.parse(a.text) as { outputs: Array<{ data: number[] }> }).outputs[0]?.data ?? [];
      assert.ok(toleranceRatio(y, expected, 1e-4, 1e-3) <= 1);
    }
  });
});

describe('model control: unload while batches outlast the drain timeout', { timeout: 180_000 }, () => {
  let mesh: TestMesh;
  let repo: Awaited<ReturnType<typeof tinyVariants>>;
  const c = client(() => mesh, new Reference());

  before(async () => {
    // Each batch held 20 s, and the worker waits 500 ms for the batches in hand to end: at the
    // unload neither of its two can finish in time.
    ({ repo, mesh } = await startSlowMesh(20_000, { GEMESH_DRAIN_TIMEOUT_MS: '500' }));
  });
  after(async () => {
    await mesh?.teardown();
    await repo?.remove();
  });

  it('answers the batches still running MODEL_NOT_READY instead of returning them to a queue no one reads', async () => {
    const { answers } = await unloadUnderLoad(c);
    const cutOff = answers.filter(
      (a) =>
        a.status === 400 &&
        a.text.includes("model 'slow' was unloaded while the request was running") &&
        a.text.includes('drain timeout (500 ms)'),
    );
    const queued = answers.filter(
      (a) => a.status === 400 && a.text.includes("model 'slow' was unloaded while the request was queued"),
    );
    // The batch running and the one in the worker's hand, then the two in the batch queue and
    // the eight queued before any batch.
    assert.equal(cutOff.length, 2, JSON.stringify(answers));
    assert.equal(queued.length, 10, JSON.stringify(answers));
    // None waited for its run's 20 s hold, nor for its deadline.
    assert.ok(Math.max(...answers.map((a) => a.at)) < 15_000, JSON.stringify(answers.map((a) => a.at)));
    const logged = mesh.lines.filter((l) => l.includes('unload: batches still running are answered with an error'));
    assert.equal(logged.length, 1, logged.join('\n'));
    assert.match(logged[0] ?? '', /"batches":2\b/);
    assert.equal(mesh.lines.filter((l) => l.includes('returned for redelivery')).length, 0);
  });
});
