// Valid protobuf text format: every syntax form config.pbtxt files use,
// parsed against Triton's ModelConfig schema into plain data.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { describe, it } from 'node:test';
import { parseTextProto, sourcePosition, valuePosition } from '@ge-mesh/model-repository';

const parse = (text: string) => parseTextProto(text, { file: 'config.pbtxt' });
const fixture = (name: string) => new URL(`../fixtures/repositories/configs/${name}`, import.meta.url);

describe('text format: structure', () => {
  it('an empty file, or one with only comments, is an empty message', () => {
    assert.deepEqual(parse(''), {});
    assert.deepEqual(parse('# nothing here\n   \n# still nothing'), {});
  });

  it('takes # comments between any two tokens, including inside lists and after the last line', () => {
    const raw = parse(
      [
        '# header',
        'name # before the colon',
        ': # after the colon',
        '"tiny" # after the value',
        'input # before the brace',
        '{ # after the brace',
        '  dims: [ # in a list',
        '    1, # after an element',
        '    2 # before the closing bracket',
        '  ]',
        '} # trailing comment without newline',
      ].join('\n'),
    );
    assert.deepEqual(raw, { name: 'tiny', input: [{ dims: [1, 2] }] });
  });

  it('makes the colon optional before a message and accepts {} and <> delimiters', () => {
    const raw = parse(
      'dynamic_batching: { max_queue_delay_microseconds: 5 } response_cache < enable: true > model_transaction_policy { }',
    );
    assert.deepEqual(raw, {
      dynamic_batching: { max_queue_delay_microseconds: 5 },
      response_cache: { enable: true },
      model_transaction_policy: {},
    });
  });

  it('accepts ; and , after any field, and no separator at all', () => {
    const raw = parse('name: "a"; max_batch_size: 4, backend: "onnxruntime" input { name: "x"; dims: 1, };');
    assert.deepEqual(raw, { name: 'a', max_batch_size: 4, backend: 'onnxruntime', input: [{ name: 'x', dims: [1] }] });
  });

  it('collects repeated fields by repetition, by [a, b] lists and by both mixed, in order', () => {
    const raw = parse('input { dims: 1 dims: [2, 3] dims: 4 dims: [] dims: [5] }');
    assert.deepEqual(raw, { input: [{ dims: [1, 2, 3, 4, 5] }] });
    const messages = parse(
      'input [ { name: "a" }, { name: "b" } ] input { name: "c" } input: [ < name: "d" > ] input []',
    );
    assert.deepEqual(
      (messages.input as { name: string }[]).map((i) => i.name),
      ['a', 'b', 'c', 'd'],
    );
  });

  it('keeps an explicitly empty repeated field as an empty list', () => {
    assert.deepEqual(parse('input { dims: [] }'), { input: [{ dims: [] }] });
    assert.deepEqual(parse('instance_group []'), { instance_group: [] });
  });

  it('reads nested messages several levels deep', () => {
    const raw = parse(
      'optimization { execution_accelerators { gpu_execution_accelerator { name: "tensorrt" parameters { key: "precision_mode" value: "FP16" } } } }',
    );
    assert.deepEqual(raw, {
      optimization: {
        execution_accelerators: {
          gpu_execution_accelerator: [{ name: 'tensorrt', parameters: { precision_mode: 'FP16' } }],
        },
      },
    });
  });

  it('accepts Windows line endings, tabs and a byte-order mark', () => {
    assert.deepEqual(parse('\uFEFFname:\t"a"\r\nmax_batch_size:\t2\r\n'), { name: 'a', max_batch_size: 2 });
  });
});

describe('text format: scalar values', () => {
  it('reads enum values by name and by number', () => {
    const raw = parse('input { data_type: TYPE_FP32 format: FORMAT_NCHW } input { data_type: 11 format: 0 }');
    assert.deepEqual(raw, {
      input: [
        { data_type: 'TYPE_FP32', format: 'FORMAT_NCHW' },
        { data_type: 'TYPE_FP32', format: 'FORMAT_NONE' },
      ],
    });
  });

  it('reads every bool spelling: true/True/t/1 and false/False/f/0 (and 0/1 in hex or octal)', () => {
    const spellings = ['true', 'True', 't', '1', '0x1', '01', 'false', 'False', 'f', '0', '0x0', '00'];
    const got = spellings.map(
      (s) => (parse(`response_cache { enable: ${s} }`).response_cache as { enable: boolean }).enable,
    );
    assert.deepEqual(got, [true, true, true, true, true, true, false, false, false, false, false, false]);
    assert.deepEqual(parse('sequence_batching { control_input { control { bool_false_true: [ f, True ] } } }'), {
      sequence_batching: { control_input: [{ control: [{ bool_false_true: [false, true] }] }] },
    });
  });

  it('reads single- and double-quoted strings with every C escape', () => {
    const raw = parse(String.raw`name: "a\tb\nc\\d\"e\'f\?g\a\b\f\v\r" backend: 'it''s \"x\"'`);
    assert.equal(raw.name, 'a\tb\nc\\d"e\'f?g\x07\b\f\v\r');
    assert.equal(raw.backend, 'its "x"');
  });

  it('reads octal, hex and Unicode escapes as UTF-8', () => {
    const raw = parse(String.raw`name: "\101\x42\x4a\u00e9\303\251\U0001F600\uD83D\uDE00\0"`);
    assert.equal(raw.name, 'ABJéé😀😀\0');
    // An octal escape takes at most three digits; a hex escape at most two.
    assert.equal(parse(String.raw`name: "\1234\x414"`).name, 'S4A4');
  });

  it('joins adjacent string literals, across lines and comments, with either quote', () => {
    const raw = parse('name: "first " \'second \'\n  # comment\n  "third"\nbackend: "a""b"\'c\'');
    assert.equal(raw.name, 'first second third');
    assert.equal(raw.backend, 'abc');
  });

  it('keeps non-ASCII text in strings as written', () => {
    assert.equal(parse('name: "模型_é"').name, '模型_é');
  });

  it('reads decimal, hex, octal and negative integers, with or without space after the minus', () => {
    const raw = parse('input { dims: [ 10, 0x10, 0X1f, 010, 0, -1, - 2, -0x3, -07 ] }');
    assert.deepEqual(raw, { input: [{ dims: [10, 16, 31, 8, 0, -1, -2, -3, -7] }] });
  });

  it('reads the full range of each integer kind', () => {
    assert.equal(parse('max_batch_size: 2147483647').max_batch_size, 2147483647);
    assert.equal(parse('max_batch_size: -2147483648').max_batch_size, -2147483648);
    assert.equal(
      (
        parse('response_cache {} instance_group { rate_limiter { priority: 4294967295 } }').instance_group as {
          rate_limiter: { priority: number };
        }[]
      )[0]?.rate_limiter.priority,
      4294967295,
    );
    assert.deepEqual(parse('dynamic_batching { max_queue_delay_microseconds: 9007199254740991 }'), {
      dynamic_batching: { max_queue_delay_microseconds: Number.MAX_SAFE_INTEGER },
    });
  });

  it('reads floats in every form, integers in float fields, and inf/nan', () => {
    const raw = parse(
      'model_metrics { metric_control { histogram_options { buckets: [ 1, 2.5, .5, 5., 1e3, 1.5E-2, 2e+1, 2f, 1.0F, -3, inf, -Infinity, NAN ] } } }',
    );
    const buckets = (raw.model_metrics as { metric_control: { histogram_options: { buckets: number[] } }[] })
      .metric_control[0]?.histogram_options.buckets;
    assert.deepEqual(buckets, [1, 2.5, 0.5, 5, 1000, 0.015, 20, 2, 1, -3, Infinity, -Infinity, Number.NaN]);
  });

  it('reads a float field of the sequence batcher', () => {
    assert.deepEqual(parse('sequence_batching { direct { minimum_slot_utilization: 0.25 } }'), {
      sequence_batching: { direct: { minimum_slot_utilization: 0.25 } },
    });
  });
});

describe('text format: maps', () => {
  it('reads parameters as map<string, ModelParameter>, in every entry syntax', () => {
    const raw = parse(
      [
        'parameters { key: "a" value: { string_value: "1" } }',
        'parameters: [ { key: "b", value: {string_value: "2"} }, { key: "c" value < string_value: "3" > } ]',
        'parameters { value { string_value: "no key" } }',
        'parameters { key: "empty" }',
      ].join('\n'),
    );
    assert.deepEqual(raw, {
      parameters: {
        a: { string_value: '1' },
        b: { string_value: '2' },
        c: { string_value: '3' },
        '': { string_value: 'no key' },
        empty: {},
      },
    });
  });

  it('keeps the last value of a duplicate key', () => {
    const raw = parse(
      'parameters { key: "k" value: { string_value: "first" } } parameters { key: "k" value: { string_value: "last" } }',
    );
    assert.deepEqual(raw.parameters, { k: { string_value: 'last' } });
  });

  it('reads map<uint64, ModelQueuePolicy> keyed by number', () => {
    const raw = parse(
      'dynamic_batching { priority_queue_policy { key: 1 value { max_queue_size: 4 } } priority_queue_policy: { key: 0x2 value: < timeout_action: DELAY > } }',
    );
    assert.deepEqual(raw, {
      dynamic_batching: {
        priority_queue_policy: { '1': { max_queue_size: 4 }, '2': { timeout_action: 'DELAY' } },
      },
    });
  });

  it('reads map<string, string> fields and defaults a missing value to ""', () => {
    const raw = parse(
      'metric_tags { key: "team" value: "vision" } metric_tags { key: "x" } cc_model_filenames: [ { key: "7.5", value: "a.onnx" } ]',
    );
    assert.deepEqual(raw, { metric_tags: { team: 'vision', x: '' }, cc_model_filenames: { '7.5': 'a.onnx' } });
  });

  it('keeps a key named __proto__ as an ordinary entry', () => {
    const raw = parse('parameters { key: "__proto__" value { string_value: "x" } }');
    const params = raw.parameters as Record<string, unknown>;
    assert.deepEqual(Object.keys(params), ['__proto__']);
    assert.equal(Object.getPrototypeOf(params), Object.prototype);
  });
});

describe('text format: oneofs and whole configs', () => {
  it('accepts each member of version_policy alone', () => {
    assert.deepEqual(parse('version_policy { latest { num_versions: 2 } }').version_policy, {
      latest: { num_versions: 2 },
    });
    assert.deepEqual(parse('version_policy: { all {} }').version_policy, { all: {} });
    assert.deepEqual(parse('version_policy: { specific: { versions: [1, 3] } }').version_policy, {
      specific: { versions: [1, 3] },
    });
  });

  it('parses a config that sets every ModelConfig field', async () => {
    const raw = parse(await readFile(fixture('all-fields.pbtxt'), 'utf8'));
    assert.deepEqual(Object.keys(raw), [
      'name',
      'platform',
      'backend',
      'runtime',
      'version_policy',
      'max_batch_size',
      'input',
      'output',
      'batch_input',
      'batch_output',
      'optimization',
      'dynamic_batching',
      'instance_group',
      'default_model_filename',
      'cc_model_filenames',
      'metric_tags',
      'parameters',
      'model_warmup',
      'model_operations',
      'model_transaction_policy',
      'model_repository_agents',
      'response_cache',
      'model_metrics',
    ]);
    assert.deepEqual(raw.input, [
      { name: 'image', data_type: 'TYPE_UINT8', format: 'FORMAT_NHWC', dims: [224, 224, 3], allow_ragged_batch: false },
      {
        name: 'scale',
        data_type: 'TYPE_FP32',
        dims: [1],
        reshape: { shape: [] },
        optional: true,
        is_shape_tensor: false,
        is_non_linear_format_io: false,
      },
    ]);
    assert.deepEqual(raw.output, [
      { name: 'boxes', data_type: 'TYPE_FP32', dims: [-1, 4] },
      { name: 'labels', data_type: 'TYPE_STRING', dims: [-1], label_filename: 'labels.txt', reshape: { shape: [-1] } },
    ]);
    assert.deepEqual(raw.dynamic_batching, {
      preferred_batch_size: [4, 8],
      max_queue_delay_microseconds: 100,
      preserve_ordering: false,
      priority_levels: 2,
      default_priority_level: 2,
      default_queue_policy: {
        timeout_action: 'DELAY',
        default_timeout_microseconds: 5000,
        allow_timeout_override: true,
        max_queue_size: 32,
      },
      priority_queue_policy: {
        '1': { timeout_action: 'REJECT', default_timeout_microseconds: 1000, max_queue_size: 4 },
      },
    });
    assert.deepEqual(raw.instance_group, [
      {
        name: 'cpu_group',
        kind: 'KIND_CPU',
        count: 2,
        rate_limiter: { resources: [{ name: 'R1', global: true, count: 2 }], priority: 1 },
        passive: false,
        host_policy: 'numa0',
      },
      { kind: 'KIND_GPU', gpus: [0, 1], profile: ['0'], secondary_devices: [{ kind: 'KIND_NVDLA', device_id: 0 }] },
    ]);
    assert.deepEqual(raw.optimization, {
      graph: { level: 1 },
      priority: 'PRIORITY_MAX',
      cuda: {
        graphs: true,
        busy_wait_events: false,
        output_copy_stream: true,
        graph_spec: [{ batch_size: 4, input: { image: { dim: [224, 224, 3] } } }],
      },
      execution_accelerators: {
        gpu_execution_accelerator: [{ name: 'tensorrt', parameters: { precision_mode: 'FP16' } }],
        cpu_execution_accelerator: [{ name: 'openvino' }],
      },
      input_pinned_memory: { enable: true },
      output_pinned_memory: { enable: false },
      gather_kernel_buffer_threshold: 0,
      eager_batching: true,
    });
    assert.deepEqual(raw.model_warmup, [
      {
        name: 'zeros',
        batch_size: 1,
        inputs: {
          image: { data_type: 'TYPE_UINT8', dims: [224, 224, 3], zero_data: true },
          scale: { data_type: 'TYPE_FP32', dims: [1], random_data: true },
        },
        count: 2,
      },
    ]);
    assert.deepEqual(raw.batch_input, [
      { kind: 'BATCH_ELEMENT_COUNT', target_name: ['count'], data_type: 'TYPE_INT32', source_input: ['image'] },
    ]);
    assert.deepEqual(raw.batch_output, [
      { target_name: ['boxes'], kind: 'BATCH_SCATTER_WITH_INPUT_SHAPE', source_input: ['image'] },
    ]);
    assert.deepEqual(raw.model_repository_agents, {
      agents: [{ name: 'checksum', parameters: { 'MD5:detector.onnx': 'abc' } }],
    });
    assert.deepEqual(raw.model_metrics, {
      metric_control: [
        {
          metric_identifier: { family: 'nv_inference_request_duration' },
          histogram_options: { buckets: [100, 500.5, 1000, 5000] },
        },
      ],
    });
    assert.deepEqual(raw.model_operations, { op_library_filename: ['libcustom_ops.so'] });
    assert.deepEqual(raw.cc_model_filenames, { '7.5': 'detector_sm75.onnx' });
    assert.deepEqual(raw.metric_tags, { team: 'vision' });
    assert.deepEqual(raw.parameters, { threads: { string_value: '4' } });
  });

  it('keeps sequence_batching as written', async () => {
    const raw = parse(await readFile(fixture('sequence.pbtxt'), 'utf8'));
    assert.deepEqual(raw.sequence_batching, {
      max_sequence_idle_microseconds: 5000000,
      oldest: { max_candidate_sequences: 4, preferred_batch_size: [2, 4], max_queue_delay_microseconds: 100 },
      control_input: [
        { name: 'START', control: [{ kind: 'CONTROL_SEQUENCE_START', fp32_false_true: [0, 1] }] },
        { name: 'READY', control: [{ kind: 'CONTROL_SEQUENCE_READY', int32_false_true: [0, 1] }] },
        { name: 'CORRID', control: [{ kind: 'CONTROL_SEQUENCE_CORRID', data_type: 'TYPE_UINT64' }] },
        { name: 'END', control: [{ kind: 'CONTROL_SEQUENCE_END', bool_false_true: [false, true] }] },
      ],
      state: [
        {
          input_name: 'state_in',
          output_name: 'state_out',
          data_type: 'TYPE_FP32',
          dims: [16],
          initial_state: [{ name: 'zero', data_type: 'TYPE_FP32', dims: [16], zero_data: true }],
          use_same_buffer_for_input_output: true,
          use_growable_memory: false,
        },
      ],
      iterative_sequence: false,
    });
  });

  it('keeps ensemble_scheduling as written', async () => {
    const raw = parse(await readFile(fixture('ensemble.pbtxt'), 'utf8'));
    assert.deepEqual(raw.ensemble_scheduling, {
      step: [
        {
          model_name: 'tokenizer',
          model_version: -1,
          input_map: { TEXT: 'text' },
          output_map: { IDS: 'ids' },
        },
        {
          model_name: 'classifier',
          model_version: 2,
          input_map: { input_ids: 'ids' },
          output_map: { logits: 'score' },
          model_namespace: '',
        },
      ],
      max_inflight_requests: 16,
    });
  });
});

describe('text format: source positions', () => {
  it('records where each field, element and map entry was written', () => {
    const raw = parse(
      [
        'name: "a"',
        'input {',
        '  dims: [ 3,',
        '          224 ]',
        '}',
        'parameters { key: "k" value { string_value: "v" } }',
      ].join('\n'),
    );
    assert.deepEqual(sourcePosition(raw, 'name'), { line: 1, column: 1 });
    assert.deepEqual(valuePosition(raw, 'name'), { line: 1, column: 7 });
    assert.deepEqual(sourcePosition(raw, 'input', 0), { line: 2, column: 7 });
    const input = (raw.input as object[])[0] as object;
    assert.deepEqual(sourcePosition(input, 'dims', 0), { line: 3, column: 11 });
    assert.deepEqual(sourcePosition(input, 'dims', 1), { line: 4, column: 11 });
    assert.deepEqual(sourcePosition(raw, 'parameters', 'k'), { line: 6, column: 12 });
    const value = (raw.parameters as Record<string, object>).k as object;
    assert.deepEqual(valuePosition(value, 'string_value'), { line: 6, column: 45 });
    assert.equal(sourcePosition(raw, 'max_batch_size'), undefined);
  });

  it('counts columns in characters, with a tab as one', () => {
    const raw = parse('\t\tname: "é"  max_batch_size: 1');
    assert.deepEqual(sourcePosition(raw, 'name'), { line: 1, column: 3 });
    assert.deepEqual(sourcePosition(raw, 'max_batch_size'), { line: 1, column: 14 });
  });
});
