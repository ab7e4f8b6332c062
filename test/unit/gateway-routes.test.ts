import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseModelConfig, type RepositoryModel } from '@ge-mesh/model-repository';
import { Authorizer } from '../../services/gateway/src/auth.js';
import { buildApp } from '../../services/gateway/src/http/app.js';
import type { ModelIndexEntry, ModelReadyState, ModelStates } from '../../services/gateway/src/model-states.js';
import { InferPipeline } from '../../services/gateway/src/pipeline/infer-pipeline.js';
import { MeshQueries } from '../../services/gateway/src/pipeline/queries.js';
import { InferenceStats } from '../../services/gateway/src/stats/inference-stats.js';
import { RawHttpConnection } from '../support/raw-http.js';

/**
 * The routes that depend on model readiness, through a ModelStates with
 * versions in every state (what a worker registry or load/unload will
 * report): Triton's 404 / 503 / 400 answers, readiness, statistics and the
 * index follow it, and the server metadata lists model_repository once
 * load/unload routes are registered. No inference is run here (the mesh
 * tests do that), so the inference service is never called.
 */
function model(name: string): RepositoryModel {
  const config = parseModelConfig(
    'backend: "onnxruntime"\nmax_batch_size: 4\ninput [{ name: "x" data_type: TYPE_FP32 dims: [2] }]\noutput [{ name: "y" data_type: TYPE_FP32 dims: [2] }]\n',
    { file: `${name}/config.pbtxt`, modelName: name },
  );
  return { name, dir: name, config, versions: [] };
}

class TableStates implements ModelStates {
  constructor(private readonly table: Record<string, Record<string, ModelReadyState>>) {}
  model(name: string) {
    return Object.hasOwn(this.table, name) ? model(name) : undefined;
  }
  names() {
    return Object.keys(this.table).sort();
  }
  versionState(name: string, version: string) {
    return this.table[name]?.[version];
  }
  readyVersions(name: string) {
    return Object.entries(this.table[name] ?? {})
      .filter(([, s]) => s === 'READY')
      .map(([v]) => v)
      .sort((a, b) => Number(b) - Number(a));
  }
  allReady() {
    return this.names().every((n) => this.readyVersions(n).length > 0);
  }
  index(readyOnly: boolean): ModelIndexEntry[] {
    return this.names().flatMap((name) =>
      Object.entries(this.table[name] ?? {})
        .filter(([, state]) => !readyOnly || state === 'READY')
        .map(([version, state]) => ({ name, version, state })),
    );
  }
}

async function app(ready = true, withRepositoryControl = false) {
  const states = new TableStates({
    m: { '1': 'READY', '2': 'LOADING', '3': 'UNAVAILABLE', '5': 'READY' },
    n: { '1': 'UNLOADING' },
  });
  const auth = await Authorizer.load({ apiKeys: '', apiKeysFile: '' }, states);
  const stats = new InferenceStats();
  const isReady = () => ready;
  const a = buildApp({
    pipeline: new InferPipeline({ states, auth, dispatch: undefined as never, stats, isReady }),
    queries: new MeshQueries({ states, auth, stats, isReady }),
    maxBodyBytes: 1 << 20,
    maxTensorElements: 1000,
  });
  if (withRepositoryControl) {
    a.post('/v2/repository/models/:model/load', (_req, reply) => reply.send());
    a.post('/v2/repository/models/:model/unload', (_req, reply) => reply.send());
  }
  await a.ready();
  return a;
}

describe('gateway routes over model states', () => {
  it("answers Triton's errors for versions that are not ready or have no ready version", async () => {
    const a = await app();
    const get = async (url: string) => {
      const r = await a.inject({ method: 'GET', url });
      return [r.statusCode, r.body];
    };
    assert.deepEqual(await get('/v2/models/m'), [
      200,
      JSON.stringify({
        name: 'm',
        versions: ['1', '5'],
        platform: 'onnxruntime_onnx',
        inputs: [{ name: 'x', datatype: 'FP32', shape: [-1, 2] }],
        outputs: [{ name: 'y', datatype: 'FP32', shape: [-1, 2] }],
      }),
    ]);
    const notReady = JSON.stringify({ error: "Request for unknown model: 'm' version 2 is not at ready state" });
    assert.deepEqual(await get('/v2/models/m/versions/2'), [503, notReady]);
    assert.deepEqual(await get('/v2/models/m/versions/2/ready'), [503, notReady]);
    assert.deepEqual(await get('/v2/models/m/versions/2/config'), [503, notReady]);
    assert.deepEqual(await get('/v2/models/m/versions/5/ready'), [200, '']);
    assert.deepEqual(await get('/v2/models/m/versions/4/ready'), [
      404,
      JSON.stringify({ error: "Request for unknown model: 'm' version 4 is not found" }),
    ]);
    const none = JSON.stringify({ error: "Request for unknown model: 'n' has no available versions" });
    assert.deepEqual(await get('/v2/models/n'), [404, none]);
    assert.deepEqual(await get('/v2/models/n/ready'), [404, none]);
    assert.deepEqual(await get('/v2/health/ready'), [400, '']);
    assert.deepEqual(await get('/v2/health/live'), [200, '']);
  });

  it('statistics and the index follow the states', async () => {
    const a = await app();
    const stats = (await a.inject({ method: 'GET', url: '/v2/models/stats' })).json() as {
      model_stats: Array<{ name: string; version: string }>;
    };
    assert.deepEqual(
      stats.model_stats.map((s) => [s.name, s.version]),
      [
        ['m', '1'],
        ['m', '5'],
      ],
    );
    const n = await a.inject({ method: 'GET', url: '/v2/models/n/stats' });
    assert.deepEqual([n.statusCode, n.json()], [400, { error: "requested model 'n' is not available" }]);
    const v2 = await a.inject({ method: 'GET', url: '/v2/models/m/versions/2/stats' });
    assert.deepEqual(
      [v2.statusCode, v2.json()],
      [400, { error: "requested model version is not available for model 'm'" }],
    );
    const index = await a.inject({ method: 'POST', url: '/v2/repository/index' });
    assert.deepEqual(
      (index.json() as ModelIndexEntry[]).map((r) => `${r.name}/${r.version}:${r.state}`),
      ['m/1:READY', 'm/2:LOADING', 'm/3:UNAVAILABLE', 'm/5:READY', 'n/1:UNLOADING'],
    );
    const ready = await a.inject({ method: 'POST', url: '/v2/repository/index', payload: '{"ready":true}' });
    assert.equal(
      ready.body,
      JSON.stringify([
        { name: 'm', version: '1', state: 'READY' },
        { name: 'm', version: '5', state: 'READY' },
      ]),
    );
  });

  it('while the gateway is not ready: health 400, model ready 400 "Model version not ready", infer 503', async () => {
    const a = await app(false);
    assert.equal((await a.inject({ method: 'GET', url: '/v2/health/ready' })).statusCode, 400);
    const r = await a.inject({ method: 'GET', url: '/v2/models/m/ready' });
    assert.deepEqual([r.statusCode, r.json()], [400, { error: 'Model version not ready' }]);
    const i = await a.inject({ method: 'POST', url: '/v2/models/m/infer', payload: '{"inputs":[]}' });
    assert.deepEqual([i.statusCode, i.json()], [503, { error: 'Server is not ready' }]);
    assert.equal(i.headers['retry-after'], '1');
  });

  it('lists model_repository in the server metadata once load and unload routes exist', async () => {
    const plain = (await (await app()).inject({ method: 'GET', url: '/v2' })).json() as { extensions: string[] };
    assert.equal(plain.extensions.includes('model_repository'), false);
    const withControl = (await (await app(true, true)).inject({ method: 'GET', url: '/v2' })).json() as {
      extensions: string[];
    };
    assert.deepEqual(withControl.extensions, [
      'classification',
      'model_repository',
      'model_repository(unload_dependents)',
      'model_configuration',
      'binary_tensor_data',
      'parameters',
      'statistics',
    ]);
  });

  it('a body over the limit gets its 413 while the client is still sending, and the connection stays usable', async () => {
    const a = await app();
    await a.listen({ port: 0, host: '127.0.0.1' });
    try {
      const port = (a.server.address() as { port: number }).port;
      const c = await RawHttpConnection.open(port);
      const length = (1 << 20) + 1;
      await c.write(
        `POST /v2/models/m/infer HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\n\r\n`,
      );
      await c.write(Buffer.alloc(1024, 32));
      // The answer comes from content-length alone, before the rest of the body is sent.
      const tooLarge = await c.answer();
      assert.deepEqual(
        [tooLarge.status, JSON.parse(tooLarge.body)],
        [413, { error: `request body is larger than the limit of ${1 << 20} bytes` }],
      );
      assert.equal(tooLarge.headers.connection, 'keep-alive');
      // The rest of the body goes through (the gateway reads it away) and the next request is answered.
      await c.write(Buffer.alloc(length - 1024, 32));
      await c.write('GET /v2/health/live HTTP/1.1\r\nhost: x\r\n\r\n');
      const live = await c.answer();
      assert.equal(live.status, 200);
      assert.equal(c.error, undefined);
      c.destroy();
    } finally {
      await a.close();
    }
  });
});
