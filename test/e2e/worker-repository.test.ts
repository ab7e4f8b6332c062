import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { after, before, describe, it } from 'node:test';
import { demoModel, sampleInputs } from '@ge-mesh/demo-models';
import { WorkerRegistry } from '@ge-mesh/store';
import { Redis } from 'ioredis';
import { tiersConfig, tinyVariants, writeTinyVariant } from '../support/batcher-fixtures.js';
import { httpCall } from '../support/http-call.js';
import { REDIS_URL, startTestMesh, type TestMesh } from '../support/mesh-harness.js';
import { jsonInferBody, Reference, toleranceRatio } from '../support/reference.js';

/**
 * One worker driving two devices (CPU devices here) with several models:
 * placement by device_ids and device_exec_blocks, threads per lane,
 * model_warmup, and Triton's repository API (load/unload) with readiness
 * LOADING / UNLOADING / UNAVAILABLE / READY while it happens.
 *
 * GEMESH_TEST_LOAD_DELAY_MS holds every model load for 1 s (test fault
 * injection), so the LOADING state is observable.
 */
const LOAD_DELAY_MS = 1_000;
const WARMUP = `
model_warmup [
  {
    name: "random"
    batch_size: 3
    inputs { key: "x" value: { data_type: TYPE_FP32 dims: [ 16 ] random_data: true } }
    count: 2
  }
]`;

describe('worker: several devices, several models, repository load/unload', { timeout: 180_000 }, () => {
  let mesh: TestMesh;
  let repo: Awaited<ReturnType<typeof tinyVariants>>;
  let redis: Redis;
  let registry: WorkerRegistry;
  const ref = new Reference();

  before(async () => {
    repo = await tinyVariants({
      // Both devices; 1 instance over 2 devices: ceil(1 / 2) = 1 lane each.
      tiny: 'max_batch_size: 8\ndynamic_batching { preferred_batch_size: [ 1, 2, 4, 8 ] }',
      // Device 1 only, 2 streams there, plus Triton's model_warmup.
      pinned: `max_batch_size: 8\ndynamic_batching { preferred_batch_size: [ 1, 2, 4, 8 ] }\nparameters [
  { key: "device_ids" value: { string_value: "1" } },
  { key: "device_exec_blocks" value: { string_value: "2" } }
]${WARMUP}`,
    });
    mesh = await startTestMesh({
      modelRepository: repo.dir,
      models: ['tiny', 'pinned', 'late'],
      env: { GEMESH_TEST_LOAD_DELAY_MS: String(LOAD_DELAY_MS) },
      flags: { worker: ['--devices', '2', '--device-count', '2'] },
    });
    redis = new Redis(REDIS_URL);
    registry = new WorkerRegistry(redis, mesh.namespace);
  });
  after(async () => {
    await ref.close();
    await redis?.quit();
    await mesh?.teardown();
    await repo?.remove();
  });

  const call = (method: string, path: string, body?: unknown) => httpCall(mesh.url, method, path, body);
  const infer = async (model: string, seed: number) => {
    const inputs = sampleInputs(demoModel('tiny'), 2, seed);
    const r = await call('POST', `/v2/models/${model}/infer`, jsonInferBody(inputs));
    if (r.status !== 200) return { status: r.status, text: r.text, ratio: Number.NaN };
    const y = (JSON.parse(r.text) as { outputs: Array<{ data: number[] }> }).outputs[0]?.data ?? [];
    const expected = (await ref.run('tiny', inputs)).y?.data ?? new Float32Array();
    return { status: r.status, text: r.text, ratio: toleranceRatio(y, expected, 1e-4, 1e-3) };
  };
  const index = async () =>
    JSON.parse((await call('POST', '/v2/repository/index')).text) as Array<{
      name: string;
      version: string;
      state: string;
      reason?: string;
    }>;

  it('leases both devices and places each model by device_ids / device_exec_blocks, with threads that fit the cores', async () => {
    const [w, ...others] = await registry.liveWorkers();
    assert.ok(w);
    assert.equal(others.length, 0);
    assert.deepEqual(w.devices, [0, 1]);
    assert.equal(w.kind, 'cpu');
    assert.equal(w.state, 'ready');
    const byName = Object.fromEntries(w.models.map((m) => [m.model, m]));
    // Lanes × threads fit this worker's share of the cores: all of them (2 of 2 devices), over 4 lanes.
    const threads = Math.max(1, Math.floor(availableParallelism() / 4));
    assert.deepEqual(
      { ...byName.tiny, inflight: 0, batches: 0 },
      {
        model: 'tiny',
        versions: ['1'],
        state: 'ready',
        generation: 0,
        devices: [0, 1],
        lanesPerDevice: 1,
        lanes: 2,
        tiers: [1, 2, 4, 8],
        threadsPerLane: threads,
        inflight: 0,
        batches: 0,
      },
    );
    assert.deepEqual([byName.pinned?.devices, byName.pinned?.lanesPerDevice, byName.pinned?.lanes], [[1], 2, 2]);
    // Warmup: 4 tiers plus model_warmup's sample twice, on each of pinned's lanes.
    const serving = mesh.lines.find((l) => l.includes('"msg":"serving"') && l.includes('"model":"pinned"'));
    assert.match(serving ?? '', /"warmupSamples":6/);
    for (const [i, m] of ['tiny', 'pinned'].entries()) {
      const r = await infer(m, 10 + i);
      assert.equal(r.status, 200, r.text);
      assert.ok(r.ratio <= 1, `${m}: ${r.ratio}`);
    }
  });

  it('unload: the model turns not ready, its worker lets go, the other model keeps serving', async () => {
    assert.deepEqual(
      (await index()).map((r) => [r.name, r.state]),
      [
        ['pinned', 'READY'],
        ['tiny', 'READY'],
      ],
    );
    const unloading = call('POST', '/v2/repository/models/tiny/unload');
    const states = new Set<string>();
    let answered = false;
    void unloading.then(() => {
      answered = true;
    });
    while (!answered) {
      states.add((await index()).find((r) => r.name === 'tiny')?.state ?? '?');
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.deepEqual(await unloading, { status: 200, text: '' });
    assert.ok(!states.has('?'), [...states].join());
    assert.notEqual((await call('GET', '/v2/models/tiny/ready')).status, 200);
    assert.deepEqual(
      (await index()).map((r) => [r.name, r.state, r.reason]),
      [
        ['pinned', 'READY', undefined],
        ['tiny', 'UNAVAILABLE', 'unloaded'],
      ],
    );
    assert.equal(
      (await call('POST', '/v2/repository/index', { ready: true })).text,
      '[{"name":"pinned","version":"1","state":"READY"}]',
    );
    const [w] = await registry.liveWorkers();
    assert.deepEqual(
      w?.models.map((m) => m.model),
      ['pinned'],
    );
    assert.notEqual((await infer('tiny', 20)).status, 200);
    assert.equal((await infer('pinned', 21)).status, 200);
    // The server is ready: an unloaded model is not wanted.
    assert.equal((await call('GET', '/v2/health/ready')).status, 200);
  });

  it('load: LOADING until the worker compiled and warmed it, then READY and serving', async () => {
    const loading = call('POST', '/v2/repository/models/tiny/load');
    const seen: string[] = [];
    let answered = false;
    void loading.then(() => {
      answered = true;
    });
    while (!answered) {
      // Readiness first, then the index: loading only moves forward, so a ready model is READY in the index.
      const ready = (await call('GET', '/v2/models/tiny/ready')).status;
      const state = (await index()).find((r) => r.name === 'tiny')?.state ?? '?';
      if (seen.at(-1) !== state) seen.push(state);
      if (ready === 200) assert.equal(state, 'READY', seen.join(' → '));
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.deepEqual(await loading, { status: 200, text: '' });
    assert.ok(seen.includes('LOADING'), seen.join(' → '));
    assert.ok(!seen.includes('READY') || seen.at(-1) === 'READY', seen.join(' → '));
    assert.deepEqual(await call('GET', '/v2/models/tiny/ready'), { status: 200, text: '' });
    const [w] = await registry.liveWorkers();
    const tiny = w?.models.find((m) => m.model === 'tiny');
    // Control generations: unload was 1, this load 2.
    assert.deepEqual([tiny?.state, tiny?.generation], ['ready', 2]);
    const r = await infer('tiny', 30);
    assert.equal(r.status, 200, r.text);
    assert.ok(r.ratio <= 1);
  });

  it('a model added later and loaded by the API is batched; a changed config reaches the batcher once a worker has it ready', async () => {
    const writeConfig = (tiers: number[]) => writeTinyVariant(repo.dir, 'late', tiersConfig(tiers));
    await writeConfig([1, 2, 4, 8]);
    assert.deepEqual(await call('POST', '/v2/repository/models/late/load'), { status: 200, text: '' });
    const first = await infer('late', 40);
    assert.equal(first.status, 200, first.text);
    assert.ok(first.ratio <= 1, String(first.ratio));
    const batcherLine = (msg: string, tiers: string) =>
      mesh.lines.findIndex(
        (l) =>
          l.startsWith('[batcher]') &&
          l.includes(`"msg":"${msg}"`) &&
          l.includes('"model":"late"') &&
          l.includes(`"tiers":[${tiers}]`),
      );
    assert.ok(batcherLine('batching model', '1,2,4,8') >= 0, 'the batcher took up the loaded model');

    // Tiers 1 and 2 now: the worker loads and warms them (held 1 s by the test's load delay) before the batcher switches.
    // Requests keep coming during the reload: none may fail (the new version warms beside the old one).
    let reloading = true;
    const during: Array<{ status: number; ratio: number; text: string }> = [];
    const traffic = (async () => {
      for (let seed = 100; reloading; seed++) during.push(await infer('late', seed));
    })();
    await writeConfig([1, 2]);
    assert.deepEqual(await call('POST', '/v2/repository/models/late/load'), { status: 200, text: '' });
    const waitFor = async (find: () => number) => {
      for (let i = 0; i < 100 && find() < 0; i++) await new Promise((r) => setTimeout(r, 100));
      return find();
    };
    const switched = await waitFor(() => batcherLine('model config changed: batching with the new one', '1,2'));
    const served = mesh.lines.findIndex(
      (l) =>
        l.startsWith('[worker') &&
        l.includes('"msg":"serving"') &&
        l.includes('"model":"late"') &&
        l.includes('"tiers":[1,2]'),
    );
    assert.ok(served >= 0 && switched > served, `worker serving at ${served}, batcher switched at ${switched}`);
    reloading = false;
    await traffic;
    const failed = during.filter((r) => r.status !== 200 || !(r.ratio <= 1));
    assert.ok(during.length >= 10, `only ${during.length} requests during the reload`);
    assert.deepEqual(failed, [], `${failed.length} of ${during.length} requests failed during the reload`);
    // The previous version drains after the switch, in the background.
    const drained = await waitFor(() =>
      mesh.lines.findIndex(
        (l) => l.includes('"msg":"reloaded: the previous version drained"') && l.includes('"model":"late"'),
      ),
    );
    assert.ok(drained > served, 'the previous version drained after the new one served');
    const second = await infer('late', 41);
    assert.equal(second.status, 200, second.text);
    assert.ok(second.ratio <= 1, String(second.ratio));

    assert.deepEqual(await call('POST', '/v2/repository/models/late/unload'), { status: 200, text: '' });
    const stopped = await waitFor(() =>
      mesh.lines.findIndex(
        (l) =>
          l.startsWith('[batcher]') &&
          l.includes('"msg":"model unloaded: batching stopped"') &&
          l.includes('"model":"late"'),
      ),
    );
    assert.ok(stopped >= 0, 'the batcher stopped batching the unloaded model');
  });

  it('load errors and the extension list', async () => {
    assert.deepEqual(await call('POST', '/v2/repository/models/nope/load'), {
      status: 400,
      text: JSON.stringify({ error: "failed to load 'nope', failed to poll from model repository" }),
    });
    // A config override is checked as a config.pbtxt is (test/e2e/load-overrides.test.ts loads good ones).
    assert.deepEqual(await call('POST', '/v2/repository/models/tiny/load', '{"parameters":{"config":"{}"}}'), {
      status: 400,
      text: JSON.stringify({
        error:
          "failed to load 'tiny', the config sets neither 'backend' nor 'platform'; add backend: \"onnxruntime\" or backend: \"npu_ge\"",
      }),
    });
    assert.deepEqual(await call('POST', '/v2/repository/models/tiny/unload', '{'), {
      status: 400,
      text: (await call('POST', '/v2/repository/index', '{')).text,
    });
    assert.deepEqual(await call('POST', '/v2/repository/any/models/tiny/unload'), {
      status: 400,
      text: JSON.stringify({ error: "'repository_name' specification is not supported" }),
    });
    const meta = JSON.parse((await call('GET', '/v2')).text) as { extensions: string[] };
    assert.ok(meta.extensions.includes('model_repository'), meta.extensions.join());
    // Loading a loaded, unchanged model only answers the new generation.
    assert.deepEqual(await call('POST', '/v2/repository/models/pinned/load'), { status: 200, text: '' });
    assert.equal((await infer('pinned', 40)).status, 200);
  });
});
