import {
  type FieldSchema,
  type MessageSchema,
  MODEL_CONFIG_SCHEMA,
  type RepositoryModel,
  type TensorConfig,
  type TextMessage,
} from '@ge-mesh/model-repository';
import { configTypeOf } from '@ge-mesh/protocol';

/**
 * `GET /v2/models/{m}/config`: the model's ModelConfig as Triton prints it
 * (core ModelConfigToJson: protobuf JSON with proto field names, every
 * primitive, repeated and map field printed even at its default, unset
 * sub-messages and oneof members left out, enums by name), after the
 * completion Triton applies when it loads a model:
 *
 * - inputs and outputs the config leaves out are read from the model file;
 * - version_policy defaults to latest { num_versions: 1 };
 * - dynamic_batching.preferred_batch_size (and sequence_batching.oldest's)
 *   default to [max_batch_size]; max_sequence_idle_microseconds to 1 s;
 * - optimization gets input/output_pinned_memory { enable: true };
 * - an onnxruntime model gets platform "onnxruntime_onnx";
 * - instance groups get names, and KIND_AUTO resolves to KIND_CPU for the CPU
 *   runtime (KIND_MODEL for the NPU one, which places instances itself).
 *   Counts are what GE Mesh runs (one lane per instance), not Triton's CPU
 *   default of 2.
 *
 * Protobuf prints 64-bit integers as strings; Triton turns a fixed list of
 * them back into numbers, and so does this. The ones it misses (cuda graph
 * dims, secondary device ids, sequence initial_state dims) stay strings,
 * exactly as Triton leaves them. Map keys are strings, as JSON requires.
 *
 * Written by hand: it reproduces one program's output (protobuf's JSON
 * printer plus Triton's fix-ups) over this repository's schema table.
 */
export function modelConfigJson(model: RepositoryModel): Record<string, unknown> {
  return printMessage(MODEL_CONFIG_SCHEMA, completed(model), '') as Record<string, unknown>;
}

// Paths (schema field names, '*' for a map value) of 64-bit fields Triton prints as numbers.
const INT64_AS_NUMBER = new Set([
  'input.dims',
  'input.reshape.shape',
  'output.dims',
  'output.reshape.shape',
  'version_policy.specific.versions',
  'dynamic_batching.max_queue_delay_microseconds',
  'dynamic_batching.priority_levels',
  'dynamic_batching.default_priority_level',
  'dynamic_batching.default_queue_policy.default_timeout_microseconds',
  'dynamic_batching.priority_queue_policy.*.default_timeout_microseconds',
  'sequence_batching.max_sequence_idle_microseconds',
  'sequence_batching.oldest.max_queue_delay_microseconds',
  'sequence_batching.direct.max_queue_delay_microseconds',
  'sequence_batching.state.dims',
  'ensemble_scheduling.step.model_version',
  'model_warmup.inputs.*.dims',
]);

type Msg = Record<string, unknown>;

/** Triton's default max_sequence_idle_microseconds. */
const SEQUENCE_IDLE_DEFAULT_US = 1_000_000;

function completed(model: RepositoryModel): Msg {
  const c = model.config;
  const raw = c.raw as TextMessage;
  const msg: Msg = { ...raw, name: model.name, backend: c.backend };
  // The typed config holds the completed platform; a custom backend's stays unset, as in Triton.
  if (c.runtime === 'ort' && !raw.platform) msg.platform = c.platform;
  if (!raw.version_policy) msg.version_policy = { latest: { num_versions: 1 } };
  // An ensemble has no model file; Triton leaves the field empty.
  msg.default_model_filename = c.ensemble ? '' : c.defaultModelFilename;
  msg.input = c.input.map((t) => tensorMessage(t, byName(raw.input, t.name), 'input'));
  msg.output = c.output.map((t) => tensorMessage(t, byName(raw.output, t.name), 'output'));

  const db = raw.dynamic_batching as Msg | undefined;
  if (db) {
    const preferred = (db.preferred_batch_size as number[] | undefined) ?? [];
    msg.dynamic_batching = {
      ...db,
      preferred_batch_size: preferred.length === 0 && c.maxBatchSize > 0 ? [c.maxBatchSize] : preferred,
    };
  }
  const sb = raw.sequence_batching as Msg | undefined;
  if (sb) {
    const seq: Msg = { ...sb };
    if (!sb.max_sequence_idle_microseconds) seq.max_sequence_idle_microseconds = SEQUENCE_IDLE_DEFAULT_US;
    const oldest = sb.oldest as Msg | undefined;
    const preferred = (oldest?.preferred_batch_size as number[] | undefined) ?? [];
    if (oldest && preferred.length === 0 && c.maxBatchSize > 0) {
      seq.oldest = { ...oldest, preferred_batch_size: [c.maxBatchSize] };
    }
    msg.sequence_batching = seq;
  }
  if (!raw.ensemble_scheduling) {
    const opt = { ...((raw.optimization as Msg | undefined) ?? {}) };
    opt.input_pinned_memory ??= { enable: true };
    opt.output_pinned_memory ??= { enable: true };
    msg.optimization = opt;
    const rawGroups = (raw.instance_group as Msg[] | undefined) ?? [];
    msg.instance_group = c.instanceGroup.map((g, i) => ({
      ...(rawGroups[i] ?? {}),
      name: g.name,
      kind: g.kind === 'KIND_AUTO' ? (c.runtime === 'ort' ? 'KIND_CPU' : 'KIND_MODEL') : g.kind,
      count: g.count,
      gpus: [...g.gpus],
    }));
  }
  return msg;
}

function byName(list: unknown, name: string): Msg {
  return ((list as Msg[] | undefined) ?? []).find((t) => t.name === name) ?? {};
}

function tensorMessage(t: TensorConfig, raw: Msg, role: 'input' | 'output'): Msg {
  const msg: Msg = { ...raw, name: t.name, data_type: configTypeOf(t.dataType), dims: [...t.dims] };
  if (t.reshape !== undefined) msg.reshape = { shape: [...t.reshape] };
  if (role === 'input' && t.format !== undefined) msg.format = t.format;
  return msg;
}

function printMessage(schema: MessageSchema, msg: Msg, path: string): Msg {
  const out: Msg = {};
  for (const [name, field] of Object.entries(schema.fields)) {
    const value = msg[name];
    const at = path === '' ? name : `${path}.${name}`;
    // Unset sub-messages and oneof members are not printed.
    if (value === undefined && (field.oneof !== undefined || (field.kind === 'message' && !field.repeated))) continue;
    out[name] = printField(field, value, at);
  }
  return out;
}

function printField(field: FieldSchema, value: unknown, path: string): unknown {
  if (field.kind === 'map') {
    const entries = Object.entries((value as Msg | undefined) ?? {});
    const valueField = field.entry.fields.value as FieldSchema;
    return Object.fromEntries(entries.map(([k, v]) => [k, printSingle(valueField, v, `${path}.*`)]));
  }
  if (field.repeated) return ((value as unknown[] | undefined) ?? []).map((v) => printSingle(field, v, path));
  return printSingle(field, value, path);
}

function printSingle(field: FieldSchema, value: unknown, path: string): unknown {
  switch (field.kind) {
    case 'message':
      return printMessage(field.message, (value as Msg | undefined) ?? {}, path);
    case 'enum':
      return value ?? Object.keys(field.enum.values)[0];
    case 'string':
      return value ?? '';
    case 'bool':
      return value ?? false;
    case 'int32':
    case 'uint32':
      return value ?? 0;
    case 'double':
      return value ?? 0;
    case 'float':
      return shortestFloat((value as number | undefined) ?? 0);
    case 'int64':
    case 'uint64': {
      const n = (value as number | undefined) ?? 0;
      return INT64_AS_NUMBER.has(path) ? n : String(n);
    }
    case 'map':
      throw new Error('a map is never a single value');
  }
}

/** A float field as protobuf prints it: the shortest decimal that reads back as the same float32. */
export function shortestFloat(v: number): number {
  const f = Math.fround(v);
  if (!Number.isFinite(f) || Number.isInteger(f)) return f;
  for (let p = 1; p <= 9; p++) {
    const s = Number(f.toPrecision(p));
    if (Math.fround(s) === f) return s;
  }
  return f;
}
