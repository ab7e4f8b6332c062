import {
  COMMON_OPTIONS,
  loadSettingsOrExit,
  METRICS_PORTS,
  metricsOptions,
  type SettingsSpec,
  Type,
} from '@ge-mesh/settings';

export const WORKER_OPTIONS = {
  ...COMMON_OPTIONS,
  ...metricsOptions(METRICS_PORTS.worker),
  runtime: {
    kind: 'string',
    default: 'ort',
    doc: 'Runtime this worker executes models with: ort (onnxruntime on CPU) or ge (CANN GE on an NPU).',
    schema: Type.Union([Type.Literal('ort'), Type.Literal('ge')]),
  },
  deviceId: {
    kind: 'integer',
    default: -1,
    doc: 'Device this worker drives; -1 = take free devices by lease (see --devices). An explicit id is leased too, and the worker waits while another live worker holds it.',
    schema: Type.Integer({ minimum: -1 }),
  },
  deviceIds: {
    kind: 'string',
    default: '',
    doc: 'Several explicit devices for one worker, comma-separated (e.g. 0,1); overrides --device-id and --devices.',
    schema: Type.String({ pattern: '^([0-9]+(,[0-9]+)*)?$' }),
  },
  devices: {
    kind: 'integer',
    default: 1,
    doc: 'How many free devices this worker leases when no id is given; it drives all of them.',
    schema: Type.Integer({ minimum: 1, maximum: 64 }),
  },
  deviceCount: {
    kind: 'integer',
    default: 0,
    doc: "Devices of this runtime on the machine that workers share by lease; 0 = detect (ge: ASCEND_RT_VISIBLE_DEVICES, else /dev/davinciN, else the simulator's GEMESH_SIM_DEVICES; ort: one CPU device per core, each CPU worker then gets its share of the cores).",
    schema: Type.Integer({ minimum: 0, maximum: 4096 }),
  },
  node: {
    kind: 'string',
    default: 'local',
    doc: 'Name of the machine whose devices this worker leases: workers on one machine must share it, workers on different machines must not.',
    schema: Type.String({ pattern: '^[A-Za-z0-9_.-]{1,128}$' }),
  },
  heartbeatMs: {
    kind: 'integer',
    default: 1_000,
    doc: 'Heartbeat period; the registry entry and the device leases lapse after 3 missed heartbeats.',
    schema: Type.Integer({ minimum: 100, maximum: 60_000 }),
  },
  drainTimeoutMs: {
    kind: 'integer',
    default: 30_000,
    doc: 'On SIGTERM, how long to wait for batches in hand to finish before exiting anyway (their batches are then redelivered).',
    schema: Type.Integer({ minimum: 0 }),
  },
  cpuThreads: {
    kind: 'integer',
    default: 0,
    doc: "CPU cores the lanes of this worker share; 0 = this worker's share of the machine (cores × devices held / device count).",
    schema: Type.Integer({ minimum: 0 }),
  },
  geOptions: {
    kind: 'string',
    default: '{}',
    doc: 'Process-wide GEInitialize options as a JSON object (runtime ge), e.g. \'{"ge.exec.deviceId":"0"}\'; GE_NPU_CONFIG (JSON) is read too, these win.',
  },
  geCompileCache: {
    kind: 'string',
    default: '',
    doc: "Folder of GE's compiled-graph cache (runtime ge), created if missing: every tier graph is compiled once per model file, tier and options, and a restarted or scaled-out worker loads it from there; '' = off. A model's session.ge.graph_compiler_cache_dir parameter wins.",
    schema: Type.String(),
  },
  models: {
    kind: 'string',
    default: '*',
    doc: 'Comma-separated models to serve, or * for every model of the repository that uses this runtime.',
  },
} as const satisfies SettingsSpec;

export const loadWorkerSettings = (argv?: string[]) => loadSettingsOrExit('worker', WORKER_OPTIONS, argv);
export type WorkerSettings = ReturnType<typeof loadWorkerSettings>;
