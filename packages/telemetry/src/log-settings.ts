import type { Logger } from 'pino';

/** Triton's logging extension settings (GET/POST /v2/logging), as every service applies them. */
export interface LogSettings {
  readonly log_file: string;
  readonly log_info: boolean;
  readonly log_warning: boolean;
  readonly log_error: boolean;
  readonly log_verbose_level: number;
  readonly log_format: 'default' | 'ISO8601';
}

const RANK: Record<string, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: 100 };

/** The pino level that shows what the settings ask for: verbose 1 = debug, 2+ = trace. */
export function levelOfLogSettings(s: LogSettings): string {
  if (s.log_verbose_level >= 2) return 'trace';
  if (s.log_verbose_level >= 1) return 'debug';
  if (s.log_info) return 'info';
  if (s.log_warning) return 'warn';
  if (s.log_error) return 'error';
  return 'silent';
}

/** The settings a pino level stands for (what GET /v2/logging answers before any change). */
export function logSettingsOfLevel(level: string, format: LogSettings['log_format'] = 'default'): LogSettings {
  const r = RANK[level] ?? RANK.info;
  return {
    log_file: '',
    log_info: (r as number) <= 30,
    log_warning: (r as number) <= 40,
    log_error: (r as number) <= 50,
    log_verbose_level: level === 'trace' ? 2 : level === 'debug' ? 1 : 0,
    log_format: format,
  };
}

/** Whether a value read back from the shared settings has the shape (another version may have written it). */
export function isLogSettings(v: unknown): v is LogSettings {
  const s = v as Partial<LogSettings> | null;
  return (
    typeof s === 'object' &&
    s !== null &&
    typeof s.log_info === 'boolean' &&
    typeof s.log_warning === 'boolean' &&
    typeof s.log_error === 'boolean' &&
    typeof s.log_verbose_level === 'number'
  );
}

/** Triton's log_format for every line of this process: epoch ms ('default') or ISO 8601 UTC. */
let isoTime = false;

/** pino's `timestamp` option: reads the format in effect at each line, so log_format applies at runtime. */
export function logTimestamp(): string {
  return isoTime ? `,"time":"${new Date().toISOString()}"` : `,"time":${Date.now()}`;
}

/**
 * Sets the line time format and the logger's level from the settings, and
 * says so in the log: after the change when it shows more, before it when it
 * shows less (so the line is seen either way).
 */
export function applyLogSettings(log: Logger, s: LogSettings): void {
  isoTime = s.log_format === 'ISO8601';
  const next = levelOfLogSettings(s);
  if (next === log.level) return;
  const line = { logLevel: next, verbose: s.log_verbose_level };
  if ((RANK[next] ?? 30) <= 30) {
    log.level = next;
    log.info(line, 'log level set');
  } else {
    log.info(line, 'log level set');
    log.level = next;
  }
}
