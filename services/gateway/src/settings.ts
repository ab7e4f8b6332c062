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
    doc: "Largest request body accepted, in bytes (Triton's --http-max-input-size default: 64 MiB).",
    schema: Type.Integer({ minimum: 1024 }),
  },
} as const satisfies SettingsSpec;

export const loadGatewaySettings = (argv?: string[]) => loadSettings('gateway', GATEWAY_OPTIONS, argv);
export type GatewaySettings = ReturnType<typeof loadGatewaySettings>;
