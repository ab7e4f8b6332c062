import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseModelConfig, type Repository, type RepositoryModel } from '@ge-mesh/model-repository';
import { MeshError } from '@ge-mesh/protocol';
import { AuthConfigError, Authorizer, parseApiKeys } from '../../services/gateway/src/auth.js';
import { RepositoryModelStates } from '../support/repository-model-states.js';

/** API keys: parsing, startup validation, and the 401 / 403 / public-model rules. */
function repo(extra: Record<string, string> = {}): RepositoryModelStates {
  const models = new Map<string, RepositoryModel>();
  const add = (name: string, more = '') => {
    const config = parseModelConfig(
      `backend: "onnxruntime"\nmax_batch_size: 0\ninput [{ name: "x" data_type: TYPE_FP32 dims: [1] }]\noutput [{ name: "y" data_type: TYPE_FP32 dims: [1] }]\n${more}`,
      { file: `${name}/config.pbtxt`, modelName: name },
    );
    models.set(name, { name, dir: name, config, versions: [{ version: '1', modelPath: 'm' }] });
  };
  add('a');
  add('b');
  for (const [name, value] of Object.entries(extra)) {
    add(name, `parameters { key: "gemesh_auth" value: { string_value: "${value}" } }`);
  }
  const repository: Repository = { dir: '/r', models, errors: new Map() };
  return new RepositoryModelStates(repository);
}

const K1 = 'key-one-0123456789abcdef';
const K2 = 'key-two-0123456789abcdef';
const K3 = 'key-admin-0123456789abcd';

function expectMesh(fn: () => unknown, code: string, message?: string): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof MeshError, String(err));
    assert.equal(err.code, code);
    if (message !== undefined) assert.equal(err.message, message);
    return true;
  });
}

async function expectConfigError(p: Promise<unknown>, message: string): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof AuthConfigError, String(err));
    assert.equal(err.message, message);
    return true;
  });
}

describe('gateway API keys', () => {
  it('parses entries with models and admin options, comments and blank lines', () => {
    const entries = parseApiKeys(`# keys\n${K1}\n\n${K2} models=a,b  # two models\n${K3} admin\n`, 'keys.txt', /\n/);
    assert.deepEqual(
      entries.map((e) => ({
        key: e.key,
        models: e.models === '*' ? '*' : [...e.models],
        admin: e.admin,
        at: e.source,
      })),
      [
        { key: K1, models: '*', admin: false, at: 'keys.txt:2' },
        { key: K2, models: ['a', 'b'], admin: false, at: 'keys.txt:4' },
        { key: K3, models: '*', admin: true, at: 'keys.txt:5' },
      ],
    );
    assert.equal(parseApiKeys(`${K1}; ${K2} models=*`, '--api-keys', /[;\n]/).length, 2);
  });

  it('refuses bad configurations at startup with the source and line', async () => {
    const states = repo({ pub: 'none' });
    await expectConfigError(
      Authorizer.load({ apiKeys: 'short', apiKeysFile: '' }, states),
      '--api-keys:1: an API key must be at least 16 characters of letters, digits and . _ ~ + / = -',
    );
    await expectConfigError(
      Authorizer.load({ apiKeys: `${K1} model=a`, apiKeysFile: '' }, states),
      "--api-keys:1: unknown option 'model=a'; use models=<model>,<model> or admin",
    );
    await expectConfigError(
      Authorizer.load({ apiKeys: `${K1}; ${K2}; ${K1} admin`, apiKeysFile: '' }, states),
      '--api-keys:3: the same API key is already defined at --api-keys:1',
    );
    await expectConfigError(
      Authorizer.load({ apiKeys: '', apiKeysFile: 'keys.txt' }, states, async () => `${K1}\n${K2} models=a,nope\n`),
      "keys.txt:2: model 'nope' is not in the model repository (known: a, b, pub)",
    );
    await expectConfigError(
      Authorizer.load({ apiKeys: '', apiKeysFile: '/missing/keys' }, states, async () => {
        throw new Error('ENOENT');
      }),
      '--api-keys-file: cannot read /missing/keys: ENOENT',
    );
    await expectConfigError(
      Authorizer.load({ apiKeys: K1, apiKeysFile: '' }, repo({ c: 'open' })),
      `model 'c': parameter gemesh_auth is 'open'; use "required" (the default) or "none"`,
    );
    await expectConfigError(
      Authorizer.load({ apiKeys: '', apiKeysFile: '' }, repo({ c: 'required' })),
      `model 'c' sets gemesh_auth: "required" but the gateway has no API key; give --api-keys or --api-keys-file`,
    );
  });

  it('is off without keys: everything passes', async () => {
    const auth = await Authorizer.load({ apiKeys: '', apiKeysFile: '' }, repo());
    assert.equal(auth.enabled, false);
    assert.equal(auth.check(undefined, 'a'), undefined);
    assert.equal(auth.check('Bearer nonsense'), undefined);
    assert.equal(auth.canSee(undefined, 'b'), true);
  });

  it('with keys: 401 without a valid key, 403 for a model outside its scope, public models open', async () => {
    const auth = await Authorizer.load(
      { apiKeys: `${K1} models=a; ${K2}; ${K3} admin`, apiKeysFile: '' },
      repo({ pub: 'none' }),
    );
    assert.equal(auth.enabled, true);
    const unauth = "a valid API key is required; send it as 'Authorization: Bearer <key>'";
    expectMesh(() => auth.check(undefined), 'UNAUTHENTICATED', unauth);
    expectMesh(() => auth.check(undefined, 'a'), 'UNAUTHENTICATED', unauth);
    expectMesh(() => auth.check(`Bearer ${K1}x`, 'a'), 'UNAUTHENTICATED', unauth);
    expectMesh(() => auth.check(`Basic ${K1}`, 'a'), 'UNAUTHENTICATED', unauth);
    assert.equal(auth.check(`Bearer ${K1}`, 'a')?.source, '--api-keys:1');
    assert.equal(auth.check(`bearer   ${K1} `, 'a')?.source, '--api-keys:1');
    expectMesh(() => auth.check(`Bearer ${K1}`, 'b'), 'FORBIDDEN', "this API key may not use model 'b'");
    // A scoped key learns nothing about which models exist.
    expectMesh(() => auth.check(`Bearer ${K1}`, 'nope'), 'FORBIDDEN', "this API key may not use model 'nope'");
    assert.equal(auth.check(`Bearer ${K2}`, 'b')?.source, '--api-keys:2');
    assert.equal(auth.check(`Bearer ${K2}`, 'nope')?.source, '--api-keys:2');
    // A public model needs no key, and a key sent to it is still recognised.
    assert.equal(auth.check(undefined, 'pub'), undefined);
    assert.equal(auth.check(`Bearer ${K1}`, 'pub')?.source, '--api-keys:1');

    const p1 = auth.check(`Bearer ${K1}`);
    assert.deepEqual(
      ['a', 'b', 'pub'].filter((m) => auth.canSee(p1, m)),
      ['a', 'pub'],
    );
    assert.deepEqual(
      ['a', 'b', 'pub'].filter((m) => auth.canSee(undefined, m)),
      ['pub'],
    );

    expectMesh(() => auth.requireAdmin(`Bearer ${K2}`), 'FORBIDDEN', 'this API key may not change the repository');
    assert.equal(auth.requireAdmin(`Bearer ${K3}`)?.admin, true);
    expectMesh(() => auth.requireAdmin(undefined), 'UNAUTHENTICATED');
  });
});
