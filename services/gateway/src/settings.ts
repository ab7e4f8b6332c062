import {
  COMMON_OPTIONS,
  loadSettingsOrExit,
  METRICS_PORTS,
  metricsOptions,
  type SettingsSpec,
  Type,
} from '@ge-mesh/settings';

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
  grpc: {
    kind: 'boolean',
    default: true,
    doc: 'Serve the KServe v2 / Triton gRPC API (inference.GRPCInferenceService and grpc.health.v1.Health) on --grpc-port (GEMESH_GRPC=false turns it off).',
  },
  grpcHost: {
    kind: 'string',
    default: '0.0.0.0',
    doc: 'Address the gRPC server listens on.',
  },
  grpcPort: {
    kind: 'integer',
    default: 8001,
    doc: "KServe v2 gRPC port (Triton's default); 0 picks a free port.",
    schema: Type.Integer({ minimum: 0, maximum: 65535 }),
  },
  grpcMaxMessageBytes: {
    kind: 'integer',
    default: 64 * 1024 * 1024,
    doc: 'Largest gRPC message received or sent, in bytes (default 64 MiB: a batch of 16 ResNet 224x224 FP32 images is 9.6 MiB). Larger ones get RESOURCE_EXHAUSTED.',
    schema: Type.Integer({ minimum: 1024, maximum: 2 ** 31 - 1 }),
  },
  grpcKeepaliveTimeMs: {
    kind: 'integer',
    default: 7_200_000,
    doc: "How often the server pings an idle gRPC connection (Triton's --grpc-keepalive-time default: 2 h).",
    schema: Type.Integer({ minimum: 1000 }),
  },
  grpcKeepaliveTimeoutMs: {
    kind: 'integer',
    default: 20_000,
    doc: "How long a keepalive ping may go unanswered before the connection is closed (Triton's default: 20 s).",
    schema: Type.Integer({ minimum: 100 }),
  },
  grpcDrainMs: {
    kind: 'integer',
    default: 10_000,
    doc: 'On shutdown, how long open gRPC calls and streams get to finish before they are cut.',
    schema: Type.Integer({ minimum: 0, maximum: 600_000 }),
  },
  tlsCert: {
    kind: 'string',
    default: '',
    doc: 'PEM certificate chain: with --tls-key, REST is served over HTTPS and gRPC over TLS.',
    schema: Type.String(),
  },
  tlsKey: {
    kind: 'string',
    default: '',
    doc: 'PEM private key of --tls-cert.',
    schema: Type.String(),
  },
  tlsClientCa: {
    kind: 'string',
    default: '',
    doc: 'PEM CA bundle: when set (with TLS on), REST and gRPC clients must present a certificate it signed.',
    schema: Type.String(),
  },
  responseCacheBytes: {
    kind: 'integer',
    default: 64 * 1024 * 1024,
    doc: "Size of the response cache shared by the namespace's gateways in Redis, for models with response_cache { enable: true } (Triton's --cache-config local,size=N); the least recently used answers go first. 0 turns it off.",
    schema: Type.Integer({ minimum: 0 }),
  },
  responseCacheTtlSecs: {
    kind: 'integer',
    default: 600,
    doc: 'How long a cached answer may be served after it was stored, seconds.',
    schema: Type.Integer({ minimum: 1, maximum: 30 * 86_400 }),
  },
  largeRequestBytes: {
    kind: 'integer',
    default: 0,
    doc: 'Fast mode: a request whose tensors reach this many bytes travels beside its message, through Redis, so RabbitMQ and the batcher carry only its envelope and the bytes cross the network twice instead of four times (pays where the broker is the bottleneck; on one host it costs more CPU than it saves). 0, the default, keeps every request whole in its message (as the durable mode always does).',
    schema: Type.Integer({ minimum: 0 }),
  },
  bundleRequests: {
    kind: 'boolean',
    default: true,
    doc: "Fast mode: a model's small requests published in the same turn of the gateway's event loop travel to its batcher as one broker message (GEMESH_BUNDLE_REQUESTS=false sends each alone).",
  },
  repositoryPollSecs: {
    kind: 'integer',
    default: 15,
    doc: "With --model-control-mode poll: seconds between rescans of the model repository (Triton's --repository-poll-secs).",
    schema: Type.Integer({ minimum: 1, maximum: 86_400 }),
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
  ...metricsOptions(METRICS_PORTS.gateway),
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

export const loadGatewaySettings = (argv?: string[]) => loadSettingsOrExit('gateway', GATEWAY_OPTIONS, argv);
export type GatewaySettings = ReturnType<typeof loadGatewaySettings>;
