import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseModelConfig, parseTextProto, type RepositoryModel } from '@ge-mesh/model-repository';
import { encodeModel, GraphBuilder, makeModel } from '@ge-mesh/onnx';
import { modelConfigJson, shortestFloat } from '../../services/gateway/src/http/model-config-json.js';

/**
 * `/config` prints the ModelConfig as Triton does (protobuf JSON, proto field
 * names in declaration order, every field at its default, enums by name,
 * Triton's 64-bit fix-ups), after Triton's load-time completion. The expected
 * texts are written out by hand from core's ModelConfigToJson and
 * NormalizeModelConfig; key order is compared too.
 */
function model(name: string, text: string, modelBytes?: Uint8Array): RepositoryModel {
  const config = parseModelConfig(text, {
    file: `${name}/config.pbtxt`,
    modelName: name,
    ...(modelBytes ? { modelBytes } : {}),
  });
  return { name, dir: `/repo/${name}`, config, versions: [{ version: '1', modelPath: '/repo/x/1/model.onnx' }] };
}

const IO_DEFAULTS = {
  is_shape_tensor: false,
  allow_ragged_batch: false,
  optional: false,
  is_non_linear_format_io: false,
};
const GROUP_DEFAULTS = { secondary_devices: [], profile: [], passive: false, host_policy: '' };
const OPTIMIZATION_TAIL = {
  input_pinned_memory: { enable: true },
  output_pinned_memory: { enable: true },
  gather_kernel_buffer_threshold: 0,
  eager_batching: false,
};

describe('gateway /config JSON', () => {
  it('completes a config without inputs and outputs from the ONNX file, as Triton loads it', () => {
    const g = new GraphBuilder('auto');
    const x = g.input('x', 'FP32', ['batch', 16]);
    g.op('Identity', [x], {}, 'y');
    g.output('y', 'FP32', ['batch', 16]);
    const bytes = encodeModel(makeModel(g.build()));
    const m = model(
      'auto',
      'backend: "onnxruntime"\nmax_batch_size: 8\ndynamic_batching { max_queue_delay_microseconds: 100 }\n',
      bytes,
    );
    const expected = {
      name: 'auto',
      platform: 'onnxruntime_onnx',
      backend: 'onnxruntime',
      runtime: '',
      version_policy: { latest: { num_versions: 1 } },
      max_batch_size: 8,
      input: [{ name: 'x', data_type: 'TYPE_FP32', format: 'FORMAT_NONE', dims: [16], ...IO_DEFAULTS }],
      output: [
        {
          name: 'y',
          data_type: 'TYPE_FP32',
          dims: [16],
          label_filename: '',
          is_shape_tensor: false,
          is_non_linear_format_io: false,
        },
      ],
      batch_input: [],
      batch_output: [],
      optimization: { priority: 'PRIORITY_DEFAULT', ...OPTIMIZATION_TAIL },
      dynamic_batching: {
        preferred_batch_size: [8],
        max_queue_delay_microseconds: 100,
        preserve_ordering: false,
        priority_levels: 0,
        default_priority_level: 0,
        priority_queue_policy: {},
      },
      instance_group: [{ name: 'auto', kind: 'KIND_CPU', count: 1, gpus: [], ...GROUP_DEFAULTS }],
      default_model_filename: 'model.onnx',
      cc_model_filenames: {},
      metric_tags: {},
      parameters: {},
      model_warmup: [],
    };
    assert.equal(JSON.stringify(modelConfigJson(m)), JSON.stringify(expected));
  });

  it('prints every written field with Triton normalisation, queue policies and warmup', () => {
    const m = model(
      'rich',
      `platform: "onnxruntime_onnx"
max_batch_size: 8
version_policy: { specific: { versions: [1, 3] } }
input [
  { name: "a" data_type: TYPE_FP16 dims: [ 2, 3 ] reshape: { shape: [ 3, 2 ] } },
  { name: "b" data_type: TYPE_STRING dims: [ 1 ] reshape: { shape: [ ] } optional: true }
]
output [ { name: "c" data_type: TYPE_FP32 dims: [ 4 ] label_filename: "labels.txt" } ]
dynamic_batching {
  max_queue_delay_microseconds: 500
  priority_levels: 2
  default_priority_level: 1
  default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 100 allow_timeout_override: true max_queue_size: 4 }
  priority_queue_policy { key: 2 value: { max_queue_size: 8 } }
}
instance_group [ { count: 2 kind: KIND_CPU }, { name: "g" } ]
parameters { key: "k" value: { string_value: "v" } }
optimization { graph { level: 1 } }
model_warmup [ { name: "w" batch_size: 1 inputs { key: "a" value: { data_type: TYPE_FP16 dims: [ 2, 3 ] zero_data: true } } } ]
`,
    );
    const expected = {
      name: 'rich',
      platform: 'onnxruntime_onnx',
      backend: 'onnxruntime',
      runtime: '',
      version_policy: { specific: { versions: [1, 3] } },
      max_batch_size: 8,
      input: [
        {
          name: 'a',
          data_type: 'TYPE_FP16',
          format: 'FORMAT_NONE',
          dims: [2, 3],
          reshape: { shape: [3, 2] },
          ...IO_DEFAULTS,
        },
        {
          name: 'b',
          data_type: 'TYPE_STRING',
          format: 'FORMAT_NONE',
          dims: [1],
          reshape: { shape: [] },
          ...IO_DEFAULTS,
          optional: true,
        },
      ],
      output: [
        {
          name: 'c',
          data_type: 'TYPE_FP32',
          dims: [4],
          label_filename: 'labels.txt',
          is_shape_tensor: false,
          is_non_linear_format_io: false,
        },
      ],
      batch_input: [],
      batch_output: [],
      optimization: { graph: { level: 1 }, priority: 'PRIORITY_DEFAULT', ...OPTIMIZATION_TAIL },
      dynamic_batching: {
        preferred_batch_size: [8],
        max_queue_delay_microseconds: 500,
        preserve_ordering: false,
        priority_levels: 2,
        default_priority_level: 1,
        default_queue_policy: {
          timeout_action: 'DELAY',
          default_timeout_microseconds: 100,
          allow_timeout_override: true,
          max_queue_size: 4,
        },
        priority_queue_policy: {
          '2': {
            timeout_action: 'REJECT',
            default_timeout_microseconds: 0,
            allow_timeout_override: false,
            max_queue_size: 8,
          },
        },
      },
      instance_group: [
        { name: 'rich_0', kind: 'KIND_CPU', count: 2, gpus: [], ...GROUP_DEFAULTS },
        { name: 'g', kind: 'KIND_CPU', count: 1, gpus: [], ...GROUP_DEFAULTS },
      ],
      default_model_filename: 'model.onnx',
      cc_model_filenames: {},
      metric_tags: {},
      parameters: { k: { string_value: 'v' } },
      model_warmup: [
        {
          name: 'w',
          batch_size: 1,
          inputs: { a: { data_type: 'TYPE_FP16', dims: [2, 3], zero_data: true } },
          count: 0,
        },
      ],
    };
    assert.equal(JSON.stringify(modelConfigJson(m)), JSON.stringify(expected));
  });

  it("leaves as strings the 64-bit fields Triton's fix-up misses, and fills sequence defaults", () => {
    // The loader refuses sequence_batching (no sequence batcher); the printer still prints any message.
    const text = `backend: "onnxruntime"
max_batch_size: 4
input [ { name: "x" data_type: TYPE_INT32 dims: [ 4 ] } ]
output [ { name: "y" data_type: TYPE_INT32 dims: [ 4 ] } ]
sequence_batching {
  oldest { max_candidate_sequences: 2 max_queue_delay_microseconds: 7 }
  state [ { input_name: "s_in" output_name: "s_out" data_type: TYPE_FP32 dims: [ 3 ]
            initial_state [ { data_type: TYPE_FP32 dims: [ 3 ] zero_data: true name: "init" } ] } ]
}
instance_group [ { kind: KIND_CPU secondary_devices [ { kind: KIND_NVDLA device_id: 5 } ] } ]
optimization {
  cuda { graph_spec [ { batch_size: 1 input { key: "x" value: { dim: [ 4 ] } } } ] }
  execution_accelerators { cpu_execution_accelerator [ { name: "openvino" parameters { key: "a" value: "b" } } ] }
}
`;
    const loaded = model(
      'seq',
      text.slice(0, text.indexOf('sequence_batching')) + text.slice(text.indexOf('instance_group')),
    );
    const m = { ...loaded, config: { ...loaded.config, raw: parseTextProto(text, { file: 'seq/config.pbtxt' }) } };
    const json = modelConfigJson(m) as Record<string, unknown>;
    assert.equal(
      JSON.stringify(json.sequence_batching),
      JSON.stringify({
        oldest: {
          max_candidate_sequences: 2,
          preferred_batch_size: [4],
          max_queue_delay_microseconds: 7,
          preserve_ordering: false,
        },
        max_sequence_idle_microseconds: 1000000,
        control_input: [],
        state: [
          {
            input_name: 's_in',
            output_name: 's_out',
            data_type: 'TYPE_FP32',
            dims: [3],
            initial_state: [{ data_type: 'TYPE_FP32', dims: ['3'], zero_data: true, name: 'init' }],
            use_same_buffer_for_input_output: false,
            use_growable_memory: false,
          },
        ],
        iterative_sequence: false,
      }),
    );
    assert.equal('dynamic_batching' in json, false);
    assert.equal(
      JSON.stringify(json.instance_group),
      JSON.stringify([
        {
          name: 'seq_0',
          kind: 'KIND_CPU',
          count: 1,
          gpus: [],
          secondary_devices: [{ kind: 'KIND_NVDLA', device_id: '5' }],
          profile: [],
          passive: false,
          host_policy: '',
        },
      ]),
    );
    assert.equal(
      JSON.stringify(json.optimization),
      JSON.stringify({
        priority: 'PRIORITY_DEFAULT',
        cuda: {
          graphs: false,
          busy_wait_events: false,
          graph_spec: [{ batch_size: 1, input: { x: { dim: ['4'] } } }],
          output_copy_stream: false,
        },
        execution_accelerators: {
          gpu_execution_accelerator: [],
          cpu_execution_accelerator: [{ name: 'openvino', parameters: { a: 'b' } }],
        },
        ...OPTIMIZATION_TAIL,
      }),
    );
  });

  it('prints floats as the shortest decimal of their float32 value, as protobuf does', () => {
    assert.equal(shortestFloat(0.1), 0.1);
    assert.equal(shortestFloat(0.3), 0.3);
    assert.equal(shortestFloat(1 / 3), 0.33333334);
    assert.equal(shortestFloat(2), 2);
    assert.equal(shortestFloat(0), 0);
  });
});
