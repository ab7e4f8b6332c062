/**
 * Triton's `inference.ModelConfig` (common protobuf/model_config.proto) as a
 * field table for the text-format parser: every message and field a real
 * config.pbtxt can contain, so that anything else is reported as unknown.
 * Enum values are listed in .proto order (their numbers are 0, 1, 2, ...).
 */
import {
  type EnumSchema,
  enumField,
  enumOf,
  inOneof,
  type MessageSchema,
  mapField,
  message,
  repeatedMessage,
  repeatedScalar,
  scalar,
} from './text-format/schema.js';

export const DATA_TYPE_ENUM: EnumSchema = enumOf(
  'DataType',
  [
    'TYPE_INVALID',
    'TYPE_BOOL',
    'TYPE_UINT8',
    'TYPE_UINT16',
    'TYPE_UINT32',
    'TYPE_UINT64',
    'TYPE_INT8',
    'TYPE_INT16',
    'TYPE_INT32',
    'TYPE_INT64',
    'TYPE_FP16',
    'TYPE_FP32',
    'TYPE_FP64',
    'TYPE_STRING',
    'TYPE_BF16',
  ],
  {
    TYPE_FLOAT: 'TYPE_FP32',
    TYPE_FLOAT32: 'TYPE_FP32',
    TYPE_FLOAT16: 'TYPE_FP16',
    TYPE_HALF: 'TYPE_FP16',
    TYPE_DOUBLE: 'TYPE_FP64',
    TYPE_FLOAT64: 'TYPE_FP64',
    TYPE_BFLOAT16: 'TYPE_BF16',
    TYPE_BYTES: 'TYPE_STRING',
    TYPE_INT: 'TYPE_INT32',
    TYPE_UINT: 'TYPE_UINT32',
  },
);

const dataType = enumField(DATA_TYPE_ENUM);

const RateLimiterResource: MessageSchema = {
  name: 'ModelRateLimiter.Resource',
  fields: { name: scalar('string'), global: scalar('bool'), count: scalar('uint32') },
};

const ModelRateLimiter: MessageSchema = {
  name: 'ModelRateLimiter',
  fields: { resources: repeatedMessage(RateLimiterResource), priority: scalar('uint32') },
};

const SecondaryDevice: MessageSchema = {
  name: 'ModelInstanceGroup.SecondaryDevice',
  fields: {
    kind: enumField(enumOf('SecondaryDeviceKind', ['KIND_NVDLA'])),
    device_id: scalar('int64'),
  },
};

export const INSTANCE_KIND_ENUM: EnumSchema = enumOf('ModelInstanceGroup.Kind', [
  'KIND_AUTO',
  'KIND_GPU',
  'KIND_CPU',
  'KIND_MODEL',
]);

const ModelInstanceGroup: MessageSchema = {
  name: 'ModelInstanceGroup',
  fields: {
    name: scalar('string'),
    kind: enumField(INSTANCE_KIND_ENUM),
    count: scalar('int32'),
    rate_limiter: message(ModelRateLimiter),
    gpus: repeatedScalar('int32'),
    secondary_devices: repeatedMessage(SecondaryDevice),
    profile: repeatedScalar('string'),
    passive: scalar('bool'),
    host_policy: scalar('string'),
  },
};

const ModelTensorReshape: MessageSchema = {
  name: 'ModelTensorReshape',
  fields: { shape: repeatedScalar('int64') },
};

const ModelInput: MessageSchema = {
  name: 'ModelInput',
  fields: {
    name: scalar('string'),
    data_type: dataType,
    format: enumField(enumOf('ModelInput.Format', ['FORMAT_NONE', 'FORMAT_NHWC', 'FORMAT_NCHW'])),
    dims: repeatedScalar('int64'),
    reshape: message(ModelTensorReshape),
    is_shape_tensor: scalar('bool'),
    allow_ragged_batch: scalar('bool'),
    optional: scalar('bool'),
    is_non_linear_format_io: scalar('bool'),
  },
};

const ModelOutput: MessageSchema = {
  name: 'ModelOutput',
  fields: {
    name: scalar('string'),
    data_type: dataType,
    dims: repeatedScalar('int64'),
    reshape: message(ModelTensorReshape),
    label_filename: scalar('string'),
    is_shape_tensor: scalar('bool'),
    is_non_linear_format_io: scalar('bool'),
  },
};

const BatchInput: MessageSchema = {
  name: 'BatchInput',
  fields: {
    kind: enumField(
      enumOf('BatchInput.Kind', [
        'BATCH_ELEMENT_COUNT',
        'BATCH_ACCUMULATED_ELEMENT_COUNT',
        'BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO',
        'BATCH_MAX_ELEMENT_COUNT_AS_SHAPE',
        'BATCH_ITEM_SHAPE',
        'BATCH_ITEM_SHAPE_FLATTEN',
      ]),
    ),
    target_name: repeatedScalar('string'),
    data_type: dataType,
    source_input: repeatedScalar('string'),
  },
};

const BatchOutput: MessageSchema = {
  name: 'BatchOutput',
  fields: {
    target_name: repeatedScalar('string'),
    kind: enumField(enumOf('BatchOutput.Kind', ['BATCH_SCATTER_WITH_INPUT_SHAPE'])),
    source_input: repeatedScalar('string'),
  },
};

const ModelVersionPolicy: MessageSchema = {
  name: 'ModelVersionPolicy',
  fields: {
    latest: inOneof(
      'policy_choice',
      message({ name: 'ModelVersionPolicy.Latest', fields: { num_versions: scalar('uint32') } }),
    ),
    all: inOneof('policy_choice', message({ name: 'ModelVersionPolicy.All', fields: {} })),
    specific: inOneof(
      'policy_choice',
      message({ name: 'ModelVersionPolicy.Specific', fields: { versions: repeatedScalar('int64') } }),
    ),
  },
};

const CudaShape: MessageSchema = {
  name: 'ModelOptimizationPolicy.Cuda.GraphSpec.Shape',
  fields: { dim: repeatedScalar('int64') },
};

const CudaGraphSpec: MessageSchema = {
  name: 'ModelOptimizationPolicy.Cuda.GraphSpec',
  fields: {
    batch_size: scalar('int32'),
    input: mapField('InputEntry', 'string', CudaShape),
    graph_lower_bound: message({
      name: 'ModelOptimizationPolicy.Cuda.GraphSpec.LowerBound',
      fields: { batch_size: scalar('int32'), input: mapField('InputEntry', 'string', CudaShape) },
    }),
  },
};

const Accelerator: MessageSchema = {
  name: 'ModelOptimizationPolicy.ExecutionAccelerators.Accelerator',
  fields: { name: scalar('string'), parameters: mapField('ParametersEntry', 'string', 'string') },
};

const PinnedMemoryBuffer: MessageSchema = {
  name: 'ModelOptimizationPolicy.PinnedMemoryBuffer',
  fields: { enable: scalar('bool') },
};

const ModelOptimizationPolicy: MessageSchema = {
  name: 'ModelOptimizationPolicy',
  fields: {
    graph: message({ name: 'ModelOptimizationPolicy.Graph', fields: { level: scalar('int32') } }),
    priority: enumField(
      enumOf('ModelOptimizationPolicy.ModelPriority', ['PRIORITY_DEFAULT', 'PRIORITY_MAX', 'PRIORITY_MIN']),
    ),
    cuda: message({
      name: 'ModelOptimizationPolicy.Cuda',
      fields: {
        graphs: scalar('bool'),
        busy_wait_events: scalar('bool'),
        graph_spec: repeatedMessage(CudaGraphSpec),
        output_copy_stream: scalar('bool'),
      },
    }),
    execution_accelerators: message({
      name: 'ModelOptimizationPolicy.ExecutionAccelerators',
      fields: {
        gpu_execution_accelerator: repeatedMessage(Accelerator),
        cpu_execution_accelerator: repeatedMessage(Accelerator),
      },
    }),
    input_pinned_memory: message(PinnedMemoryBuffer),
    output_pinned_memory: message(PinnedMemoryBuffer),
    gather_kernel_buffer_threshold: scalar('uint32'),
    eager_batching: scalar('bool'),
  },
};

export const TIMEOUT_ACTION_ENUM: EnumSchema = enumOf('ModelQueuePolicy.TimeoutAction', ['REJECT', 'DELAY']);

const ModelQueuePolicy: MessageSchema = {
  name: 'ModelQueuePolicy',
  fields: {
    timeout_action: enumField(TIMEOUT_ACTION_ENUM),
    default_timeout_microseconds: scalar('uint64'),
    allow_timeout_override: scalar('bool'),
    max_queue_size: scalar('uint32'),
  },
};

const ModelDynamicBatching: MessageSchema = {
  name: 'ModelDynamicBatching',
  fields: {
    preferred_batch_size: repeatedScalar('int32'),
    max_queue_delay_microseconds: scalar('uint64'),
    preserve_ordering: scalar('bool'),
    priority_levels: scalar('uint64'),
    default_priority_level: scalar('uint64'),
    default_queue_policy: message(ModelQueuePolicy),
    priority_queue_policy: mapField('PriorityQueuePolicyEntry', 'uint64', ModelQueuePolicy),
  },
};

const SequenceControl: MessageSchema = {
  name: 'ModelSequenceBatching.Control',
  fields: {
    kind: enumField(
      enumOf('ModelSequenceBatching.Control.Kind', [
        'CONTROL_SEQUENCE_START',
        'CONTROL_SEQUENCE_READY',
        'CONTROL_SEQUENCE_END',
        'CONTROL_SEQUENCE_CORRID',
      ]),
    ),
    int32_false_true: repeatedScalar('int32'),
    fp32_false_true: repeatedScalar('float'),
    bool_false_true: repeatedScalar('bool'),
    data_type: dataType,
  },
};

const SequenceInitialState: MessageSchema = {
  name: 'ModelSequenceBatching.InitialState',
  fields: {
    data_type: dataType,
    dims: repeatedScalar('int64'),
    zero_data: inOneof('state_data', scalar('bool')),
    data_file: inOneof('state_data', scalar('string')),
    name: scalar('string'),
  },
};

const ModelSequenceBatching: MessageSchema = {
  name: 'ModelSequenceBatching',
  fields: {
    direct: inOneof(
      'strategy_choice',
      message({
        name: 'ModelSequenceBatching.StrategyDirect',
        fields: { max_queue_delay_microseconds: scalar('uint64'), minimum_slot_utilization: scalar('float') },
      }),
    ),
    oldest: inOneof(
      'strategy_choice',
      message({
        name: 'ModelSequenceBatching.StrategyOldest',
        fields: {
          max_candidate_sequences: scalar('int32'),
          preferred_batch_size: repeatedScalar('int32'),
          max_queue_delay_microseconds: scalar('uint64'),
          preserve_ordering: scalar('bool'),
        },
      }),
    ),
    max_sequence_idle_microseconds: scalar('uint64'),
    control_input: repeatedMessage({
      name: 'ModelSequenceBatching.ControlInput',
      fields: { name: scalar('string'), control: repeatedMessage(SequenceControl) },
    }),
    state: repeatedMessage({
      name: 'ModelSequenceBatching.State',
      fields: {
        input_name: scalar('string'),
        output_name: scalar('string'),
        data_type: dataType,
        dims: repeatedScalar('int64'),
        initial_state: repeatedMessage(SequenceInitialState),
        use_same_buffer_for_input_output: scalar('bool'),
        use_growable_memory: scalar('bool'),
      },
    }),
    iterative_sequence: scalar('bool'),
  },
};

const ModelEnsembling: MessageSchema = {
  name: 'ModelEnsembling',
  fields: {
    step: repeatedMessage({
      name: 'ModelEnsembling.Step',
      fields: {
        model_name: scalar('string'),
        model_version: scalar('int64'),
        input_map: mapField('InputMapEntry', 'string', 'string'),
        output_map: mapField('OutputMapEntry', 'string', 'string'),
        model_namespace: scalar('string'),
      },
    }),
    max_inflight_requests: scalar('uint32'),
  },
};

const ModelParameter: MessageSchema = {
  name: 'ModelParameter',
  fields: { string_value: scalar('string') },
};

const WarmupInput: MessageSchema = {
  name: 'ModelWarmup.Input',
  fields: {
    data_type: dataType,
    dims: repeatedScalar('int64'),
    zero_data: inOneof('input_data_type', scalar('bool')),
    random_data: inOneof('input_data_type', scalar('bool')),
    input_data_file: inOneof('input_data_type', scalar('string')),
  },
};

const ModelWarmup: MessageSchema = {
  name: 'ModelWarmup',
  fields: {
    name: scalar('string'),
    batch_size: scalar('uint32'),
    inputs: mapField('InputsEntry', 'string', WarmupInput),
    count: scalar('uint32'),
  },
};

const ModelMetrics: MessageSchema = {
  name: 'ModelMetrics',
  fields: {
    metric_control: repeatedMessage({
      name: 'ModelMetrics.MetricControl',
      fields: {
        metric_identifier: message({
          name: 'ModelMetrics.MetricControl.MetricIdentifier',
          fields: { family: scalar('string') },
        }),
        histogram_options: inOneof(
          'metric_options',
          message({
            name: 'ModelMetrics.MetricControl.HistogramOptions',
            fields: { buckets: repeatedScalar('double') },
          }),
        ),
      },
    }),
  },
};

export const MODEL_CONFIG_SCHEMA: MessageSchema = {
  name: 'ModelConfig',
  fields: {
    name: scalar('string'),
    platform: scalar('string'),
    backend: scalar('string'),
    runtime: scalar('string'),
    version_policy: message(ModelVersionPolicy),
    max_batch_size: scalar('int32'),
    input: repeatedMessage(ModelInput),
    output: repeatedMessage(ModelOutput),
    batch_input: repeatedMessage(BatchInput),
    batch_output: repeatedMessage(BatchOutput),
    optimization: message(ModelOptimizationPolicy),
    dynamic_batching: inOneof('scheduling_choice', message(ModelDynamicBatching)),
    sequence_batching: inOneof('scheduling_choice', message(ModelSequenceBatching)),
    ensemble_scheduling: inOneof('scheduling_choice', message(ModelEnsembling)),
    instance_group: repeatedMessage(ModelInstanceGroup),
    default_model_filename: scalar('string'),
    cc_model_filenames: mapField('CcModelFilenamesEntry', 'string', 'string'),
    metric_tags: mapField('MetricTagsEntry', 'string', 'string'),
    parameters: mapField('ParametersEntry', 'string', ModelParameter),
    model_warmup: repeatedMessage(ModelWarmup),
    model_operations: message({
      name: 'ModelOperations',
      fields: { op_library_filename: repeatedScalar('string') },
    }),
    model_transaction_policy: message({
      name: 'ModelTransactionPolicy',
      fields: { decoupled: scalar('bool') },
    }),
    model_repository_agents: message({
      name: 'ModelRepositoryAgents',
      fields: {
        agents: repeatedMessage({
          name: 'ModelRepositoryAgents.Agent',
          fields: { name: scalar('string'), parameters: mapField('ParametersEntry', 'string', 'string') },
        }),
      },
    }),
    response_cache: message({ name: 'ModelResponseCache', fields: { enable: scalar('bool') } }),
    model_metrics: message(ModelMetrics),
  },
};
