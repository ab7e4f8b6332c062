import { MeshError } from '@ge-mesh/protocol';
import type { RuntimeSettings } from '@ge-mesh/store';
import { applyLogSettings, isLogSettings, type Logger, type LogSettings, logSettingsOfLevel } from '@ge-mesh/telemetry';
import type { Authorizer } from '../auth.js';
import { JSON_TYPE } from '../infer/messages.js';
import type { SettingsProtocol } from './trace-control.js';

/** The section of the shared runtime settings every service follows. */
export const LOGGING_SECTION = 'logging';

export interface LoggingControlDeps {
  readonly auth: Authorizer;
  readonly runtime: RuntimeSettings;
  readonly log: Logger;
}

const BOOLEAN_FIELDS = ['log_info', 'log_warning', 'log_error'] as const;

/** Triton's texts for a log setting of the wrong type or value: TritonJson's over HTTP, its own over gRPC. */
interface LogSettingTexts {
  readonly bool: (key: string) => string;
  readonly uint: (key: string) => string;
  readonly string: (key: string) => string;
  readonly format: (value: string) => string;
}
const HTTP_TEXTS: LogSettingTexts = {
  bool: (_key: string) => JSON_TYPE.bool,
  uint: (_key: string) => JSON_TYPE.uint,
  string: (_key: string) => JSON_TYPE.string,
  format: (v: string) => `invalid argument for --log_format, got: ${v}`,
};
const GRPC_TEXTS: LogSettingTexts = {
  bool: (key) => `expect boolean for '${key}'`,
  uint: (key) => `expect int32 for '${key}'`,
  string: (key) => `expect string for '${key}'`,
  format: (v) => `invalid argument for log_format, got: ${v}`,
};
const FIELDS = new Set(['log_file', ...BOOLEAN_FIELDS, 'log_verbose_level', 'log_format']);

/**
 * Triton's logging extension (GET/POST /v2/logging, gRPC LogSettings): the
 * settings are stored in Redis and announced, and every service of the
 * namespace (gateways, batchers, workers) applies them to its log level.
 */
export class LoggingControl {
  private current: LogSettings;

  constructor(private readonly deps: LoggingControlDeps) {
    this.current = logSettingsOfLevel(deps.log.level);
  }

  /** Any valid key may read them. */
  get(authorization: string | undefined): LogSettings {
    this.deps.auth.check(authorization);
    return this.current;
  }

  /** An admin key changes them, for every service. */
  async update(
    authorization: string | undefined,
    body: unknown,
    protocol: SettingsProtocol = 'http',
  ): Promise<LogSettings> {
    this.deps.auth.requireAdmin(authorization);
    const next = mergeLogSettings(this.current, body, protocol);
    try {
      await this.deps.runtime.write(LOGGING_SECTION, next);
    } catch {
      throw new MeshError('UNAVAILABLE', 'the log settings could not be shared with the services; try again');
    }
    this.applyShared(next);
    return next;
  }

  /** A change announced by any gateway (this one included). */
  applyShared(value: unknown): void {
    if (!isLogSettings(value)) return;
    this.current = value;
    applyLogSettings(this.deps.log, value);
  }
}

/**
 * Triton's rules: a JSON object of known settings, each of its type (with TritonJson's texts); a
 * null value changes nothing; others keep their value. An unknown key is refused rather than
 * ignored, so a misspelt setting is not silently lost.
 */
export function mergeLogSettings(
  current: LogSettings,
  body: unknown,
  protocol: SettingsProtocol = 'http',
): LogSettings {
  const text = protocol === 'grpc' ? GRPC_TEXTS : HTTP_TEXTS;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new MeshError('INVALID_ARGUMENT', 'the log settings must be a JSON object');
  }
  const next: { -readonly [K in keyof LogSettings]: LogSettings[K] } = { ...current };
  for (const [key, value] of Object.entries(body)) {
    if (!FIELDS.has(key)) throw new MeshError('INVALID_ARGUMENT', `unknown log setting '${key}'`);
    if (value === null) continue;
    if ((BOOLEAN_FIELDS as readonly string[]).includes(key)) {
      if (typeof value !== 'boolean') throw new MeshError('INVALID_ARGUMENT', text.bool(key));
      next[key as (typeof BOOLEAN_FIELDS)[number]] = value;
    } else if (key === 'log_verbose_level') {
      if (!Number.isInteger(value) || (value as number) < 0) throw new MeshError('INVALID_ARGUMENT', text.uint(key));
      next.log_verbose_level = value as number;
    } else if (key === 'log_format') {
      if (typeof value !== 'string') throw new MeshError('INVALID_ARGUMENT', text.string(key));
      // Triton answers this with UNAVAILABLE; it is the client's mistake, so 400.
      if (value !== 'default' && value !== 'ISO8601') throw new MeshError('INVALID_ARGUMENT', text.format(value));
      next.log_format = value;
    } else if (key === 'log_file') {
      // The value read back is taken, so settings read, changed and sent back work.
      if (value !== '' && value !== current.log_file)
        throw new MeshError(
          'UNSUPPORTED',
          'log file location can not be updated through network protocol (every service logs to its standard output)',
        );
    }
  }
  return next;
}
