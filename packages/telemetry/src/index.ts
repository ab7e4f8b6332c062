import { type Logger, pino } from 'pino';
import PinoPretty from 'pino-pretty';

import { logTimestamp } from './log-settings.js';

export * from './log-settings.js';
export type { Logger };

/** json: one JSON object per line (for collectors); pretty: readable lines; auto: pretty on a terminal. */
export type LogFormat = 'auto' | 'json' | 'pretty';

/** Fields every line carries that a person reading a terminal does not need. */
const PRETTY_IGNORE = 'pid,hostname,service,name';

/**
 * One logger per service; child loggers carry the component. JSON unless
 * stdout is a terminal (or `format` says otherwise): a person reads a
 * terminal, a collector reads everything else.
 */
export function createLogger(
  service: string,
  level = process.env.GEMESH_LOG_LEVEL ?? 'info',
  format: LogFormat = (process.env.GEMESH_LOG_FORMAT as LogFormat | undefined) ?? 'auto',
): Logger {
  const options = { name: service, level, base: { service, pid: process.pid }, timestamp: logTimestamp };
  const pretty = format === 'pretty' || (format === 'auto' && process.stdout.isTTY === true);
  if (!pretty) return pino(options);
  return pino(
    options,
    PinoPretty.build({
      sync: true,
      colorize: process.stdout.isTTY === true,
      ignore: PRETTY_IGNORE,
      translateTime: 'SYS:HH:MM:ss.l',
      singleLine: true,
    }),
  );
}

/**
 * Turns a service's JSON log line into a readable one (the launcher shows
 * its services' output this way on a terminal); other lines pass unchanged.
 */
export function prettyLogLine(colorize: boolean): (line: string) => string {
  const pretty = PinoPretty.prettyFactory({
    colorize,
    ignore: PRETTY_IGNORE,
    translateTime: 'SYS:HH:MM:ss.l',
    singleLine: true,
  });
  return (line) => {
    if (!line.startsWith('{')) return line;
    try {
      return pretty(JSON.parse(line)).replace(/\n$/, '');
    } catch {
      return line;
    }
  };
}
