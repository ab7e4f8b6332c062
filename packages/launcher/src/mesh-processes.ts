import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

/**
 * Runs the mesh as separate OS processes (gateway, batcher, N workers)
 * against the local RabbitMQ and Redis: what `npm start` and the end-to-end
 * tests use, and what docker compose does with containers.
 */
export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const SERVICE_ENTRY = (s: string) => `${ROOT}services/${s}/src/main.ts`;

export type ServiceName = 'gateway' | 'batcher' | 'worker';

export interface MeshOptions {
  namespace: string;
  modelRepository: string;
  httpPort: number;
  workers?: number;
  /** Extra flags per service. */
  flags?: Partial<Record<ServiceName, string[]>>;
  env?: NodeJS.ProcessEnv;
  /** Where service output goes: inherit (prefixed lines) or a callback. */
  onLine?: (service: string, line: string) => void;
  logLevel?: string;
  /**
   * Start a worker again when it dies (a crash, a kill -9), as a process
   * supervisor or compose's restart policy would; a worker that exits 0
   * (drained on SIGTERM) stays down. Default true.
   */
  restartWorkers?: boolean;
}

export interface ServiceProcess {
  readonly name: string;
  readonly child: ChildProcess;
  /** Resolves when the process has exited. */
  readonly exited: Promise<number | null>;
}

export interface RunningMesh {
  readonly url: string;
  /** Every process; a restarted worker replaces its entry. */
  readonly services: ServiceProcess[];
  /** The worker processes now running or last started, by label (worker-0, worker-1, …). */
  workers(): ServiceProcess[];
  /** Workers started again after they died. */
  restarts(): number;
  /** SIGTERM every process and wait for it (SIGKILL after `graceMs`). */
  stop(graceMs?: number): Promise<void>;
}

export function startService(name: ServiceName, label: string, args: string[], opts: MeshOptions): ServiceProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', SERVICE_ENTRY(name), ...args], {
    cwd: ROOT,
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const onLine = opts.onLine ?? ((s, l) => process.stdout.write(`[${s}] ${l}\n`));
  for (const stream of [child.stdout, child.stderr]) {
    let rest = '';
    stream?.setEncoding('utf8');
    stream?.on('data', (chunk: string) => {
      const lines = (rest + chunk).split('\n');
      rest = lines.pop() ?? '';
      for (const l of lines) if (l.length > 0) onLine(label, l);
    });
  }
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  return { name: label, child, exited };
}

export async function waitForHttp(url: string, timeoutMs: number, isUp: (status: number) => boolean): Promise<void> {
  const until = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < until) {
    try {
      const res = await fetch(url);
      await res.arrayBuffer();
      if (isUp(res.status)) return;
      last = `HTTP ${res.status}`;
    } catch (err) {
      last = (err as Error).message;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} not up after ${timeoutMs} ms (${last})`);
}

export async function startMesh(opts: MeshOptions): Promise<RunningMesh> {
  const common = [
    '--namespace',
    opts.namespace,
    '--model-repository',
    opts.modelRepository,
    '--log-level',
    opts.logLevel ?? 'info',
  ];
  const services: ServiceProcess[] = [];
  let stopping = false;
  let started = false;
  let restarts = 0;
  // Workers announce readiness once every lane compiled and warmed its tiers.
  const workersReady = new Set<string>();
  let onWorkerReady: () => void = () => undefined;
  const allWorkersReady = new Promise<void>((r) => {
    onWorkerReady = r;
  });
  const userOnLine = opts.onLine ?? ((s: string, l: string) => process.stdout.write(`[${s}] ${l}\n`));
  opts = {
    ...opts,
    onLine: (svc, line) => {
      if (svc.startsWith('worker-') && line.includes('"msg":"worker ready"')) {
        workersReady.add(svc);
        if (workersReady.size === (opts.workers ?? 1)) onWorkerReady();
      }
      userOnLine(svc, line);
    },
  };
  const stop = async (graceMs = 10_000) => {
    stopping = true;
    await Promise.all(
      services.map(async (s) => {
        if (s.child.exitCode !== null || s.child.signalCode !== null) return;
        s.child.kill('SIGTERM');
        const t = setTimeout(() => s.child.kill('SIGKILL'), graceMs);
        await s.exited;
        clearTimeout(t);
      }),
    );
  };
  const workers = opts.workers ?? 1;
  const workerFlags = opts.flags?.worker ?? [];
  // Readiness is announced at info level: workers never log above info here.
  const workerLogLevel = ['fatal', 'error', 'warn'].includes(opts.logLevel ?? 'info') ? ['--log-level', 'info'] : [];
  // Workers lease their devices (no ids given). CPU workers split the cores into one device per worker.
  const cpu = !workerFlags.some((f, i) => f === '--runtime' && workerFlags[i + 1] === 'ge');
  const deviceCount = cpu && !workerFlags.includes('--device-count') ? ['--device-count', String(workers)] : [];
  const workerArgs = [...common, ...workerLogLevel, ...deviceCount, ...workerFlags];
  const superviseWorker = (label: string) => {
    const s = startService('worker', label, workerArgs, opts);
    const i = services.findIndex((x) => x.name === label);
    if (i >= 0) services[i] = s;
    else services.push(s);
    void s.exited.then((code) => {
      // A worker that fails while the mesh starts fails the start instead.
      if (!started || stopping || code === 0 || opts.restartWorkers === false) return;
      restarts++;
      (opts.onLine ?? userOnLine)(label, `exited with code ${code} (signal ${s.child.signalCode}); starting it again`);
      setTimeout(() => {
        if (!stopping) superviseWorker(label);
      }, 250);
    });
  };
  try {
    for (let i = 0; i < workers; i++) superviseWorker(`worker-${i}`);
    services.push(startService('batcher', 'batcher', [...common, ...(opts.flags?.batcher ?? [])], opts));
    services.push(
      startService(
        'gateway',
        'gateway',
        [...common, '--http-port', String(opts.httpPort), ...(opts.flags?.gateway ?? [])],
        opts,
      ),
    );
    const url = `http://127.0.0.1:${opts.httpPort}`;
    const failed = Promise.race(
      services.map((s) =>
        s.exited.then((code) => Promise.reject(new Error(`${s.name} exited with code ${code} during start`))),
      ),
    );
    // The gateway is ready once every wanted model has a ready worker: wait for the workers first.
    await Promise.race([
      allWorkersReady.then(() => waitForHttp(`${url}/v2/health/ready`, 120_000, (st) => st === 200)),
      failed,
    ]);
    failed.catch(() => undefined);
    started = true;
    return {
      url,
      services,
      stop,
      workers: () => services.filter((s) => s.name.startsWith('worker-')),
      restarts: () => restarts,
    };
  } catch (err) {
    await stop(2_000);
    throw err;
  }
}
