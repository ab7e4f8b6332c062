// config.pbtxt → ModelConfig: runtime mapping, Triton's defaults and
// validation, inputs/outputs read from ONNX files, tiers, freezing.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { describe, it } from 'node:test';
import { ConfigError, deriveTiers, type ModelConfig, parseModelConfig, priorityLevel } from '@ge-mesh/model-repository';
import { ElemType, encodeModel, GraphBuilder, makeModel } from '@ge-mesh/onnx';

const FILE = 'models/tiny/config.pbtxt';
const IO =
  'input { name: "x" data_type: TYPE_FP32 dims: [ 4 ] }\noutput { name: "y" data_type: TYPE_FP32 dims: [ 4 ] }\n';
const fixture = (path: string) => new URL(`../fixtures/repositories/${path}`, import.meta.url);

const parse = (text: string, modelBytes?: Uint8Array): ModelConfig =>
  parseModelConfig(text, {
    file: FILE,
    modelName: 'tiny',
    ...(modelBytes ? { modelBytes, modelFile: 'models/tiny/1/model.onnx' } : {}),
  });

function configError(text: string, modelBytes?: Uint8Array): ConfigError {
  try {
    parse(text, modelBytes);
  } catch (e) {
    assert.ok(e instanceof ConfigError, `expected a ConfigError, got ${String(e)}`);
    return e;
  }
  assert.fail('loaded without error');
}

/** image [batch,3,8,8] → Relu → out; scale [batch] → Identity → scaled; w is both an input and an initializer (a constant). */
function detectorOnnx(): Uint8Array {
  const g = new GraphBuilder('detector');
  const image = g.input('image', 'FP32', ['batch', 3, 8, 8]);
  const scale = g.input('scale', 'FP16', ['batch']);
  g.input('w', 'FP32', [3]);
  g.floats('w', [3], [1, 2, 3]);
  g.output(g.op('Relu', [image], {}, 'out'), 'FP32', ['batch', 3, 8, 8]);
  g.output(g.op('Identity', [scale], {}, 'scaled'), 'FP16', ['batch']);
  return encodeModel(makeModel(g.build()));
}

describe('parseModelConfig: the GE backend example style', () => {
  it('reads an npu_ge config with device_ids, graph.ge.* and session.* keys and commented-out blocks', async () => {
    const text = await readFile(fixture('ge/resnet_npu_ge/config.pbtxt'), 'utf8');
    const c = parseModelConfig(text, { file: 'ge/resnet_npu_ge/config.pbtxt', modelName: 'resnet_npu_ge' });
    assert.equal(c.name, 'resnet_npu_ge');
    assert.equal(c.backend, 'npu_ge');
    assert.equal(c.platform, 'npu_ge');
    assert.equal(c.runtime, 'ge');
    assert.equal(c.maxBatchSize, 16);
    assert.deepEqual(c.input, [
      { name: 'image', dataType: 'FP32', dims: [3, 224, 224], optional: false, format: 'FORMAT_NCHW' },
    ]);
    assert.deepEqual(c.output, [
      { name: 'probabilities', dataType: 'FP32', dims: [1000], optional: false, labelFilename: 'labels.txt' },
    ]);
    assert.deepEqual(c.instanceGroup, [{ name: 'resnet_npu_ge_0', kind: 'KIND_AUTO', count: 2, gpus: [] }]);
    assert.deepEqual(
      [...c.parameters],
      [
        ['device_ids', '0,1'],
        ['device_exec_blocks', '4'],
        ['graph.ge.inputShape', 'image:-1,3,224,224'],
        ['graph.ge.dynamicDims', '1;2;4;8;16'],
        ['graph.ge.dynamicNodeType', '1'],
        ['session.ge.exec.precision_mode_v2', 'origin'],
      ],
    );
    // The gears win over preferred_batch_size [4, 8].
    assert.deepEqual(c.tiers, [1, 2, 4, 8, 16]);
    assert.deepEqual(c.dynamicBatching, {
      preferredBatchSize: [4, 8],
      preferredBatchSizeListed: true,
      maxQueueDelayMicroseconds: 2000,
      preserveOrdering: false,
      priorityLevels: 0,
      defaultPriorityLevel: 0,
      defaultQueuePolicy: {
        timeoutAction: 'REJECT',
        defaultTimeoutMicroseconds: 0,
        allowTimeoutOverride: false,
        maxQueueSize: 0,
      },
      priorityQueuePolicy: new Map(),
    });
    assert.equal(c.defaultModelFilename, 'model.onnx');
    assert.deepEqual(c.versionPolicy, { kind: 'latest', numVersions: 1 });
    // None of the commented-out keys is read.
    assert.equal(c.parameters.has('static_model'), false);
    assert.equal(c.parameters.has('profiling'), false);
    assert.equal(c.parameters.has('ge.aicoreNum'), false);
  });
});

describe('parseModelConfig: defaults and runtime', () => {
  it('fills Triton defaults for a minimal ORT config', () => {
    const c = parse(`backend: "onnxruntime"\nmax_batch_size: 8\n${IO}dynamic_batching { }`);
    assert.equal(c.name, 'tiny');
    assert.equal(c.runtime, 'ort');
    // Completed as Triton's loader completes it (metadata and /config report it).
    assert.equal(c.platform, 'onnxruntime_onnx');
    assert.equal(c.backend, 'onnxruntime');
    assert.deepEqual(c.warmup, []);
    assert.equal(c.responseCache, false);
    assert.deepEqual(c.instanceGroup, [{ name: 'tiny', kind: 'KIND_AUTO', count: 1, gpus: [] }]);
    // Triton fills an empty preferred list with max_batch_size.
    assert.deepEqual(c.dynamicBatching?.preferredBatchSize, [8]);
    assert.equal(c.dynamicBatching?.maxQueueDelayMicroseconds, 0);
    assert.deepEqual(c.tiers, [1, 2, 4, 8]);
    assert.deepEqual(c.input, [{ name: 'x', dataType: 'FP32', dims: [4], optional: false }]);
    assert.deepEqual(c.versionPolicy, { kind: 'latest', numVersions: 1 });
  });

  it('maps each backend and platform name to its runtime', () => {
    const runtimeOf = (line: string) => parse(`${line}\n${IO}`).runtime;
    assert.equal(runtimeOf('backend: "onnxruntime"'), 'ort');
    assert.equal(runtimeOf('platform: "onnxruntime_onnx"'), 'ort');
    assert.equal(runtimeOf('platform: "onnxruntime_onnx" backend: "onnxruntime"'), 'ort');
    assert.equal(runtimeOf('backend: "npu_ge"'), 'ge');
    assert.equal(runtimeOf('backend: "ge"'), 'ge');
    const fromPlatform = parse(`platform: "onnxruntime_onnx"\n${IO}`);
    assert.equal(fromPlatform.platform, 'onnxruntime_onnx');
    assert.equal(fromPlatform.backend, 'onnxruntime');
  });

  it('without dynamic_batching has no dynamicBatching and powers-of-two tiers', () => {
    const c = parse(`backend: "onnxruntime"\nmax_batch_size: 12\n${IO}`);
    assert.equal(c.dynamicBatching, undefined);
    assert.equal('dynamicBatching' in c, false);
    assert.deepEqual(c.tiers, [1, 2, 4, 8, 12]);
  });

  it('reads instance groups with Triton defaults for name and count', () => {
    const c = parse(
      `backend: "onnxruntime"\n${IO}instance_group [ { count: 3 kind: KIND_CPU }, { name: "npu" kind: KIND_GPU gpus: [0, 1] count: 0 }, { kind: KIND_MODEL count: -2 } ]`,
    );
    assert.deepEqual(c.instanceGroup, [
      { name: 'tiny_0', kind: 'KIND_CPU', count: 3, gpus: [] },
      { name: 'npu', kind: 'KIND_GPU', count: 1, gpus: [0, 1] },
      { name: 'tiny_2', kind: 'KIND_MODEL', count: 1, gpus: [] },
    ]);
  });

  it('reads every dynamic_batching field and queue policy', () => {
    const c = parse(
      [
        'backend: "onnxruntime"',
        'max_batch_size: 16',
        IO,
        'dynamic_batching {',
        '  preferred_batch_size: [ 8, 2, 8 ]',
        '  max_queue_delay_microseconds: 500',
        '  priority_levels: 3',
        '  default_priority_level: 2',
        '  default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 100 allow_timeout_override: true max_queue_size: 7 }',
        '  priority_queue_policy { key: 3 value { max_queue_size: 1 } }',
        '  priority_queue_policy { key: 1 value { timeout_action: REJECT default_timeout_microseconds: 50 } }',
        '}',
      ].join('\n'),
    );
    assert.deepEqual(c.dynamicBatching, {
      preferredBatchSize: [2, 8],
      preferredBatchSizeListed: true,
      maxQueueDelayMicroseconds: 500,
      preserveOrdering: false,
      priorityLevels: 3,
      defaultPriorityLevel: 2,
      defaultQueuePolicy: {
        timeoutAction: 'DELAY',
        defaultTimeoutMicroseconds: 100,
        allowTimeoutOverride: true,
        maxQueueSize: 7,
      },
      priorityQueuePolicy: new Map([
        [1, { timeoutAction: 'REJECT', defaultTimeoutMicroseconds: 50, allowTimeoutOverride: false, maxQueueSize: 0 }],
        [3, { timeoutAction: 'REJECT', defaultTimeoutMicroseconds: 0, allowTimeoutOverride: false, maxQueueSize: 1 }],
      ]),
    });
    assert.deepEqual([...(c.dynamicBatching?.priorityQueuePolicy.keys() ?? [])], [1, 3]);
    assert.deepEqual(c.tiers, [2, 8, 16]);
  });

  it('allows preserve_ordering with one priority level and DELAY without a timeout', () => {
    const c = parse(
      `backend: "onnxruntime"\nmax_batch_size: 4\n${IO}dynamic_batching { preserve_ordering: true priority_levels: 1 default_priority_level: 1 default_queue_policy { timeout_action: DELAY } }`,
    );
    assert.equal(c.dynamicBatching?.preserveOrdering, true);
  });

  it('reads tensor options: reshape, optional, format, ragged batches, label files, -1 dims', () => {
    const c = parse(
      [
        'backend: "onnxruntime"',
        'max_batch_size: 4',
        'input { name: "ids" data_type: TYPE_INT64 dims: [ -1 ] allow_ragged_batch: true }',
        'input { name: "mask" data_type: TYPE_BOOL dims: [ 1 ] reshape { shape: [ ] } optional: true }',
        'input { name: "img" data_type: TYPE_UINT8 dims: [ 2, 2, 3 ] format: FORMAT_NHWC reshape { shape: [ 4, 3 ] } }',
        'input { name: "text" data_type: TYPE_STRING dims: [ 1 ] format: FORMAT_NONE }',
        'output { name: "cls" data_type: TYPE_BF16 dims: [ 10 ] label_filename: "labels.txt" }',
      ].join('\n'),
    );
    assert.deepEqual(c.input, [
      { name: 'ids', dataType: 'INT64', dims: [-1], optional: false, allowRaggedBatch: true },
      { name: 'mask', dataType: 'BOOL', dims: [1], optional: true, reshape: [] },
      { name: 'img', dataType: 'UINT8', dims: [2, 2, 3], optional: false, reshape: [4, 3], format: 'FORMAT_NHWC' },
      { name: 'text', dataType: 'BYTES', dims: [1], optional: false },
    ]);
    assert.deepEqual(c.output, [
      { name: 'cls', dataType: 'BF16', dims: [10], optional: false, labelFilename: 'labels.txt' },
    ]);
  });

  it('refuses TensorRT-only tensor flags as Triton does on other platforms; warns that ragged batching is not used', () => {
    const io = (flag: string) =>
      `backend: "onnxruntime"\nmax_batch_size: 4\ninput [{ name: "x", data_type: TYPE_FP32, dims: [4] ${flag} }]\noutput [{ name: "y", data_type: TYPE_FP32, dims: [4] }]`;
    assert.throws(
      () => parse(io('is_shape_tensor: true')),
      (e: unknown) =>
        e instanceof ConfigError && e.field === 'input[0].is_shape_tensor' && /TensorRT feature/.test(e.detail),
    );
    assert.throws(
      () => parse(io('is_non_linear_format_io: true')),
      (e: unknown) => e instanceof ConfigError && e.field === 'input[0].is_non_linear_format_io',
    );
    assert.deepEqual(parse(io('allow_ragged_batch: true')).warnings, [
      `${FILE}:3:53: input[0].allow_ragged_batch ignored: requests of different shapes are batched apart (or padded to a gear), never concatenated`,
    ]);
  });

  it('takes a reshape whose runs between variable-size dims hold the same elements, as Triton does', () => {
    const c = parse(
      'backend: "onnxruntime"\ninput { name: "x" data_type: TYPE_FP32 dims: [ 2, 4, -1, 6 ] reshape { shape: [ 8, -1, 1, 6 ] } }\noutput { name: "y" data_type: TYPE_FP32 dims: [ 1 ] }',
    );
    assert.deepEqual(c.input[0]?.reshape, [8, -1, 1, 6]);
  });

  it('reads version policies', () => {
    const policy = (vp: string) => parse(`backend: "onnxruntime"\n${IO}${vp}`).versionPolicy;
    assert.deepEqual(policy(''), { kind: 'latest', numVersions: 1 });
    // Present but empty: no policy chosen, which Triton serves as all (latest 1 fills in only when absent).
    assert.deepEqual(policy('version_policy { }'), { kind: 'all' });
    assert.deepEqual(policy('version_policy { latest { num_versions: 3 } }'), { kind: 'latest', numVersions: 3 });
    assert.deepEqual(policy('version_policy { all { } }'), { kind: 'all' });
    assert.deepEqual(policy('version_policy { specific { versions: [ 2, 10, 2 ] } }'), {
      kind: 'specific',
      versions: [10, 2],
    });
  });

  it('refuses a field that changes answers at its line, in file order; fields read differently are listed', async () => {
    const text = await readFile(fixture('configs/all-fields.pbtxt'), 'utf8');
    const opts = { file: 'all-fields.pbtxt', modelName: 'all_fields' };
    assert.throws(
      () => parseModelConfig(text, opts),
      (e: unknown) =>
        e instanceof ConfigError &&
        e.field === 'batch_input' &&
        e.line === 39 &&
        e.message ===
          'all-fields.pbtxt:39:1: batch_input is not supported: batch inputs (ragged batching) are not assembled by the mesh; remove batch_input',
    );
    // Each refused block in turn, with its exact message.
    const refusals: Array<[string, string, string]> = [
      [
        'batch_output { target_name: [ "y" ] }',
        'batch_output',
        'batch outputs (scatter by input shape) are not supported; remove batch_output',
      ],
      [
        'model_operations { op_library_filename: [ "x.so" ] }',
        'model_operations',
        'custom operator libraries are not loaded; build the operators into the model or remove model_operations',
      ],
      [
        'model_repository_agents { agents [ { name: "checksum" } ] }',
        'model_repository_agents',
        'repository agents (checksums, decryption) are not run; remove model_repository_agents',
      ],
      [
        'model_transaction_policy { decoupled: true }',
        'model_transaction_policy',
        'decoupled models (several responses per request) are not served; set decoupled: false',
      ],
      [
        'instance_group [ { count: 1 rate_limiter { priority: 1 } } ]',
        'instance_group[0].rate_limiter',
        "the rate limiter is not implemented; bound a model's work with instance_group.count and max_queue_size instead",
      ],
      [
        'instance_group [ { count: 1 passive: true } ]',
        'instance_group[0].passive',
        'passive instances are not supported; remove passive: true',
      ],
    ];
    for (const [block, field, say] of refusals) {
      assert.throws(
        () => parse(`backend: "onnxruntime"\nmax_batch_size: 2\n${IO}${block}\n`),
        (e: unknown) =>
          e instanceof ConfigError && e.field === field && e.message.endsWith(`${field} is not supported: ${say}`),
        block,
      );
    }
    // Their harmless forms load: caching off, not decoupled.
    assert.doesNotThrow(() =>
      parse(
        `backend: "onnxruntime"\n${IO}response_cache { enable: false }\nmodel_transaction_policy { decoupled: false }\n`,
      ),
    );

    // Without the refused blocks everything else loads, and each field read differently is one warning line.
    const kept = text
      .replace(/batch_input \[[\s\S]*?\} \]\n/, '')
      .replace(/batch_output \{.*\}\n/, '')
      .replace(/ *rate_limiter \{.*\}\n/, '')
      .replace(/model_operations \{.*\}\n/, '')
      .replace(/model_repository_agents \{.*\}\n/, '');
    const c = parseModelConfig(kept, opts);
    assert.equal(c.responseCache, true);
    assert.equal(c.runtime, 'ort');
    assert.equal(c.platform, 'onnxruntime_onnx');
    assert.equal(c.defaultModelFilename, 'detector.onnx');
    assert.deepEqual(c.tiers, [4, 8]);
    assert.deepEqual(c.versionPolicy, { kind: 'specific', versions: [2, 1] });
    assert.deepEqual(c.instanceGroup, [
      { name: 'cpu_group', kind: 'KIND_CPU', count: 2, gpus: [] },
      { name: 'all_fields_1', kind: 'KIND_GPU', count: 1, gpus: [0, 1] },
    ]);
    assert.deepEqual([...c.parameters], [['threads', '4']]);
    assert.deepEqual(c.raw.model_transaction_policy as object, { decoupled: false });
    assert.deepEqual(c.warnings, [
      'all-fields.pbtxt:39:1: optimization ignored: its accelerators and priorities are for other backends',
      'all-fields.pbtxt:77:5: instance_group[0].host_policy ignored: lanes run on the devices their worker leases',
      'all-fields.pbtxt:79:5: instance_group[1].kind read as KIND_AUTO: each instance is a lane on every device its workers lease (NPU streams or CPU lanes)',
      "all-fields.pbtxt:79:20: instance_group[1].gpus ignored: the devices a model runs on are its workers' leases (and the GE backend's device_ids parameter)",
      'all-fields.pbtxt:79:35: instance_group[1].profile ignored (TensorRT profiles)',
      'all-fields.pbtxt:79:52: instance_group[1].secondary_devices ignored (NVDLA devices)',
      'all-fields.pbtxt:82:1: cc_model_filenames ignored: default_model_filename is always read',
      'all-fields.pbtxt:83:1: metric_tags ignored: metrics carry model and version labels',
      "all-fields.pbtxt:96:1: model_metrics ignored: histograms use the mesh's own buckets",
    ]);
  });

  it('refuses sequence_batching, and ensemble_scheduling outside an ensemble, saying what to do instead', async () => {
    const refused = async (file: string, name: string) => {
      try {
        parseModelConfig(await readFile(fixture(`configs/${file}`), 'utf8'), { file, modelName: name });
      } catch (e) {
        return (e as Error).message;
      }
      return 'loaded';
    };
    assert.equal(
      await refused('sequence.pbtxt', 'seq'),
      'sequence.pbtxt:6:1: sequence_batching is not supported: GE Mesh has no sequence batcher, so a stateful model would lose its sequence state; serve a stateless model with dynamic_batching instead',
    );
    assert.equal(
      await refused('ensemble.pbtxt', 'ens'),
      'ensemble.pbtxt:6:1: ensemble_scheduling needs platform: "ensemble" (and no backend)',
    );
  });

  it('maps a request priority to a level as Triton does (one rule for gateway and batchers)', () => {
    const db = parse(
      `backend: "onnxruntime"\nmax_batch_size: 2\n${IO}dynamic_batching { priority_levels: 3 default_priority_level: 2 }`,
    ).dynamicBatching;
    assert.deepEqual(
      [0, 1, 2, 3, 4, 99].map((p) => priorityLevel(db, p)),
      [2, 1, 2, 3, 2, 2],
    );
    assert.equal(priorityLevel(undefined, 5), 0, 'no levels: level 0');
  });

  it('freezes the config, its maps and its raw message', () => {
    const c = parse(
      `backend: "onnxruntime"\nmax_batch_size: 2\n${IO}dynamic_batching { priority_levels: 1 default_priority_level: 1 priority_queue_policy { key: 1 value { } } }\nparameters { key: "a" value { string_value: "b" } }`,
    );
    assert.ok(Object.isFrozen(c));
    assert.ok(Object.isFrozen(c.input[0]?.dims));
    assert.ok(Object.isFrozen(c.raw));
    assert.ok(Object.isFrozen((c.raw.input as object[])[0]));
    assert.ok(Object.isFrozen(c.dynamicBatching?.defaultQueuePolicy));
    assert.throws(() => (c.parameters as Map<string, string>).set('a', 'c'), TypeError);
    assert.throws(() => (c.parameters as Map<string, string>).delete('a'), TypeError);
    const policies = c.dynamicBatching?.priorityQueuePolicy;
    assert.ok(policies);
    assert.throws(() => (policies as Map<number, unknown>).clear(), TypeError);
    assert.equal(c.parameters.get('a'), 'b');
    assert.throws(() => {
      (c as { maxBatchSize: number }).maxBatchSize = 3;
    }, TypeError);
  });
});

describe('parseModelConfig: tiers', () => {
  const gears = (maxBatchSize: number, shape: string, dims: string, extra = '') =>
    parse(
      `backend: "npu_ge"\nmax_batch_size: ${maxBatchSize}\n${IO}${extra}parameters { key: "graph.ge.inputShape" value { string_value: "${shape}" } }\nparameters { key: "graph.ge.dynamicDims" value { string_value: "${dims}" } }`,
    ).tiers;

  it('(a) takes GE batch gears, sorted and unique, over preferred sizes', () => {
    assert.deepEqual(gears(8, 'x:-1,4', '8;1;2;4;2'), [1, 2, 4, 8]);
    assert.deepEqual(gears(6, 'x:-1,4', ' 1 ; 3 ; 6 ; '), [1, 3, 6]);
    assert.deepEqual(gears(4, 'x:-1,4', '1;2;4;8'), [1, 2, 4, 8]);
    assert.deepEqual(gears(4, 'x:-1,4', '2;4', 'dynamic_batching { preferred_batch_size: [ 1, 3 ] }\n'), [2, 4]);
  });

  it('(a) takes gears that give several inputs the same batch size', () => {
    const c = parse(
      [
        'backend: "npu_ge"',
        'max_batch_size: 4',
        'input { name: "ids" data_type: TYPE_INT64 dims: [ 16 ] }',
        'input { name: "mask" data_type: TYPE_INT64 dims: [ 16 ] }',
        'output { name: "y" data_type: TYPE_FP32 dims: [ 2 ] }',
        'parameters { key: "graph.ge.inputShape" value { string_value: "ids:-1,16;mask:-1,16" } }',
        'parameters { key: "graph.ge.dynamicDims" value { string_value: "1,1;4,4;2,2" } }',
      ].join('\n'),
    );
    assert.deepEqual(c.tiers, [1, 2, 4]);
  });

  it('gears over non-batch dims are shape gears: the tiers are their batch sizes', () => {
    const shapeGears = (maxBatchSize: number, shape: string, dims: string, extra = '') =>
      parse(
        `backend: "npu_ge"\nmax_batch_size: ${maxBatchSize}\ninput { name: "x" data_type: TYPE_FP32 dims: [ -1 ] }\noutput { name: "y" data_type: TYPE_FP32 dims: [ 4 ] }\n${extra}parameters { key: "graph.ge.inputShape" value { string_value: "${shape}" } }\nparameters { key: "graph.ge.dynamicDims" value { string_value: "${dims}" } }`,
      );
    assert.deepEqual(shapeGears(8, 'x:-1,-1', '1,2;8,4;4,4').tiers, [1, 4, 8]);
    assert.deepEqual(shapeGears(0, 'x:-1', '2;4').tiers, [1]);
    assert.deepEqual(
      shapeGears(8, 'x:-1,-1', '8,2;8,4', 'dynamic_batching { preferred_batch_size: [ 3 ] }\n').tiers,
      [8],
    );
    assert.equal(shapeGears(8, 'x:-1,-1', '8,2;8,4').gears?.gears.length, 2);
  });

  it('(b) preferred sizes plus max_batch_size', () => {
    const tiers = (max: number, preferred: string) =>
      parse(
        `backend: "onnxruntime"\nmax_batch_size: ${max}\n${IO}dynamic_batching { preferred_batch_size: [ ${preferred} ] }`,
      ).tiers;
    assert.deepEqual(tiers(8, '2, 6'), [2, 6, 8]);
    assert.deepEqual(tiers(8, '8, 4, 4'), [4, 8]);
    assert.deepEqual(tiers(16, '1'), [1, 16]);
  });

  it('(c) powers of two below max_batch_size plus max_batch_size; [1] without batching', () => {
    const tiers = (max: number) => parse(`backend: "onnxruntime"\nmax_batch_size: ${max}\n${IO}`).tiers;
    assert.deepEqual(tiers(0), [1]);
    assert.deepEqual(tiers(1), [1]);
    assert.deepEqual(tiers(2), [1, 2]);
    assert.deepEqual(tiers(12), [1, 2, 4, 8, 12]);
    assert.deepEqual(tiers(64), [1, 2, 4, 8, 16, 32, 64]);
    assert.deepEqual(tiers(100), [1, 2, 4, 8, 16, 32, 64, 100]);
    // Without a batch dim, graph.ge.inputShape gives whole shapes: a leading -1 is a shape gear's dim.
    assert.throws(
      () => gears(0, 'x:-1,4', '1;2'),
      /'graph.ge.inputShape' gives 'x' 2 dims, but its config shape \[4\] has 1/,
    );
  });

  it('deriveTiers is usable on its own', () => {
    assert.deepEqual(
      deriveTiers({ maxBatchSize: 32, preferredBatchSize: [], parameters: new Map(), inputNames: ['x'] }),
      [1, 2, 4, 8, 16, 32],
    );
  });
});

describe('parseModelConfig: inputs and outputs from the ONNX file', () => {
  it('reads both from the model, dropping the batch dim when max_batch_size > 0', () => {
    const c = parse('backend: "npu_ge"\nmax_batch_size: 8', detectorOnnx());
    // w is an initializer too, so it is a constant, not a request input.
    assert.deepEqual(c.input, [
      { name: 'image', dataType: 'FP32', dims: [3, 8, 8], optional: false },
      { name: 'scale', dataType: 'FP16', dims: [1], optional: false, reshape: [] },
    ]);
    assert.deepEqual(c.output, [
      { name: 'out', dataType: 'FP32', dims: [3, 8, 8], optional: false },
      { name: 'scaled', dataType: 'FP16', dims: [1], optional: false, reshape: [] },
    ]);
    assert.deepEqual(c.tiers, [1, 2, 4, 8]);
  });

  it('keeps the full shape when max_batch_size is 0', () => {
    const c = parse('backend: "onnxruntime"', detectorOnnx());
    assert.deepEqual(
      c.input.map((t) => [t.name, t.dims]),
      [
        ['image', [-1, 3, 8, 8]],
        ['scale', [-1]],
      ],
    );
    assert.deepEqual(c.tiers, [1]);
  });

  it('fills only the side the config leaves out', () => {
    const c = parse(
      'backend: "onnxruntime"\nmax_batch_size: 2\ninput { name: "image" data_type: TYPE_FP32 dims: [ 3, -1, -1 ] }',
      detectorOnnx(),
    );
    assert.deepEqual(c.input, [{ name: 'image', dataType: 'FP32', dims: [3, -1, -1], optional: false }]);
    assert.deepEqual(
      c.output.map((t) => t.name),
      ['out', 'scaled'],
    );
    // raw stays what the file says.
    assert.equal(c.raw.output, undefined);
  });

  it('checks graph.ge.inputShape names against the inputs read from the model', () => {
    const e = configError(
      'backend: "npu_ge"\nmax_batch_size: 8\nparameters { key: "graph.ge.inputShape" value { string_value: "images:-1,3,8,8" } }\nparameters { key: "graph.ge.dynamicDims" value { string_value: "1;8" } }',
      detectorOnnx(),
    );
    assert.equal(
      e.message,
      `${FILE}:3:63: 'graph.ge.inputShape' names 'images', which is not an input of the model (inputs: image, scale)`,
    );
  });

  it('refuses a model tensor with no KServe datatype', () => {
    const g = new GraphBuilder('c');
    const x = g.input('x', 'FP32', [2]);
    g.output(g.op('Identity', [x], {}, 'y'), 'FP32', [2]);
    const graph = g.build();
    const tensorType = graph.input?.[0]?.type?.tensorType;
    assert.ok(tensorType);
    tensorType.elemType = ElemType.COMPLEX64;
    const e = configError('backend: "onnxruntime"', encodeModel(makeModel(graph)));
    assert.equal(
      e.message,
      "models/tiny/1/model.onnx: model input 'x' has an element type with no KServe datatype, so GE Mesh cannot serve it",
    );
    assert.equal(e.kind, 'invalid');
  });

  it('refuses a scalar model input when the model is batched', () => {
    const g = new GraphBuilder('s');
    const x = g.input('x', 'FP32', []);
    g.output(g.op('Identity', [x], {}, 'y'), 'FP32', []);
    const e = configError('backend: "onnxruntime"\nmax_batch_size: 4', encodeModel(makeModel(g.build())));
    assert.equal(
      e.message,
      "models/tiny/1/model.onnx: model input 'x' is a scalar, so it has no batch dim, but max_batch_size is 4; set max_batch_size: 0 or list the input in config.pbtxt",
    );
  });

  it('refuses bytes that are not an ONNX model', () => {
    const e = configError('backend: "onnxruntime"', new TextEncoder().encode('not a model'));
    assert.equal(e.kind, 'io');
    assert.equal(e.file, 'models/tiny/1/model.onnx');
    assert.match(e.message, /^models\/tiny\/1\/model\.onnx: cannot read the model's inputs and outputs: ./);
  });

  it('without the model file, a config with no inputs is an error', () => {
    const e = configError('backend: "onnxruntime"\noutput { name: "y" data_type: TYPE_FP32 dims: [ 1 ] }');
    assert.equal(
      e.message,
      `${FILE}: the config lists no input; list the model's inputs in config.pbtxt, or give the model file to read them from`,
    );
    assert.equal(e.line, undefined);
    assert.equal(e.field, 'input');
  });
});

interface Broken {
  readonly title: string;
  readonly text: string;
  readonly message: string;
  readonly field: string | undefined;
}

describe('parseModelConfig: rejected configs', () => {
  const cases: Broken[] = [
    {
      title: 'a negative max_batch_size',
      text: `backend: "onnxruntime"\nmax_batch_size: -1\n${IO}`,
      message: '2:17: max_batch_size must be >= 0 (0 means the model takes no batch dim), found -1',
      field: 'max_batch_size',
    },
    {
      title: 'a name other than the folder name',
      text: `name: "other"\nbackend: "onnxruntime"\n${IO}`,
      message: `1:7: name 'other' does not match the model folder 'tiny'; set name: "tiny" or remove it`,
      field: 'name',
    },
    {
      title: 'a backend GE Mesh does not serve',
      text: `backend: "tensorrt"\n${IO}`,
      message: `1:10: backend 'tensorrt' is not one GE Mesh serves; use "onnxruntime", "onnxruntime_onnx", "npu_ge", "ge" ("onnxruntime" runs on CPU, "npu_ge" on Ascend NPUs)`,
      field: 'backend',
    },
    {
      title: 'a platform GE Mesh does not serve',
      text: `platform: "tensorrt_plan"\n${IO}`,
      message: `1:11: platform 'tensorrt_plan' is not one GE Mesh serves; use "onnxruntime", "onnxruntime_onnx", "npu_ge", "ge" ("onnxruntime" runs on CPU, "npu_ge" on Ascend NPUs), or platform "ensemble" for a pipeline of models`,
      field: 'platform',
    },
    {
      title: 'a platform and backend that disagree',
      text: `platform: "onnxruntime_onnx"\nbackend: "npu_ge"\n${IO}`,
      message: `1:11: platform 'onnxruntime_onnx' and backend 'npu_ge' name different runtimes; remove one of them`,
      field: 'platform',
    },
    {
      title: 'neither backend nor platform',
      text: IO,
      message: ` the config sets neither 'backend' nor 'platform'; add backend: "onnxruntime" or backend: "npu_ge"`,
      field: 'backend',
    },
    {
      title: 'a preferred batch size above max_batch_size',
      text: `backend: "onnxruntime"\nmax_batch_size: 8\n${IO}dynamic_batching {\n  preferred_batch_size: [ 4, 16 ]\n}`,
      message:
        '6:30: preferred batch size 16 is above max_batch_size 8, so no batch can reach it; lower it or raise max_batch_size',
      field: 'dynamic_batching.preferred_batch_size[1]',
    },
    {
      title: 'a preferred batch size with batching off',
      text: `backend: "onnxruntime"\n${IO}dynamic_batching { preferred_batch_size: 1 }`,
      message:
        '4:42: preferred batch size 1 is above max_batch_size 0, so no batch can reach it; lower it or raise max_batch_size',
      field: 'dynamic_batching.preferred_batch_size[0]',
    },
    {
      title: 'a preferred batch size of 0',
      text: `backend: "onnxruntime"\nmax_batch_size: 8\n${IO}dynamic_batching { preferred_batch_size: [ 0 ] }`,
      message: '5:44: preferred batch size 0 must be > 0',
      field: 'dynamic_batching.preferred_batch_size[0]',
    },
    {
      title: 'a default priority level outside the levels',
      text: `backend: "onnxruntime"\nmax_batch_size: 8\n${IO}dynamic_batching { priority_levels: 2 default_priority_level: 3 }`,
      message: '5:63: default_priority_level must be in [1, 2] when priority_levels is 2, found 3',
      field: 'dynamic_batching.default_priority_level',
    },
    {
      title: 'priority levels without a default level',
      text: `backend: "onnxruntime"\nmax_batch_size: 8\n${IO}dynamic_batching { priority_levels: 2 }`,
      message: '5:37: default_priority_level must be in [1, 2] when priority_levels is 2, found 0',
      field: 'dynamic_batching.default_priority_level',
    },
    {
      title: 'a priority queue policy for a level that does not exist',
      text: `backend: "onnxruntime"\nmax_batch_size: 8\n${IO}dynamic_batching {\n  priority_levels: 2\n  default_priority_level: 1\n  priority_queue_policy { key: 5 value { } }\n}`,
      message: '8:25: priority_queue_policy has level 5, outside [1, 2] (priority_levels is 2)',
      field: 'dynamic_batching.priority_queue_policy[5]',
    },
    {
      title: 'preserve_ordering with more than one priority level',
      text: `backend: "onnxruntime"\nmax_batch_size: 8\n${IO}dynamic_batching {\n  preserve_ordering: true\n  priority_levels: 2\n  default_priority_level: 1\n}`,
      message:
        '6:22: preserve_ordering allows only one priority level, but priority_levels is 2; set priority_levels to 0 or 1, or turn preserve_ordering off',
      field: 'dynamic_batching.preserve_ordering',
    },
    {
      title: 'preserve_ordering with a DELAY queue policy that times out',
      text: `backend: "onnxruntime"\nmax_batch_size: 8\n${IO}dynamic_batching {\n  preserve_ordering: true\n  default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 10 }\n}`,
      message:
        '7:3: preserve_ordering cannot be combined with a queue policy whose timeout_action is DELAY and whose timeout is not 0; use REJECT or turn preserve_ordering off',
      field: 'dynamic_batching.default_queue_policy',
    },
    {
      title: 'an input without a name',
      text: 'backend: "onnxruntime"\ninput { data_type: TYPE_FP32 dims: [ 1 ] }\noutput { name: "y" data_type: TYPE_FP32 dims: [ 1 ] }',
      message: "2:7: input[0] needs a 'name'",
      field: 'input[0].name',
    },
    {
      title: 'an input without a data type',
      text: 'backend: "onnxruntime"\ninput { name: "x" dims: [ 1 ] }\noutput { name: "y" data_type: TYPE_FP32 dims: [ 1 ] }',
      message: "2:7: input 'x' needs a 'data_type' (e.g. data_type: TYPE_FP32)",
      field: 'input[0].data_type',
    },
    {
      title: 'an output with TYPE_INVALID',
      text: 'backend: "onnxruntime"\ninput { name: "x" data_type: TYPE_FP32 dims: [ 1 ] }\noutput { name: "y" data_type: TYPE_INVALID dims: [ 1 ] }',
      message: "3:31: output 'y' needs a 'data_type' (e.g. data_type: TYPE_FP32)",
      field: 'output[0].data_type',
    },
    {
      title: 'an input without dims',
      text: 'backend: "onnxruntime"\nmax_batch_size: 2\ninput { name: "x" data_type: TYPE_FP32 }\noutput { name: "y" data_type: TYPE_FP32 dims: [ 1 ] }',
      message: "3:7: input 'x' needs 'dims' (its shape without the batch dim, -1 for a variable dim)",
      field: 'input[0].dims',
    },
    {
      title: 'a dim of 0',
      text: 'backend: "onnxruntime"\ninput { name: "x" data_type: TYPE_FP32 dims: [ 3, 0 ] }\noutput { name: "y" data_type: TYPE_FP32 dims: [ 1 ] }',
      message: "2:51: input 'x' has dim 0; a dim must be >= 1, or -1 for a variable size",
      field: 'input[0].dims[1]',
    },
    {
      title: 'a dim below -1',
      text: 'backend: "onnxruntime"\ninput { name: "x" data_type: TYPE_FP32 dims: [ 1 ] }\noutput { name: "y" data_type: TYPE_FP32 dims: -2 }',
      message: "3:47: output 'y' has dim -2; a dim must be >= 1, or -1 for a variable size",
      field: 'output[0].dims[0]',
    },
    {
      title: 'two inputs with one name',
      text: 'backend: "onnxruntime"\ninput { name: "x" data_type: TYPE_FP32 dims: [ 1 ] }\ninput { name: "x" data_type: TYPE_FP32 dims: [ 1 ] }\noutput { name: "y" data_type: TYPE_FP32 dims: [ 1 ] }',
      message: "3:15: input name 'x' is used twice (also input[0])",
      field: 'input[1].name',
    },
    {
      title: 'a reshape with another element count',
      text: 'backend: "onnxruntime"\ninput { name: "x" data_type: TYPE_FP32 dims: [ 2, 3 ] reshape { shape: [ 5 ] } }\noutput { name: "y" data_type: TYPE_FP32 dims: [ 1 ] }',
      message: "2:55: input 'x' reshape [5] has 5 elements but dims [2,3] have 6; they must hold the same number",
      field: 'input[0].reshape',
    },
    {
      title: 'a reshape with a variable-size dim where dims have none',
      text: 'backend: "onnxruntime"\ninput { name: "x" data_type: TYPE_FP32 dims: [ 2, 4 ] reshape { shape: [ 8, -1 ] } }\noutput { name: "y" data_type: TYPE_FP32 dims: [ 1 ] }',
      message: "2:55: input 'x' reshape [8,-1] has 1 variable-size dims but dims [2,4] have 0; they must have as many",
      field: 'input[0].reshape',
    },
    {
      title: 'a reshape whose runs between variable-size dims differ',
      text: 'backend: "onnxruntime"\ninput { name: "x" data_type: TYPE_FP32 dims: [ 2, -1 ] reshape { shape: [ 4, -1 ] } }\noutput { name: "y" data_type: TYPE_FP32 dims: [ 1 ] }',
      message:
        "2:56: input 'x' reshape [4,-1] holds 4, 1 elements around its variable-size dims, but dims [2,-1] hold 2, 1; each run must hold the same number",
      field: 'input[0].reshape',
    },
    {
      title: 'an empty reshape without batching',
      text: 'backend: "onnxruntime"\ninput { name: "x" data_type: TYPE_FP32 dims: [ 1 ] reshape { } }\noutput { name: "y" data_type: TYPE_FP32 dims: [ 1 ] }',
      message:
        "2:52: input 'x' has an empty reshape, but max_batch_size is 0, so the tensor would always be empty; remove the reshape or set max_batch_size",
      field: 'input[0].reshape',
    },
    {
      title: 'an image format without three dims',
      text: 'backend: "onnxruntime"\ninput { name: "x" data_type: TYPE_FP32 dims: [ 3, 4 ] format: FORMAT_NCHW }\noutput { name: "y" data_type: TYPE_FP32 dims: [ 1 ] }',
      message: "2:63: input 'x' has format FORMAT_NCHW, which needs exactly 3 dims",
      field: 'input[0].format',
    },
    {
      title: 'a CPU instance group that lists gpus',
      text: `backend: "onnxruntime"\n${IO}instance_group [ { kind: KIND_CPU gpus: [ 0 ] } ]`,
      message: "4:35: instance group 'tiny_0' has kind KIND_CPU but lists gpus; remove 'gpus' or use KIND_GPU",
      field: 'instance_group[0].gpus',
    },
    {
      title: 'a latest version policy of zero versions',
      text: `backend: "onnxruntime"\n${IO}version_policy { latest { num_versions: 0 } }`,
      message: '4:41: version_policy latest needs num_versions >= 1 (with 0 no version would be served)',
      field: 'version_policy.latest.num_versions',
    },
    {
      title: 'a latest version policy without num_versions',
      text: `backend: "onnxruntime"\n${IO}version_policy { latest { } }`,
      message: '4:18: version_policy latest needs num_versions >= 1 (with 0 no version would be served)',
      field: 'version_policy.latest.num_versions',
    },
    {
      title: 'a specific version policy with no versions',
      text: `backend: "onnxruntime"\n${IO}version_policy { specific { } }`,
      message: '4:18: version_policy specific lists no versions; add versions: [1]',
      field: 'version_policy.specific.versions',
    },
    {
      title: 'a specific version 0',
      text: `backend: "onnxruntime"\n${IO}version_policy { specific { versions: [ 1, 0 ] } }`,
      message: '4:44: version_policy specific lists version 0; versions are numbers >= 1',
      field: 'version_policy.specific.versions[1]',
    },
  ];
  for (const c of cases) {
    it(c.title, () => {
      const e = configError(c.text);
      assert.equal(e.message, `${FILE}:${c.message}`);
      assert.equal(e.kind, 'invalid');
      assert.equal(e.field, c.field);
    });
  }
});

describe('parseModelConfig: rejected gear parameters', () => {
  const param = (key: string, value: string) => `parameters { key: "${key}" value { string_value: "${value}" } }\n`;
  const cases: Broken[] = [
    {
      title: 'gears whose largest is below max_batch_size',
      text: `backend: "npu_ge"\nmax_batch_size: 16\n${IO}${param('graph.ge.inputShape', 'x:-1,4')}${param('graph.ge.dynamicDims', '1;2;4;8')}`,
      message:
        "6:64: the largest batch gear in 'graph.ge.dynamicDims' is 8, below max_batch_size 16: a batch of 16 would fit no graph; add a gear of 16 or lower max_batch_size to 8",
      field: 'parameters["graph.ge.dynamicDims"]',
    },
    {
      title: 'gears without an input shape',
      text: `backend: "npu_ge"\nmax_batch_size: 4\n${IO}${param('graph.ge.dynamicDims', '1;2;4')}`,
      message: `5:64: 'graph.ge.dynamicDims' needs 'graph.ge.inputShape' to say which dims (-1) the gears fill, e.g. "input:-1,3,224,224"`,
      field: 'parameters["graph.ge.dynamicDims"]',
    },
    {
      title: 'a gear with the wrong number of values',
      text: `backend: "npu_ge"\nmax_batch_size: 4\n${IO}${param('graph.ge.inputShape', 'x:-1,4')}${param('graph.ge.dynamicDims', '1;2,2;4')}`,
      message: `6:64: gear "2,2" in 'graph.ge.dynamicDims' has 2 value(s), but 'graph.ge.inputShape' has 1 -1 dim(s) to fill`,
      field: 'parameters["graph.ge.dynamicDims"]',
    },
    {
      title: 'a gear that is not a number',
      text: `backend: "npu_ge"\nmax_batch_size: 4\n${IO}${param('graph.ge.inputShape', 'x:-1,4')}${param('graph.ge.dynamicDims', '1;two;4')}`,
      message: `6:64: gear "two" in 'graph.ge.dynamicDims' has "two"; gear values are positive integers`,
      field: 'parameters["graph.ge.dynamicDims"]',
    },
    {
      title: 'a gear of 0',
      text: `backend: "npu_ge"\nmax_batch_size: 4\n${IO}${param('graph.ge.inputShape', 'x:-1,4')}${param('graph.ge.dynamicDims', '0;4')}`,
      message: `6:64: gear "0" in 'graph.ge.dynamicDims' has "0"; gear values are positive integers`,
      field: 'parameters["graph.ge.dynamicDims"]',
    },
    {
      title: 'an empty gear list',
      text: `backend: "npu_ge"\nmax_batch_size: 4\n${IO}${param('graph.ge.inputShape', 'x:-1,4')}${param('graph.ge.dynamicDims', ' ; ')}`,
      message: `6:64: 'graph.ge.dynamicDims' lists no gears; write them joined by ';', e.g. "1;2;4;8"`,
      field: 'parameters["graph.ge.dynamicDims"]',
    },
    {
      title: 'an input shape entry without a name',
      text: `backend: "npu_ge"\nmax_batch_size: 4\n${IO}${param('graph.ge.inputShape', '-1,4')}${param('graph.ge.dynamicDims', '1;4')}`,
      message: `5:63: 'graph.ge.inputShape' entry "-1,4" is not of the form name:d0,d1,...`,
      field: 'parameters["graph.ge.inputShape"]',
    },
    {
      title: 'an input shape with a word for a dim',
      text: `backend: "npu_ge"\nmax_batch_size: 4\n${IO}${param('graph.ge.inputShape', 'x:-1,n')}${param('graph.ge.dynamicDims', '1;4')}`,
      message: `5:63: 'graph.ge.inputShape' entry "x:-1,n" has dim "n"; a dim is a number, or -1 where a gear fills it`,
      field: 'parameters["graph.ge.inputShape"]',
    },
    {
      title: 'an empty input shape',
      text: `backend: "npu_ge"\nmax_batch_size: 4\n${IO}${param('graph.ge.inputShape', '')}${param('graph.ge.dynamicDims', '1;4')}`,
      message: `5:63: 'graph.ge.inputShape' is empty; write "name:d0,d1,..." per input, joined by ';'`,
      field: 'parameters["graph.ge.inputShape"]',
    },
    {
      title: 'an input shape naming an input the model does not have',
      text: `backend: "npu_ge"\nmax_batch_size: 4\n${IO}${param('graph.ge.inputShape', 'data:-1,4')}${param('graph.ge.dynamicDims', '1;4')}`,
      message: `5:63: 'graph.ge.inputShape' names 'data', which is not an input of the model (inputs: x)`,
      field: 'parameters["graph.ge.inputShape"]',
    },
  ];
  for (const c of cases) {
    it(c.title, () => {
      const e = configError(c.text);
      assert.equal(e.message, `${FILE}:${c.message}`);
      assert.equal(e.field, c.field);
    });
  }

  it('gears that give two inputs different batch sizes', () => {
    const e = configError(
      [
        'backend: "npu_ge"',
        'max_batch_size: 4',
        'input { name: "a" data_type: TYPE_FP32 dims: [ 2 ] }',
        'input { name: "b" data_type: TYPE_FP32 dims: [ 2 ] }',
        'output { name: "y" data_type: TYPE_FP32 dims: [ 2 ] }',
        param('graph.ge.inputShape', 'a:-1,2;b:-1,2'),
        param('graph.ge.dynamicDims', '1,1;4,2'),
      ].join('\n'),
    );
    assert.equal(
      e.message,
      `${FILE}:8:64: gear "4,2" in 'graph.ge.dynamicDims' gives the inputs different batch sizes; a batch gear gives every input the same one`,
    );
  });
});
