import { parseArgs } from 'node:util';
import { type TSchema, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';

/**
 * Service settings: each option has a flag, an environment variable and a
 * documented default. Values are read once at startup (flag > env > default),
 * checked against a schema and frozen; a bad value stops the service with a
 * message naming the option, where it came from and what is allowed.
 */
export type OptionKind = 'string' | 'integer' | 'number' | 'boolean';

export interface OptionSpec<K extends OptionKind = OptionKind> {
  kind: K;
  doc: string;
  default: KindValue<K>;
  /** Extra constraints (minimum, pattern, enum …) as TypeBox options. */
  schema?: TSchema;
}

type KindValue<K extends OptionKind> = K extends 'string' ? string : K extends 'boolean' ? boolean : number;

export type SettingsSpec = Record<string, OptionSpec>;
export type Settings<S extends SettingsSpec> = { readonly [K in keyof S]: KindValue<S[K]['kind']> };

export class SettingsError extends Error {
  override name = 'SettingsError';
}

/** camelCase key → `--kebab-case` flag and `GEMESH_SNAKE_CASE` variable. */
export function flagOf(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}
export function envOf(key: string): string {
  return `GEMESH_${flagOf(key).replace(/-/g, '_').toUpperCase()}`;
}

function schemaOf(spec: OptionSpec): TSchema {
  if (spec.schema) return spec.schema;
  switch (spec.kind) {
    case 'string':
      return Type.String({ minLength: 1 });
    case 'integer':
      return Type.Integer();
    case 'number':
      return Type.Number();
    case 'boolean':
      return Type.Boolean();
  }
}

function coerce(kind: OptionKind, raw: string): unknown {
  if (kind === 'string') return raw;
  if (kind === 'boolean') {
    if (/^(1|true|yes|on)$/i.test(raw)) return true;
    if (/^(0|false|no|off)$/i.test(raw)) return false;
    return raw;
  }
  const n = Number(raw);
  return raw.trim() === '' || Number.isNaN(n) ? raw : n;
}

export function helpText<S extends SettingsSpec>(service: string, spec: S): string {
  const lines = [`Usage: ${service} [options]`, '', 'Options (flag, environment variable, default):'];
  for (const [key, o] of Object.entries(spec)) {
    lines.push(`  --${flagOf(key)}  (${envOf(key)}, default: ${JSON.stringify(o.default)})`);
    lines.push(`      ${o.doc}`);
  }
  return lines.join('\n');
}

export function loadSettings<S extends SettingsSpec>(
  service: string,
  spec: S,
  argv: string[] = process.argv.slice(2),
  env: NodeJS.ProcessEnv = process.env,
): Settings<S> {
  const options: Record<string, { type: 'string' | 'boolean' }> = { help: { type: 'boolean' } };
  for (const [key, o] of Object.entries(spec))
    options[flagOf(key)] = { type: o.kind === 'boolean' ? 'boolean' : 'string' };
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: argv, options, strict: true, allowPositionals: false });
  } catch (err) {
    const first = (err as Error).message.split('\n')[0]?.replace(/\. To specify a positional argument.*$/, '');
    throw new SettingsError(`${service}: ${first}; --help lists the options`);
  }
  if (parsed.values.help) {
    process.stdout.write(`${helpText(service, spec)}\n`);
    process.exit(0);
  }
  const out: Record<string, unknown> = {};
  for (const [key, o] of Object.entries(spec)) {
    const flag = parsed.values[flagOf(key)];
    const fromEnv = env[envOf(key)];
    let value: unknown = o.default;
    let source = 'default';
    if (flag !== undefined) {
      value = typeof flag === 'string' ? coerce(o.kind, flag) : flag;
      source = `--${flagOf(key)}`;
    } else if (fromEnv !== undefined && fromEnv !== '') {
      value = coerce(o.kind, fromEnv);
      source = envOf(key);
    }
    const schema = schemaOf(o);
    if (!Value.Check(schema, value)) {
      const first = [...Value.Errors(schema, value)][0];
      throw new SettingsError(
        `${service}: invalid value ${JSON.stringify(value)} for ${key} (from ${source}): ${first?.message ?? 'not allowed'}. ${o.doc}`,
      );
    }
    out[key] = value;
  }
  return Object.freeze(out) as Settings<S>;
}

/**
 * loadSettings for a service's main: a bad command line or value prints its
 * one-line message and exits 2, with no stack trace.
 */
export function loadSettingsOrExit<S extends SettingsSpec>(
  service: string,
  spec: S,
  argv?: string[],
  env?: NodeJS.ProcessEnv,
): Settings<S> {
  try {
    return loadSettings(service, spec, argv, env);
  } catch (err) {
    if (!(err instanceof SettingsError)) throw err;
    process.stderr.write(`${err.message}\n`);
    process.exit(2);
  }
}

/**
 * Whether a model the model control has no entry for yet (none of load,
 * unload) is loaded: every model, except in explicit mode only the
 * --load-model names. Workers, batchers and gateways decide alike.
 */
export function loadedAtStart(settings: { readonly modelControlMode: string; readonly loadModel: string }) {
  if (settings.modelControlMode !== 'explicit') return (_model: string) => true;
  const names = new Set(settings.loadModel.split(',').filter((n) => n !== ''));
  return (model: string) => names.has('*') || names.has(model);
}

/** Options every service shares. */
export const COMMON_OPTIONS = {
  namespace: {
    kind: 'string',
    default: 'gemesh',
    doc: 'Prefix of every exchange, queue and Redis key, so several meshes share one broker and one Redis.',
    schema: Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$' }),
  },
  rabbitmqUrl: {
    kind: 'string',
    default: 'amqp://guest:guest@127.0.0.1:5672',
    doc: 'RabbitMQ URL (amqp:// or amqps://).',
    schema: Type.String({ pattern: '^amqps?://' }),
  },
  redisUrl: {
    kind: 'string',
    default: 'redis://127.0.0.1:6379',
    doc: 'Redis URL: one node (redis://host:port or rediss:// for TLS), or a Redis Cluster (redis+cluster://host1:port1,host2:port2,... or rediss+cluster://; user:password@ before the nodes when needed; one reachable node is enough, the others are discovered).',
    schema: Type.String({ pattern: '^rediss?(\\+cluster)?://' }),
  },
  modelRepository: {
    kind: 'string',
    default: 'infra/model_repository',
    doc: 'Path of the Triton-layout model repository (<repo>/<model>/config.pbtxt, <repo>/<model>/<version>/model.onnx).',
  },
  modelControlMode: {
    kind: 'string',
    default: 'none',
    doc: "Triton's model control: none (every model of the repository loads at start; the repository API may still load and unload), explicit (only the --load-model names load at start; the rest by the repository API) or poll (every model loads at start, and the gateway rescans the repository every --repository-poll-secs, loading added and changed models and unloading removed ones; the repository API is refused). Every service of a mesh must use the same mode.",
    schema: Type.Union([Type.Literal('none'), Type.Literal('explicit'), Type.Literal('poll')]),
  },
  loadModel: {
    kind: 'string',
    default: '',
    doc: 'With --model-control-mode explicit: comma-separated models to load at start, or * for all of them.',
    schema: Type.String({ pattern: '^(\\*|[A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*)?$' }),
  },
  durability: {
    kind: 'string',
    default: 'fast',
    doc: "Request and batch hops: 'fast' (classic queues, transient messages: a process crash loses nothing, a broker crash fails the requests it held) or 'durable' (quorum queues, persistent messages: requests survive a broker restart). Every service of a mesh must use the same mode; each mode has its own queues.",
    schema: Type.Union([Type.Literal('fast'), Type.Literal('durable')]),
  },
  logLevel: {
    kind: 'string',
    default: 'info',
    doc: 'Log level: fatal, error, warn, info, debug or trace.',
    schema: Type.Union(['fatal', 'error', 'warn', 'info', 'debug', 'trace'].map((l) => Type.Literal(l))),
  },
  logFormat: {
    kind: 'string',
    default: 'auto',
    doc: 'Log lines: json (one JSON object per line), pretty (readable), or auto: pretty when stdout is a terminal, else json.',
    schema: Type.Union(['auto', 'json', 'pretty'].map((l) => Type.Literal(l))),
  },
} as const satisfies SettingsSpec;

/**
 * The Prometheus endpoint every service serves; `defaultPort` differs per
 * service so one machine runs the whole mesh with no flag (0 = a free port).
 */
export function metricsOptions(defaultPort: number) {
  return {
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
      default: defaultPort,
      doc: `Prometheus metrics port, GET /metrics (default ${defaultPort}); 0 picks a free port.`,
      schema: Type.Integer({ minimum: 0, maximum: 65535 }),
    },
  } as const satisfies SettingsSpec;
}

/** Default metrics ports: the gateway's is Triton's; the others follow it. */
export const METRICS_PORTS = { gateway: 8002, batcher: 8003, worker: 8004 } as const;

export * from './command-line.js';
export { Type };
