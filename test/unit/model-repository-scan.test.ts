// Repository scans: Triton's folder layout, version folders and policies,
// per-model load errors, config choice, ONNX-completed configs, and version
// resolution.
import assert from 'node:assert/strict';
import { cp, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  ConfigError,
  loadModel,
  loadRepository,
  type RepositoryModel,
  resolveVersion,
} from '@ge-mesh/model-repository';
import { encodeModel, GraphBuilder, makeModel } from '@ge-mesh/onnx';
import { MeshError } from '@ge-mesh/protocol';

const FIXTURES = fileURLToPath(new URL('../fixtures/repositories/', import.meta.url));
const MIXED = join(FIXTURES, 'mixed');

const versionsOf = (m: RepositoryModel | undefined) => m?.versions.map((v) => v.version);

async function meshError(p: Promise<unknown>): Promise<MeshError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof MeshError, `expected a MeshError, got ${String(e)}`);
    return e;
  }
  assert.fail('resolved without error');
}

describe('loadRepository: a repository with good and broken models', () => {
  it('loads every good model with the versions its policy serves, highest first', async () => {
    const repo = await loadRepository(MIXED);
    assert.equal(repo.dir, MIXED);
    assert.deepEqual(
      [...repo.models.keys()],
      ['all_versions', 'classifier_ort', 'custom_file', 'latest_two', 'specific', 'specific_missing', 'two_configs'],
    );
    // Default policy latest 1; 007, 0, v4 and 10a are not version folders.
    assert.deepEqual(versionsOf(repo.models.get('classifier_ort')), ['3']);
    // Numeric order (10 > 2); the file named 4 is not a folder.
    assert.deepEqual(versionsOf(repo.models.get('all_versions')), ['10', '2', '1']);
    assert.deepEqual(versionsOf(repo.models.get('latest_two')), ['3', '2']);
    assert.deepEqual(versionsOf(repo.models.get('specific')), ['3', '1']);
    // A listed version without its folder is reported in the model's warnings; the others load, as in Triton.
    const partial = repo.models.get('specific_missing');
    assert.deepEqual(versionsOf(partial), ['1']);
    assert.deepEqual(partial?.config.warnings, [
      `${join(MIXED, 'specific_missing', 'config.pbtxt')}:3:30: version_policy lists version 5, but there is no folder ${join(MIXED, 'specific_missing', '5')}; it is not served`,
    ]);
    assert.deepEqual(repo.models.get('custom_file')?.versions, [
      { version: '1', modelPath: join(MIXED, 'custom_file', '1', 'resnet50.onnx') },
    ]);
  });

  it('describes each model: folder, config file, config and model paths', async () => {
    const repo = await loadRepository(MIXED);
    const m = repo.models.get('classifier_ort');
    assert.ok(m);
    assert.equal(m.name, 'classifier_ort');
    assert.equal(m.dir, join(MIXED, 'classifier_ort'));
    assert.equal(m.configFile, join(MIXED, 'classifier_ort', 'config.pbtxt'));
    assert.equal(m.config.name, 'classifier_ort');
    assert.equal(m.config.runtime, 'ort');
    assert.deepEqual(m.config.tiers, [1, 2, 4, 8]);
    assert.deepEqual(m.versions, [{ version: '3', modelPath: join(MIXED, 'classifier_ort', '3', 'model.onnx') }]);
    assert.ok(Object.isFrozen(m));
    assert.ok(Object.isFrozen(m.versions));
  });

  it('reports each broken model with its own error, without stopping the others', async () => {
    const repo = await loadRepository(MIXED);
    assert.deepEqual(
      [...repo.errors.keys()],
      ['broken_syntax', 'missing_file', 'name_mismatch', 'no_config', 'no_versions', 'unreadable_model'],
    );
    const message = (name: string) => repo.errors.get(name)?.message;
    assert.equal(
      message('broken_syntax'),
      `${join(MIXED, 'broken_syntax', 'config.pbtxt')}:5:3: unknown field 'max_queue_delay' in ModelDynamicBatching (did you mean 'max_queue_delay_microseconds'?)`,
    );
    assert.equal(
      message('missing_file'),
      `${join(MIXED, 'missing_file', '1', 'model.onnx')}: model file not found: version 1 needs model.onnx; put it there, or set default_model_filename to the file's name`,
    );
    assert.equal(
      message('name_mismatch'),
      `${join(MIXED, 'name_mismatch', 'config.pbtxt')}:1:7: name 'renamed' does not match the model folder 'name_mismatch'; set name: "name_mismatch" or remove it`,
    );
    assert.equal(
      message('no_config'),
      `${join(MIXED, 'no_config', 'config.pbtxt')}: cannot read the model config; a model folder needs config.pbtxt (ENOENT)`,
    );
    assert.equal(
      message('no_versions'),
      `${join(MIXED, 'no_versions')}: no version to serve: put the model in a numbered folder, e.g. ${join(MIXED, 'no_versions', '1')}/ (folder names that are not numbers, or that start with 0, are ignored)`,
    );
    assert.match(
      message('unreadable_model') ?? '',
      new RegExp(
        `^${escapeRegExp(join(MIXED, 'unreadable_model', '1', 'model.onnx'))}: cannot read the model's inputs and outputs: .`,
      ),
    );
    const e = repo.errors.get('broken_syntax');
    assert.ok(e instanceof ConfigError);
    assert.deepEqual([e.kind, e.line, e.column, e.field], ['unknown_field', 5, 3, 'dynamic_batching.max_queue_delay']);
    assert.deepEqual(
      [...repo.errors.values()].map((x) => x.kind),
      ['unknown_field', 'io', 'invalid', 'io', 'io', 'io'],
    );
  });

  it('skips folders starting with "." and files at the top', async () => {
    const repo = await loadRepository(MIXED);
    assert.equal(repo.models.has('.hidden') || repo.errors.has('.hidden'), false);
    assert.equal(repo.models.has('README.txt') || repo.errors.has('README.txt'), false);
  });

  it('reads configs/<name>.pbtxt when modelConfigName names one, else config.pbtxt', async () => {
    const large = await loadRepository(MIXED, { modelConfigName: 'large' });
    const m = large.models.get('two_configs');
    assert.equal(m?.config.maxBatchSize, 16);
    assert.equal(m?.configFile, join(MIXED, 'two_configs', 'configs', 'large.pbtxt'));
    // Models without that file fall back to config.pbtxt.
    assert.equal(large.models.get('classifier_ort')?.config.maxBatchSize, 8);
    const plain = await loadModel(MIXED, 'two_configs', { modelConfigName: 'missing' });
    assert.equal(plain.config.maxBatchSize, 4);
  });

  it('refuses a repository folder that does not exist', async () => {
    const dir = join(FIXTURES, 'no-such-repository');
    await assert.rejects(loadRepository(dir), (e: unknown) => {
      assert.ok(e instanceof ConfigError);
      assert.equal(e.message, `${dir}: cannot read the model repository folder (ENOENT)`);
      return true;
    });
  });
});

describe('loadRepository: the GE backend example', () => {
  it('loads the npu_ge model with its gears as tiers', async () => {
    const repo = await loadRepository(join(FIXTURES, 'ge'));
    assert.deepEqual([...repo.errors.keys()], []);
    const m = repo.models.get('resnet_npu_ge');
    assert.equal(m?.config.runtime, 'ge');
    assert.deepEqual(m?.config.tiers, [1, 2, 4, 8, 16]);
    assert.equal(m?.config.parameters.get('device_ids'), '0,1');
    assert.deepEqual(versionsOf(m), ['1']);
  });
});

describe('loadModel', () => {
  it('loads one model by name', async () => {
    const m = await loadModel(MIXED, 'latest_two');
    assert.deepEqual(versionsOf(m), ['3', '2']);
    assert.deepEqual(m.config.versionPolicy, { kind: 'latest', numVersions: 2 });
  });

  it('throws MODEL_NOT_FOUND for a name that is not a model folder', async () => {
    for (const name of ['nope', 'README.txt', '../mixed', 'classifier_ort/1', '', '..']) {
      const e = await meshError(loadModel(MIXED, name));
      assert.equal(e.code, 'MODEL_NOT_FOUND', name);
      assert.equal(e.message, `Request for unknown model: '${name}' is not found`);
    }
  });

  it('throws the ConfigError of a broken model', async () => {
    await assert.rejects(loadModel(MIXED, 'no_versions'), (e: unknown) => e instanceof ConfigError && e.kind === 'io');
  });
});

describe('resolveVersion', () => {
  let model: RepositoryModel;
  before(async () => {
    model = await loadModel(MIXED, 'all_versions');
  });

  it('serves the highest version when none is asked for', () => {
    assert.equal(resolveVersion(model).version, '10');
    assert.equal(resolveVersion(model, '').version, '10');
  });

  it('serves the version asked for, read as a number', () => {
    assert.deepEqual(resolveVersion(model, '2'), {
      version: '2',
      modelPath: join(MIXED, 'all_versions', '2', 'model.onnx'),
    });
    assert.equal(resolveVersion(model, '1').version, '1');
    assert.equal(resolveVersion(model, '010').version, '10');
  });

  it('throws MODEL_VERSION_NOT_FOUND with Triton’s message for a version not served', () => {
    for (const v of ['3', '0', 'latest', '-1']) {
      assert.throws(
        () => resolveVersion(model, v),
        (e: unknown) =>
          e instanceof MeshError &&
          e.code === 'MODEL_VERSION_NOT_FOUND' &&
          e.status === 404 &&
          e.message === `Request for unknown model: 'all_versions' version ${v} is not found`,
      );
    }
  });

  it('does not serve a version the policy leaves out', async () => {
    const specific = await loadModel(MIXED, 'specific');
    assert.equal(resolveVersion(specific, '3').version, '3');
    assert.throws(() => resolveVersion(specific, '2'), { code: 'MODEL_VERSION_NOT_FOUND' });
  });
});

describe('loadRepository: inputs and outputs read from the ONNX file', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ge-mesh-repo-'));
    await cp(join(FIXTURES, 'auto-io'), dir, { recursive: true });
    // Version 1 and 2 differ in their image size, so the test sees which file was read.
    for (const [version, size] of [
      ['1', 16],
      ['2', 32],
    ] as const) {
      const g = new GraphBuilder('detector');
      const image = g.input('image', 'FP32', ['batch', 3, size, size]);
      g.output(g.op('Relu', [image], {}, 'boxes'), 'FP32', ['batch', 3, size, size]);
      await mkdir(join(dir, 'detector', version), { recursive: true });
      await writeFile(join(dir, 'detector', version, 'model.onnx'), encodeModel(makeModel(g.build())));
    }
    // A model folder reached through a symbolic link loads like any other.
    await symlink(join(dir, 'detector'), join(dir, 'detector_link'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('fills the config from the highest served version’s model file', async () => {
    const repo = await loadRepository(dir);
    assert.deepEqual([...repo.errors.keys()], ['detector_link']);
    const m = repo.models.get('detector');
    assert.deepEqual(m?.config.input, [{ name: 'image', dataType: 'FP32', dims: [3, 32, 32], optional: false }]);
    assert.deepEqual(m?.config.output, [{ name: 'boxes', dataType: 'FP32', dims: [3, 32, 32], optional: false }]);
    assert.deepEqual(m?.config.tiers, [1, 2, 4, 8]);
    assert.deepEqual(versionsOf(m), ['2']);
    // The link's folder is named detector_link, but its config says name: "detector".
    assert.equal(
      repo.errors.get('detector_link')?.message,
      `${join(dir, 'detector_link', 'config.pbtxt')}:2:7: name 'detector' does not match the model folder 'detector_link'; set name: "detector_link" or remove it`,
    );
  });
});

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

describe('loadModel: label files', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gemesh-labels-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  /** A model `name` whose output `y` names `labelFile`; `labels` is written to `labels.txt` when given. */
  async function model(name: string, labelFile: string, labels?: string): Promise<void> {
    await mkdir(join(dir, name, '1'), { recursive: true });
    await writeFile(join(dir, name, '1', 'model.onnx'), 'not read');
    await writeFile(
      join(dir, name, 'config.pbtxt'),
      `backend: "onnxruntime"\nmax_batch_size: 2\ninput [{ name: "x", data_type: TYPE_FP32, dims: [4] }]\n` +
        `output [{ name: "y", data_type: TYPE_FP32, dims: [3], label_filename: "${labelFile}" }]\n`,
    );
    if (labels !== undefined) await writeFile(join(dir, name, 'labels.txt'), labels);
  }

  it('reads one label per line, the class index being the line number, as Triton does', async () => {
    await model('good', 'labels.txt', 'cat\ndog\n\nfish\n');
    const m = await loadModel(dir, 'good');
    assert.deepEqual(m.labels?.get('y'), ['cat', 'dog', '', 'fish']);
  });

  it('fails the load when the file is missing or outside the model folder', async () => {
    await model('missing', 'labels.txt');
    const missing = await meshError(loadModel(dir, 'missing'));
    assert.ok(missing instanceof ConfigError);
    assert.match(missing.message, /labels\.txt: cannot read the labels of output 'y' \(label_filename\) \(ENOENT\)$/);
    await model('outside', '../good/labels.txt', 'a\n');
    const outside = await meshError(loadModel(dir, 'outside'));
    assert.match(
      outside.message,
      /label file path '\.\.\/good\/labels\.txt' of output 'y' is outside the model's folder$/,
    );
  });
});

describe('loadModel: the GE backend finds its model file by extension', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gemesh-gefile-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  async function model(name: string, backend: string, files: string[]): Promise<void> {
    await mkdir(join(dir, name, '1'), { recursive: true });
    for (const f of files) await writeFile(join(dir, name, '1', f), 'not read');
    await writeFile(
      join(dir, name, 'config.pbtxt'),
      `backend: "${backend}"\nmax_batch_size: 2\ninput [{ name: "x", data_type: TYPE_FP32, dims: [4] }]\n` +
        `output [{ name: "y", data_type: TYPE_FP32, dims: [4] }]\n`,
    );
  }

  it('takes the first *.onnx of the folder for npu_ge, as that backend does; onnxruntime still needs model.onnx', async () => {
    await model('ge_named', 'npu_ge', ['notes.txt', 'resnet18-v1-7.onnx', 'z-other.onnx']);
    assert.equal(
      (await loadModel(dir, 'ge_named')).versions[0]?.modelPath,
      join(dir, 'ge_named', '1', 'resnet18-v1-7.onnx'),
    );
    await model('ort_named', 'onnxruntime', ['resnet18-v1-7.onnx']);
    const e = await meshError(loadModel(dir, 'ort_named'));
    assert.match(e.message, /model file not found: version 1 needs model\.onnx/);
  });
});

describe('loadModel: a batching config over a model with a fixed first dim', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gemesh-fixed-batch-'));
    const g = new GraphBuilder('fixed');
    const x = g.input('x', 'FP32', [1, 4]);
    g.output(g.op('Relu', [x], {}, 'y'), 'FP32', [1, 4]);
    for (const [name, backend] of [
      ['fixed_ort', 'onnxruntime'],
      ['fixed_ge', 'npu_ge'],
    ] as const) {
      await mkdir(join(dir, name, '1'), { recursive: true });
      await writeFile(join(dir, name, '1', 'model.onnx'), encodeModel(makeModel(g.build())));
      await writeFile(join(dir, name, 'config.pbtxt'), `backend: "${backend}"\nmax_batch_size: 4\n`);
    }
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('is refused for onnxruntime, as its Triton backend refuses it; GE compiles each tier with its own shape', async () => {
    const e = await meshError(loadModel(dir, 'fixed_ort'));
    assert.match(
      e.message,
      /model input 'x' has a fixed first dim \(1\), so the model takes no batch of rows, but max_batch_size is 4; set max_batch_size: 0, or export the model with a variable first dim$/,
    );
    const ge = await loadModel(dir, 'fixed_ge');
    assert.deepEqual(ge.config.input, [{ name: 'x', dataType: 'FP32', dims: [4], optional: false }]);
  });
});

describe('loadModel: default_model_filename names the file its inputs and outputs are read from', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gemesh-named-file-'));
    const g = new GraphBuilder('named');
    const x = g.input('x', 'FP32', ['batch', 4]);
    g.output(g.op('Relu', [x], {}, 'y'), 'FP32', ['batch', 4]);
    await mkdir(join(dir, 'named', '1'), { recursive: true });
    await writeFile(join(dir, 'named', '1', 'net.onnx'), encodeModel(makeModel(g.build())));
    await writeFile(
      join(dir, 'named', 'config.pbtxt'),
      'backend: "onnxruntime"\nmax_batch_size: 4\ndefault_model_filename: "net.onnx"\n',
    );
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('reads the named file, not model.onnx', async () => {
    const m = await loadModel(dir, 'named');
    assert.deepEqual(m.config.input, [{ name: 'x', dataType: 'FP32', dims: [4], optional: false }]);
    assert.equal(m.versions[0]?.modelPath, join(dir, 'named', '1', 'net.onnx'));
  });
});
