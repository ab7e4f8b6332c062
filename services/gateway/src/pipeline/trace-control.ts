import { MeshError } from '@ge-mesh/protocol';
import type { RuntimeSettings } from '@ge-mesh/store';
import type { Authorizer } from '../auth.js';

/** The section of the shared runtime settings the gateways follow. */
export const TRACE_SECTION = 'trace';

/**
 * Triton's trace settings as its trace extension answers them in OpenTelemetry mode (numbers as
 * strings): `log_frequency` and `trace_file` belong to Triton's own trace files and are left out,
 * as Triton leaves them out in that mode.
 */
export interface TraceSettings {
  readonly trace_level: string[];
  readonly trace_rate: string;
  readonly trace_count: string;
  readonly trace_mode: string;
}

type TraceField = 'trace_level' | 'trace_rate' | 'trace_count' | 'log_frequency';
/** A model's overrides; a field it lacks follows the global settings. */
type Overrides = Partial<Record<TraceField, string | string[]>>;
type Effective = TraceSettings & { readonly log_frequency: string };
interface Shared {
  global: Overrides;
  models: Record<string, Overrides>;
}

const LEVELS = new Set(['OFF', 'TIMESTAMPS', 'TENSORS']);

export interface TraceControlDeps {
  readonly auth: Authorizer;
  readonly runtime: RuntimeSettings;
  /** Whether this gateway exports traces (its OTEL_* configuration): the default trace level follows it. */
  readonly tracing: boolean;
  readonly knownModel: (name: string) => boolean;
}

/**
 * Triton's trace extension (GET/POST /v2/trace/setting and
 * /v2/models/<m>/trace/setting, gRPC TraceSetting), over OpenTelemetry:
 * the settings decide which requests a gateway starts a sampled trace for
 * (trace_level OFF: none; trace_rate N: one request in N; trace_count: that
 * many traces, then none), and the batcher and workers follow the sampled
 * flag each message carries. They are shared through Redis by every gateway
 * of the namespace; the counting is each gateway's own.
 */
export class TraceControl {
  private shared: Shared = { global: {}, models: {} };
  /** Per scope (a model with overrides, or the global settings): requests seen and traces left. */
  private counters = new Map<string, { seen: number; left: number }>();

  constructor(private readonly deps: TraceControlDeps) {}

  private defaults(): Effective {
    return {
      trace_level: [this.deps.tracing ? 'TIMESTAMPS' : 'OFF'],
      trace_rate: '1',
      trace_count: '-1',
      // Taken and kept, as Triton takes it in OpenTelemetry mode, but not shown.
      log_frequency: '0',
      trace_mode: 'opentelemetry',
    };
  }

  private effective(model?: string): Effective {
    return { ...this.defaults(), ...this.shared.global, ...(model ? this.shared.models[model] : {}) } as Effective;
  }

  private answer(model?: string): TraceSettings {
    const { trace_level, trace_rate, trace_count, trace_mode } = this.effective(model);
    return { trace_level, trace_rate, trace_count, trace_mode };
  }

  get(authorization: string | undefined, model?: string): TraceSettings {
    this.deps.auth.check(authorization, model);
    if (model !== undefined) this.requireModel(model);
    return this.answer(model);
  }

  /** An admin key changes them: a field set to null goes back to the global value (or the default). */
  async update(
    authorization: string | undefined,
    model: string | undefined,
    body: unknown,
    protocol: SettingsProtocol = 'http',
  ): Promise<TraceSettings> {
    this.deps.auth.requireAdmin(authorization);
    if (model !== undefined) this.requireModel(model);
    const changes = parseTraceChanges(body, protocol);
    const shared: Shared = { global: { ...this.shared.global }, models: { ...this.shared.models } };
    const scope: Overrides = { ...(model === undefined ? shared.global : shared.models[model]) };
    for (const [k, v] of Object.entries(changes) as [TraceField, string | string[] | null][]) {
      if (v === null) delete scope[k];
      else (scope as Record<string, unknown>)[k] = v;
    }
    if (model === undefined) shared.global = scope;
    else shared.models[model] = scope;
    try {
      await this.deps.runtime.write(TRACE_SECTION, shared);
    } catch {
      throw new MeshError('UNAVAILABLE', 'the trace settings could not be shared with the gateways; try again');
    }
    this.applyShared(shared);
    return this.answer(model);
  }

  /**
   * A change announced by any gateway: counting starts over. The announcement
   * of a change this gateway made (and applied already) changes nothing.
   */
  applyShared(value: unknown): void {
    const v = value as Partial<Shared> | null;
    if (typeof v !== 'object' || v === null || typeof v.global !== 'object' || typeof v.models !== 'object') return;
    const next = { global: v.global ?? {}, models: v.models ?? {} };
    if (JSON.stringify(next) === JSON.stringify(this.shared)) return;
    this.shared = next;
    this.counters.clear();
  }

  /** Whether a new request to `model` starts a sampled trace. */
  sample(model: string): boolean {
    const s = this.effective(model);
    if (s.trace_level.length === 0 || s.trace_level.includes('OFF')) return false;
    const scope = this.shared.models[model] && Object.keys(this.shared.models[model]).length > 0 ? model : '';
    let c = this.counters.get(scope);
    if (!c) {
      c = { seen: 0, left: Number(s.trace_count) };
      this.counters.set(scope, c);
    }
    c.seen++;
    if (c.seen % Math.max(1, Number(s.trace_rate)) !== 0) return false;
    if (c.left === 0) return false;
    if (c.left > 0) c.left--;
    return true;
  }

  private requireModel(model: string): void {
    if (!this.deps.knownModel(model))
      throw new MeshError('MODEL_NOT_FOUND', `Request for unknown model: '${model}' is not found`);
  }
}

/** Which of Triton's front ends a settings request came through: their texts differ slightly. */
export type SettingsProtocol = 'http' | 'grpc';

/**
 * Triton's checks of a trace setting request body, with the texts of its HTTP or gRPC front end.
 * More lenient than Triton's HTTP reader in one way: numbers may be JSON numbers and a single
 * level a bare string.
 */
export function parseTraceChanges(
  body: unknown,
  protocol: SettingsProtocol = 'http',
): Partial<Record<TraceField, string | string[] | null>> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new MeshError('INVALID_ARGUMENT', 'the trace settings must be a JSON object');
  }
  // Checked before every other setting, as Triton does.
  if (Object.hasOwn(body, 'trace_file')) {
    throw new MeshError(
      'UNSUPPORTED',
      'trace file location can not be updated through network protocol (traces go to the OTLP exporter: OTEL_EXPORTER_OTLP_ENDPOINT)',
    );
  }
  const out: Partial<Record<TraceField, string | string[] | null>> = {};
  for (const [key, raw] of Object.entries(body)) {
    if (key === 'trace_mode') {
      if (raw !== 'opentelemetry')
        throw new MeshError('INVALID_ARGUMENT', "trace_mode is 'opentelemetry' and cannot change");
      continue;
    }
    if (raw === null) {
      if (key !== 'trace_level' && key !== 'trace_rate' && key !== 'trace_count' && key !== 'log_frequency')
        throw new MeshError('INVALID_ARGUMENT', `unknown trace setting '${key}'`);
      out[key] = null;
      continue;
    }
    // gRPC sends every value as a list of strings; REST may send numbers too.
    const values = (Array.isArray(raw) ? raw : [raw]).map((x) => (typeof x === 'number' ? String(x) : x));
    if (!values.every((x) => typeof x === 'string'))
      throw new MeshError('INVALID_ARGUMENT', `expect '${key}' to be a string or a list of strings`);
    const strings = values as string[];
    if (key === 'trace_level') {
      const bad = strings.find((l) => !LEVELS.has(l));
      if (bad !== undefined || strings.length === 0)
        throw new MeshError('INVALID_ARGUMENT', `trace_level must be OFF, TIMESTAMPS or TENSORS, got '${bad ?? ''}'`);
      if (strings.includes('OFF') && strings.length > 1)
        throw new MeshError('INVALID_ARGUMENT', "Expect only one trace level 'OFF' is specified");
      out.trace_level = strings;
    } else if (key === 'trace_rate' || key === 'trace_count' || key === 'log_frequency') {
      if (strings.length > 1 && protocol === 'grpc')
        throw new MeshError('INVALID_ARGUMENT', `expect only 1 value for '${key}'`);
      const v = strings.join(',');
      if (strings.length !== 1 || !/^-?\d+$/.test(v))
        throw new MeshError('INVALID_ARGUMENT', `Unable to parse '${key}', got: ${v}`);
      const n = Number(v);
      if (key === 'trace_count') {
        const got = protocol === 'grpc' ? `got: ${v}` : `got:${v}`;
        if (n < -1)
          throw new MeshError('INVALID_ARGUMENT', `Unable to parse 'trace_count'. Expecting value >= -1, ${got}`);
      } else {
        const min = key === 'trace_rate' ? 1 : 0;
        if (n < min)
          throw new MeshError('INVALID_ARGUMENT', `${key} must be an integer of at least ${min}, got '${v}'`);
      }
      out[key] = String(n);
    } else {
      throw new MeshError('INVALID_ARGUMENT', `unknown trace setting '${key}'`);
    }
  }
  return out;
}
