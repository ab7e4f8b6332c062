import { ConfigError, located, type SourcePosition } from './config-error.js';
import type { TextMessage } from './text-format/parser.js';
import { sourcePosition } from './text-format/positions.js';

type Msg = Record<string, unknown>;

/**
 * Config fields GE Mesh parses but does not honour. A field that changes
 * what a model computes or how it answers is refused at load, so a model
 * never runs without it unnoticed; a placement or tooling field that
 * GE-backend and Triton configs routinely carry loads with a warning saying
 * how it is read. One table, so the README's list and the code agree.
 */
interface Rule {
  /** Dotted path below ModelConfig; `instance_group[]` applies to every group. */
  readonly field: string;
  /** Only when this returns true for the field's value (e.g. `enable: true`). */
  readonly when?: (value: unknown) => boolean;
  readonly action: 'refuse' | 'warn';
  /** What the mesh does instead, or how to change the config. */
  readonly say: string;
}

const isTrue = (field: string) => (v: unknown) => (v as Msg | undefined)?.[field] === true;
const nonEmpty = (v: unknown) => (Array.isArray(v) ? v.length > 0 : v !== undefined);

export const UNHONOURED_FIELDS: readonly Rule[] = [
  {
    field: 'sequence_batching',
    action: 'refuse',
    say: 'GE Mesh has no sequence batcher, so a stateful model would lose its sequence state; serve a stateless model with dynamic_batching instead',
  },
  {
    field: 'model_transaction_policy',
    when: isTrue('decoupled'),
    action: 'refuse',
    say: 'decoupled models (several responses per request) are not served; set decoupled: false',
  },
  {
    field: 'batch_input',
    when: nonEmpty,
    action: 'refuse',
    say: 'batch inputs (ragged batching) are not assembled by the mesh; remove batch_input',
  },
  {
    field: 'batch_output',
    when: nonEmpty,
    action: 'refuse',
    say: 'batch outputs (scatter by input shape) are not supported; remove batch_output',
  },
  {
    field: 'model_operations',
    action: 'refuse',
    say: 'custom operator libraries are not loaded; build the operators into the model or remove model_operations',
  },
  {
    field: 'model_repository_agents',
    action: 'refuse',
    say: 'repository agents (checksums, decryption) are not run; remove model_repository_agents',
  },
  {
    field: 'instance_group[].rate_limiter',
    action: 'refuse',
    say: "the rate limiter is not implemented; bound a model's work with instance_group.count and max_queue_size instead",
  },
  {
    field: 'instance_group[].passive',
    when: (v) => v === true,
    action: 'refuse',
    say: 'passive instances are not supported; remove passive: true',
  },
  {
    field: 'instance_group[].kind',
    when: (v) => v === 'KIND_GPU' || v === 'KIND_MODEL',
    action: 'warn',
    say: 'read as KIND_AUTO: each instance is a lane on every device its workers lease (NPU streams or CPU lanes)',
  },
  {
    field: 'instance_group[].gpus',
    when: nonEmpty,
    action: 'warn',
    say: "ignored: the devices a model runs on are its workers' leases (and the GE backend's device_ids parameter)",
  },
  { field: 'instance_group[].profile', when: nonEmpty, action: 'warn', say: 'ignored (TensorRT profiles)' },
  {
    field: 'instance_group[].secondary_devices',
    when: nonEmpty,
    action: 'warn',
    say: 'ignored (NVDLA devices)',
  },
  // TensorRT-only tensor flags, on inputs and outputs alike.
  ...(['input', 'output'] as const).flatMap((io): Rule[] =>
    ['is_shape_tensor', 'is_non_linear_format_io'].map((flag) => ({
      field: `${io}[].${flag}`,
      when: (v) => v === true,
      action: 'refuse',
      say: `a TensorRT feature, which Triton refuses on other platforms too; remove ${flag}`,
    })),
  ),
  {
    field: 'input[].allow_ragged_batch',
    when: (v) => v === true,
    action: 'warn',
    say: 'ignored: requests of different shapes are batched apart (or padded to a gear), never concatenated',
  },
  {
    field: 'instance_group[].host_policy',
    when: (v) => v !== undefined && v !== '',
    action: 'warn',
    say: 'ignored: lanes run on the devices their worker leases',
  },
  { field: 'optimization', action: 'warn', say: 'ignored: its accelerators and priorities are for other backends' },
  { field: 'cc_model_filenames', action: 'warn', say: 'ignored: default_model_filename is always read' },
  { field: 'metric_tags', action: 'warn', say: 'ignored: metrics carry model and version labels' },
  { field: 'model_metrics', action: 'warn', say: "ignored: histograms use the mesh's own buckets" },
];

/** Every place a rule's field is set: its dotted path, value and position. */
function occurrences(raw: Msg, field: string): { path: string; value: unknown; at: SourcePosition | undefined }[] {
  const [head, rest] = field.split('[].') as [string, string | undefined];
  if (rest === undefined) {
    return head in raw ? [{ path: head, value: raw[head], at: sourcePosition(raw, head) }] : [];
  }
  const groups = (raw[head] as Msg[] | undefined) ?? [];
  return groups.flatMap((g, i) =>
    rest in g ? [{ path: `${head}[${i}].${rest}`, value: g[rest], at: sourcePosition(g, rest) }] : [],
  );
}

/**
 * Refuses the first unhonoured field that changes a model's answers
 * (ConfigError naming file, line and field); returns one warning line per
 * field that is only read differently, located the same way.
 */
export function checkUnhonouredFields(raw: TextMessage, file: string): string[] {
  const found: { rule: Rule; path: string; at: SourcePosition | undefined }[] = [];
  for (const rule of UNHONOURED_FIELDS) {
    for (const o of occurrences(raw as Msg, rule.field)) {
      if (!rule.when || rule.when(o.value)) found.push({ rule, path: o.path, at: o.at });
    }
  }
  // In file order, as a reader meets them.
  const order = (at: SourcePosition | undefined) => (at ? at.line * 1e6 + at.column : 0);
  found.sort((a, b) => order(a.at) - order(b.at));
  const refused = found.find((f) => f.rule.action === 'refuse');
  if (refused) {
    throw new ConfigError({
      kind: 'invalid',
      file,
      position: refused.at,
      field: refused.path,
      detail: `${refused.path} is not supported: ${refused.rule.say}`,
    });
  }
  return found.map((f) => `${located(file, f.at)}: ${f.path} ${f.rule.say}`);
}
