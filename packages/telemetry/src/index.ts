import { type Logger, pino } from 'pino';

export type { Logger };

/** One JSON logger per service; child loggers carry the component. */
export function createLogger(service: string, level = process.env.GEMESH_LOG_LEVEL ?? 'info'): Logger {
  return pino({ name: service, level, base: { service, pid: process.pid } });
}

// Metrics live at '@ge-mesh/telemetry/metrics', so services that only log do not load prom-client.
