import { COMMON_OPTIONS, loadSettings, type SettingsSpec, Type } from '@ge-mesh/settings';

export const GATEWAY_OPTIONS = {
  ...COMMON_OPTIONS,
  host: {
    kind: 'string',
    default: '0.0.0.0',
    doc: 'Address the HTTP server listens on.',
  },
  httpPort: {
    kind: 'integer',
    default: 8000,
    doc: "KServe v2 REST port (Triton's default).",
    schema: Type.Integer({ minimum: 0, maximum: 65535 }),
  },
  requestTimeoutMs: {
    kind: 'integer',
    default: 60_000,
    doc: 'Deadline of a request from acceptance to answer; past it the request is answered 503 "Request timeout expired".',
    schema: Type.Integer({ minimum: 1, maximum: 3_600_000 }),
  },
  maxBodyBytes: {
    kind: 'integer',
    default: 64 * 1024 * 1024,
    doc: "Largest request body (HTTP body or AMQP message), in bytes, before and after gzip/deflate decompression (Triton's --http-max-input-size default: 64 MiB). Larger ones get 413.",
    schema: Type.Integer({ minimum: 1024 }),
  },
  maxTensorElements: {
    kind: 'integer',
    default: 16 * 1024 * 1024,
    doc: 'Most elements one input tensor may declare; a larger shape is refused with 400 TENSOR_TOO_LARGE before any data is read.',
    schema: Type.Integer({ minimum: 1 }),
  },
  apiKeys: {
    kind: 'string',
    default: '',
    doc: "API keys, entries separated by ';': '<key> [models=<model>,<model>|*] [admin]'. With no key (here or in --api-keys-file), every endpoint is open.",
    schema: Type.String(),
  },
  apiKeysFile: {
    kind: 'string',
    default: '',
    doc: "A file of API keys, one entry per line in the --api-keys form, '#' comments.",
    schema: Type.String(),
  },
  allowMetrics: {
    kind: 'boolean',
    default: true,
    doc: 'Serve Prometheus metrics on --metrics-port (GEMESH_ALLOW_METRICS=false turns them off).',
  },
  metricsHost: {
    kind: 'string',
    default: '0.0.0.0',
    doc: 'Address the metrics server listens on.',
  },
  metricsPort: {
    kind: 'integer',
    default: 8002,
    doc: "Prometheus metrics port, GET /metrics (Triton's default); 0 picks a free port.",
    schema: Type.Integer({ minimum: 0, maximum: 65535 }),
  },
  amqpIngress: {
    kind: 'boolean',
    default: true,
    doc: 'Consume the public AMQP ingress queue <namespace>.infer.requests (GEMESH_AMQP_INGRESS=false turns it off).',
  },
  amqpPrefetch: {
    kind: 'integer',
    default: 128,
    doc: 'AMQP ingress requests one gateway works on at once.',
    schema: Type.Integer({ minimum: 1, maximum: 65535 }),
  },
} as const satisfies SettingsSpec;

export const loadGatewaySettings = (argv?: string[]) => loadSettings('gateway', GATEWAY_OPTIONS, argv);
export type GatewaySettings = ReturnType<typeof loadGatewaySettings>;
