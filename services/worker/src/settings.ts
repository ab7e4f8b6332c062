import { COMMON_OPTIONS, loadSettings, type SettingsSpec, Type } from '@ge-mesh/settings';

export const WORKER_OPTIONS = {
  ...COMMON_OPTIONS,
  runtime: {
    kind: 'string',
    default: 'ort',
    doc: 'Runtime this worker executes models with: ort (onnxruntime on CPU) or ge (CANN GE on an NPU).',
    schema: Type.Union([Type.Literal('ort'), Type.Literal('ge')]),
  },
  deviceId: {
    kind: 'integer',
    default: 0,
    doc: 'Device this worker drives (the CPU counts as device 0).',
    schema: Type.Integer({ minimum: 0 }),
  },
  cpuThreads: {
    kind: 'integer',
    default: 0,
    doc: 'CPU cores the lanes of this worker share; 0 = all cores of the machine.',
    schema: Type.Integer({ minimum: 0 }),
  },
  geOptions: {
    kind: 'string',
    default: '{}',
    doc: 'Process-wide GEInitialize options as a JSON object (runtime ge), e.g. \'{"ge.exec.deviceId":"0"}\'; GE_NPU_CONFIG (JSON) is read too, these win.',
  },
  models: {
    kind: 'string',
    default: '*',
    doc: 'Comma-separated models to serve, or * for every model of the repository that uses this runtime.',
  },
} as const satisfies SettingsSpec;

export const loadWorkerSettings = (argv?: string[]) => loadSettings('worker', WORKER_OPTIONS, argv);
export type WorkerSettings = ReturnType<typeof loadWorkerSettings>;
