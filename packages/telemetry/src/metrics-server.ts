import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

export interface MetricsServer {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Serves a registry in Prometheus text format on `GET /metrics` (and
 * `/metrics/`), as Triton does on its metrics port; anything else is 404.
 */
export async function serveMetrics(registry: Registry, host: string, port: number): Promise<MetricsServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (req.method !== 'GET' || (path !== '/metrics' && path !== '/metrics/')) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not Found\n');
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
      () => res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics unavailable\n'),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** What serveMetricsOrWarn reports through (pino's shape). */
interface MetricsLog {
  error(obj: object, msg: string): void;
}

/**
 * serveMetrics, but a port already taken (a second replica on one host with
 * the default port) costs the metrics only: the service runs on, and says so.
 */
export async function serveMetricsOrWarn(
  registry: Registry,
  host: string,
  port: number,
  log: MetricsLog,
): Promise<MetricsServer | undefined> {
  try {
    return await serveMetrics(registry, host, port);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    log.error({ port }, 'metrics port in use: metrics not served (give this process its own --metrics-port, or 0)');
    return undefined;
  }
}
