import { COMMON_OPTIONS, loadSettings, type SettingsSpec, Type } from '@ge-mesh/settings';

export const BATCHER_OPTIONS = {
  ...COMMON_OPTIONS,
  models: {
    kind: 'string',
    default: '*',
    doc: 'Comma-separated models to batch, or * for every model of the repository.',
  },
  stagedBatches: {
    kind: 'integer',
    default: 2,
    doc: "Batches allowed to wait in a model's batch queue for a free lane before the batcher holds new ones back (Triton stages up to 2 per instance).",
    schema: Type.Integer({ minimum: 0, maximum: 64 }),
  },
} as const satisfies SettingsSpec;

export const loadBatcherSettings = (argv?: string[]) => loadSettings('batcher', BATCHER_OPTIONS, argv);
export type BatcherSettings = ReturnType<typeof loadBatcherSettings>;
