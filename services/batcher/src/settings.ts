import {
  COMMON_OPTIONS,
  loadSettingsOrExit,
  METRICS_PORTS,
  metricsOptions,
  type SettingsSpec,
  Type,
} from '@ge-mesh/settings';

export const BATCHER_OPTIONS = {
  ...COMMON_OPTIONS,
  ...metricsOptions(METRICS_PORTS.batcher),
  models: {
    kind: 'string',
    default: '*',
    doc: 'Comma-separated models to batch, or * for every model of the repository.',
  },
  stagedBatches: {
    kind: 'integer',
    default: 1,
    doc: 'Batches per live worker lane that may wait in the batch queue for a lane, so a lane that finishes starts the next batch at once (Triton stages payloads ahead likewise). Only batches that cannot grow are staged; models with priority levels or a queue policy stage none, as in Triton.',
    schema: Type.Integer({ minimum: 0, maximum: 16 }),
  },
  policy: {
    kind: 'string',
    default: 'tier-aware',
    doc: "Batching policy: tier-aware (Triton's rules, plus the split that computes the fewest padded rows and no padded batch staged while lanes are busy) or triton (Triton's rules only; for comparisons).",
    schema: Type.Union([Type.Literal('tier-aware'), Type.Literal('triton')]),
  },
} as const satisfies SettingsSpec;

export const loadBatcherSettings = (argv?: string[]) => loadSettingsOrExit('batcher', BATCHER_OPTIONS, argv);
export type BatcherSettings = ReturnType<typeof loadBatcherSettings>;
