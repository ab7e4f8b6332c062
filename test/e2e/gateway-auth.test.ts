import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { MeshClient, MeshClientError, tensor } from '@ge-mesh/client';
import { ROOT } from '@ge-mesh/launcher';
import { type GatewayRepository, makeGatewayRepository } from '../support/gateway-repository.js';
import { RABBITMQ_URL, startTestMesh, type TestMesh, uniqueNamespace } from '../support/mesh-harness.js';

/**
 * API keys on: every route but health needs a key on REST and AMQP alike
 * (401), a key limited to some models gets 403 for the others (whether they
 * exist or not), a model marked public needs none, listings show only what
 * the key may see, and a bad key configuration stops the gateway at startup.
 */
const K_ALL = 'all-models-key-0123456789';
const K_TINY = 'tiny-only-key-0123456789';
const K_OPEN = 'open-only-key-0123456789';
const UNAUTHENTICATED = { error: "a valid API key is required; send it as 'Authorization: Bearer <key>'" };

describe('end to end: API keys on REST and AMQP', { timeout: 240_000 }, () => {
  let mesh: TestMesh;
  let repo: GatewayRepository;

  before(async () => {
    repo = await makeGatewayRepository({ open: true });
    const keysFile = join(repo.dir, 'keys.txt');
    await writeFile(keysFile, `# test keys\n${K_ALL}\n${K_TINY} models=tiny\n`);
    mesh = await startTestMesh({
      modelRepository: repo.dir,
      models: repo.models,
      flags: { gateway: ['--api-keys-file', keysFile, '--api-keys', `${K_OPEN} models=open`] },
    });
  });
  after(async () => {
    await mesh?.teardown();
    await repo?.remove();
  });

  async function call(method: string, path: string, key?: string, body?: unknown) {
    const res = await fetch(`${mesh.url}${path}`, {
      method,
      headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), 'content-type': 'application/json' },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, text, json: text ? (JSON.parse(text) as unknown) : undefined, headers: res.headers };
  }
  const x = { inputs: [{ name: 'x', shape: [1, 16], datatype: 'FP32', data: Array(16).fill(0.25) }] };

  it('health needs no key; every other route answers 401 without a valid one', async () => {
    assert.equal((await call('GET', '/v2/health/live')).status, 200);
    assert.equal((await call('GET', '/v2/health/ready')).status, 200);
    const routes: Array<[string, string, unknown?]> = [
      ['GET', '/v2'],
      ['GET', '/v2/models/tiny'],
      ['GET', '/v2/models/tiny/versions/1'],
      ['GET', '/v2/models/tiny/ready'],
      ['GET', '/v2/models/tiny/config'],
      ['GET', '/v2/models/tiny/stats'],
      ['GET', '/v2/models/stats'],
      ['POST', '/v2/repository/index'],
      ['GET', '/v2/systemsharedmemory/status'],
      ['POST', '/v2/cudasharedmemory/region/r1/register', {}],
      ['POST', '/v2/models/tiny/infer', x],
      ['POST', '/v2/models/nope/infer', x],
    ];
    for (const key of [undefined, 'not-a-valid-key-0123456789']) {
      for (const [method, path, body] of routes) {
        const r = await call(method, path, key, body);
        assert.equal(r.status, 401, `${method} ${path}`);
        assert.deepEqual(r.json, UNAUTHENTICATED);
        assert.equal(r.headers.get('www-authenticate'), 'Bearer realm="ge-mesh"');
      }
    }
  });

  it('a key works within its models, gets 403 outside them, and sees only them in listings', async () => {
    assert.equal((await call('POST', '/v2/models/tiny/infer', K_TINY, x)).status, 200);
    assert.equal((await call('GET', '/v2/models/tiny/config', K_TINY)).status, 200);
    for (const [key, model] of [
      [K_OPEN, 'tiny'],
      [K_TINY, 'nope'],
      [K_OPEN, 'nope'],
    ] as const) {
      const r = await call('POST', `/v2/models/${model}/infer`, key, x);
      assert.equal(r.status, 403);
      assert.deepEqual(r.json, { error: `this API key may not use model '${model}'` });
    }
    // A key for every model learns that a model does not exist.
    assert.equal((await call('GET', '/v2/models/nope', K_ALL)).status, 404);
    assert.equal((await call('GET', '/v2', K_TINY)).status, 200);

    const statsNames = async (key: string) =>
      ((await call('GET', '/v2/models/stats', key)).json as { model_stats: Array<{ name: string }> }).model_stats.map(
        (s) => s.name,
      );
    assert.deepEqual(await statsNames(K_ALL), ['open', 'tiny']);
    assert.deepEqual(await statsNames(K_TINY), ['open', 'tiny']);
    assert.deepEqual(await statsNames(K_OPEN), ['open']);
    const index = (await call('POST', '/v2/repository/index', K_OPEN)).json as Array<{ name: string }>;
    assert.deepEqual(
      index.map((r) => r.name),
      ['open'],
    );
  });

  it('a model marked gemesh_auth "none" needs no key', async () => {
    assert.equal((await call('GET', '/v2/models/open')).status, 200);
    assert.equal((await call('GET', '/v2/models/open/ready')).status, 200);
    const r = await call('POST', '/v2/models/open/infer', undefined, x);
    assert.equal(r.status, 200, r.text);
  });

  it('AMQP producers are held to the same keys', async () => {
    const connect = (apiKey?: string) =>
      MeshClient.connect({
        url: RABBITMQ_URL,
        namespace: mesh.namespace,
        timeoutMs: 30_000,
        ...(apiKey ? { apiKey } : {}),
      });
    const request = (model: string) => ({
      model,
      inputs: [tensor('x', 'FP32', [1, 16], new Float32Array(16).fill(0.25))],
    });
    const refused = async (client: MeshClient, model: string) => {
      try {
        await client.infer(request(model));
      } catch (err) {
        assert.ok(err instanceof MeshClientError, String(err));
        return { code: err.code, status: err.status, error: err.message };
      }
      assert.fail(`expected ${model} to be refused`);
    };
    const anonymous = await connect();
    const tinyOnly = await connect(K_TINY);
    const wrong = await connect('wrong-key-0123456789abc');
    try {
      assert.deepEqual(await refused(anonymous, 'tiny'), { code: 'UNAUTHENTICATED', status: 401, ...UNAUTHENTICATED });
      assert.deepEqual(await refused(wrong, 'tiny'), { code: 'UNAUTHENTICATED', status: 401, ...UNAUTHENTICATED });
      assert.equal((await tinyOnly.infer(request('tiny'))).outputs[0]?.name, 'y');
      assert.deepEqual(await refused(tinyOnly, 'nope'), {
        code: 'FORBIDDEN',
        status: 403,
        error: "this API key may not use model 'nope'",
      });
      assert.equal((await anonymous.infer(request('open'))).model_name, 'open');
    } finally {
      await Promise.all([anonymous.close(), tinyOnly.close(), wrong.close()]);
    }
  });

  it('a bad key configuration stops the gateway at startup with the reason', async () => {
    const run = (args: string[]) =>
      new Promise<{ code: number | null; out: string }>((resolve) => {
        const child = spawn(
          process.execPath,
          [
            '--import',
            'tsx',
            'services/gateway/src/main.ts',
            '--namespace',
            uniqueNamespace('bad'),
            '--model-repository',
            repo.dir,
            '--http-port',
            '0',
            '--metrics-port',
            '0',
            ...args,
          ],
          { cwd: ROOT, env: { ...process.env, GEMESH_RABBITMQ_URL: RABBITMQ_URL } },
        );
        let out = '';
        child.stdout.on('data', (c: Buffer) => {
          out += c.toString();
        });
        child.stderr.on('data', (c: Buffer) => {
          out += c.toString();
        });
        child.on('exit', (code) => resolve({ code, out }));
      });
    const short = await run(['--api-keys', 'short']);
    assert.equal(short.code, 1);
    assert.match(short.out, /invalid API key configuration/);
    assert.match(short.out, /--api-keys:1: an API key must be at least 16 characters/);
    const unknown = await run(['--api-keys', `${K_ALL} models=tiny,ghost`]);
    assert.equal(unknown.code, 1);
    assert.match(unknown.out, /--api-keys:1: model 'ghost' is not in the model repository \(known: open, tiny\)/);
  });
});
