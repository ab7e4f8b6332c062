import { Counter, Gauge, type Registry } from 'prom-client';

/** A dependency's connection, as the service sees it. */
export interface ConnectionState {
  readonly connected: boolean;
  readonly reconnects: number;
}

/**
 * Connection health of a service's dependencies (`broker`, `redis`), read
 * when scraped: 1/0 connected, and reconnections since the service started.
 */
export function registerConnectionMetrics(registry: Registry, deps: Record<string, ConnectionState>): void {
  new Gauge({
    name: 'gemesh_dependency_connected',
    help: 'Whether the service is connected to the dependency (1) or reconnecting (0).',
    labelNames: ['dependency'],
    registers: [registry],
    collect() {
      for (const [dependency, d] of Object.entries(deps)) this.set({ dependency }, d.connected ? 1 : 0);
    },
  });
  const seen = new Map<string, number>();
  new Counter({
    name: 'gemesh_dependency_reconnects_total',
    help: 'Reconnections to the dependency since the service started.',
    labelNames: ['dependency'],
    registers: [registry],
    collect() {
      for (const [dependency, d] of Object.entries(deps)) {
        this.inc({ dependency }, d.reconnects - (seen.get(dependency) ?? 0));
        seen.set(dependency, d.reconnects);
      }
    },
  });
}
