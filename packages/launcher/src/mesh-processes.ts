import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { prettyLogLine } from '@ge-mesh/telemetry';
import { Backoff, type BackoffOptions, DEFAULT_BACKOFF } from './backoff.js';

/**
 * Runs the mesh as separate OS processes (gateway, batcher, N workers)
 * against the local RabbitMQ and Redis: what `npm start` and the end-to-end
 * tests use, and what docker compose does with containers.
 */
export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const SERVICE_ENTRY = (s: string) => `${ROOT}services/${s}/src/main.ts`;

/**
 * V8 flags every service runs with (the Dockerfile's CMDs carry the same).
 * --single-threaded-gc: V8's parallel and concurrent GC helper threads wake
 * the main thread through the event loop for every task they finish; on a
 * host whose few cores the services share, those wakeups cost more than the
 * parallel work saves. Measured on resnet18 through the mesh (2 cores,
 * test/bench/profile.ts counters): write syscalls per request from 150–230 to
 * 6–34 in the gateway, batcher and worker, CPU per request 14–19 % lower; no
 * change on tiny. On a host with cores to spare per service, drop it.
 *
 * --no-incremental-marking: a 600 KB request leaves several short-lived
 * buffers in every process it crosses (socket reads, frames, messages). V8
 * counts them as external memory and, every 64 MB of it, starts an
 * incremental full GC, although the next scavenge would free them: with
 * resnet18 requests that was a mark-compact every ~10 requests in each service,
 * 40–70 ms of marking in small steps each, ~40 % of the batcher's CPU. Without
 * incremental marking that pressure is left to the scavenges, and a full GC
 * runs only when the old generation fills, in one pause (tens of ms on these
 * services' ~16 MB heaps). Measured side by side (test/bench/compare-revisions.ts):
 * resnet18 at c=16 37 → 53 infer/s, 47.9 → 32.4 ms CPU per request; tiny, whose
 * requests leave no such buffers, 10–15 % fewer infer/s at c=64, 0–10 % at
 * c=16, none at c=1 (two runs), all of it in the worker, whose flag also earns
 * a fifth of resnet18's gain. Images are what the mesh carries most; for a
 * mesh serving only small inputs at its peak, `--incremental-marking` after
 * these flags undoes it.
 */
export const SERVICE_NODE_FLAGS: readonly string[] = ['--single-threaded-gc', '--no-incremental-marking'];

export type ServiceName = 'gateway' | 'batcher' | 'worker';

/**
 * Which processes are started again when they exit once the mesh is up:
 * - `workers`: workers that die (a crash, a kill -9); one that exits 0 (drained on SIGTERM) stays
 *   down, and a dead gateway or batcher stays dead, so a test can take one out on purpose;
 * - `all`: every process, whatever its exit, as a process supervisor would (`npm start`): the mesh
 *   stops only when `stop()` is called;
 * - `none`: nothing.
 */
export type RestartScope = 'workers' | 'all' | 'none';

/** One restart decided by the launcher (the process is spawned again after `delayMs`). */
export interface RestartEvent {
  /** The service's label: gateway, batcher, worker-0, … */
  service: string;
  code: number | null;
  signal: NodeJS.Signals | null;
  /** How long the process ran before it exited. */
  upMs: number;
  /** 1 after a healthy run, then counting while the service keeps dying early. */
  attempt: number;
  delayMs: number;
}

export interface MeshOptions {
  namespace: string;
  modelRepository: string;
  httpPort: number;
  /** The gateway's gRPC port; absent = a free port the system picks (meshes side by side never clash on 8001). */
  grpcPort?: number;
  workers?: number;
  /**
   * Metrics port of worker-0; worker i serves this + i (the services' own
   * defaults would put every worker on one port). Absent: the services' settings decide.
   */
  workerMetricsPort?: number;
  /** Extra flags per service. */
  flags?: Partial<Record<ServiceName, string[]>>;
  env?: NodeJS.ProcessEnv;
  /** Where service output goes: inherit (prefixed lines) or a callback. */
  onLine?: (service: string, line: string) => void;
  logLevel?: string;
  /** Extra Node.js flags for every service (e.g. --cpu-prof, which NODE_OPTIONS refuses). */
  nodeArgs?: string[];
  /** What is started again when it exits (default `workers`). */
  restart?: RestartScope;
  /** Restart delays per service (default 0.5 s doubling to 15 s, reset after 30 s up). */
  backoff?: BackoffOptions;
  /** Told of every restart; the launcher also logs one line per restart under the label `launcher`. */
  onRestart?: (event: RestartEvent) => void;
  /** Aborting it while the mesh starts stops what was started and rejects the start. */
  signal?: AbortSignal;
  /** `false` is `restart: 'none'` (kept for existing callers). */
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
  /** Every process; a restarted one replaces its entry. */
  readonly services: ServiceProcess[];
  /** The worker processes now running or last started, by label (worker-0, worker-1, …). */
  workers(): ServiceProcess[];
  /** Restarts decided so far, of one service (by label) or of all. */
  restarts(service?: string): number;
  /** SIGTERM every process and wait for it (SIGKILL after `graceMs`). */
  stop(graceMs?: number): Promise<void>;
}

/** Services write JSON lines (their stdout is a pipe); on a terminal the launcher shows them readable. */
const readable = process.stdout.isTTY ? prettyLogLine(true) : (line: string) => line;
const printLine = (service: string, line: string) => process.stdout.write(`[${service}] ${readable(line)}\n`);

export function startService(name: ServiceName, label: string, args: string[], opts: MeshOptions): ServiceProcess {
  const nodeArgs = [...SERVICE_NODE_FLAGS, ...(opts.nodeArgs ?? [])];
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', SERVICE_ENTRY(name), ...args], {
    cwd: ROOT,
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const onLine = opts.onLine ?? printLine;
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
    // The launcher reads readiness from the lines (and prettifies them itself on a terminal).
    '--log-format',
    'json',
  ];
  const services: ServiceProcess[] = [];
  let stopping = false;
  let started = false;
  const restartLog: RestartEvent[] = [];
  // Restarts waiting out their delay: stop() cancels them.
  const pending = new Set<NodeJS.Timeout>();
  const scope: RestartScope = opts.restartWorkers === false ? 'none' : (opts.restart ?? 'workers');
  // Workers announce readiness once every lane compiled and warmed its tiers.
  const workersReady = new Set<string>();
  let onWorkerReady: () => void = () => undefined;
  const allWorkersReady = new Promise<void>((r) => {
    onWorkerReady = r;
  });
  const userOnLine = opts.onLine ?? printLine;
  // Each service's last error (or, failing that, last line): a service that exits during the start
  // says why in the start's error.
  const lastWords = new Map<string, { line: string; error: boolean }>();
  opts = {
    ...opts,
    onLine: (svc, line) => {
      // pino's error and fatal, or the message of an uncaught exception (its stderr ends with Node's version).
      const error = /"level":(50|60)|^\w*Error\b/.test(line);
      if (error || !lastWords.get(svc)?.error) lastWords.set(svc, { line, error });
      if (svc.startsWith('worker-') && line.includes('"msg":"worker ready"')) {
        workersReady.add(svc);
        if (workersReady.size === (opts.workers ?? 1)) onWorkerReady();
      }
      userOnLine(svc, line);
    },
  };
  const stop = async (graceMs = 10_000) => {
    stopping = true;
    for (const t of pending) clearTimeout(t);
    pending.clear();
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
  const argsOf = (name: ServiceName, label: string): string[] => {
    if (name === 'worker') {
      const i = Number(label.slice('worker-'.length));
      const metrics =
        opts.workerMetricsPort === undefined ? [] : ['--metrics-port', String(opts.workerMetricsPort + i)];
      return [...common, ...workerLogLevel, ...deviceCount, ...metrics, ...workerFlags];
    }
    if (name === 'gateway') {
      const grpc = ['--grpc-port', String(opts.grpcPort ?? 0)];
      return [...common, '--http-port', String(opts.httpPort), ...grpc, ...(opts.flags?.gateway ?? [])];
    }
    return [...common, ...(opts.flags?.batcher ?? [])];
  };
  const wantsRestart = (name: ServiceName, code: number | null): boolean => {
    if (scope === 'all') return true;
    return scope === 'workers' && name === 'worker' && code !== 0;
  };
  /** Starts a service and keeps it running per the restart scope; one backoff per label. */
  const supervise = (name: ServiceName, label: string, backoff = new Backoff(opts.backoff ?? DEFAULT_BACKOFF)) => {
    const s = startService(name, label, argsOf(name, label), opts);
    const i = services.findIndex((x) => x.name === label);
    if (i >= 0) services[i] = s;
    else services.push(s);
    const startedAt = Date.now();
    void s.exited.then((code) => {
      // A process that fails while the mesh starts fails the start instead (a bad flag or repository
      // would otherwise loop); once up, the scope decides.
      if (!started || stopping || !wantsRestart(name, code)) return;
      const upMs = Date.now() - startedAt;
      const event: RestartEvent = { service: label, code, signal: s.child.signalCode, upMs, ...backoff.next(upMs) };
      restartLog.push(event);
      (opts.onLine ?? userOnLine)('launcher', describeRestart(event));
      opts.onRestart?.(event);
      const t = setTimeout(() => {
        pending.delete(t);
        if (!stopping) supervise(name, label, backoff);
      }, event.delayMs);
      pending.add(t);
    });
  };
  try {
    for (let i = 0; i < workers; i++) supervise('worker', `worker-${i}`);
    supervise('batcher', 'batcher');
    supervise('gateway', 'gateway');
    const url = `http://127.0.0.1:${opts.httpPort}`;
    const failed = Promise.race(
      services.map((s) =>
        s.exited.then((code) => {
          const why = lastWords.get(s.name)?.line;
          return Promise.reject(
            new Error(
              `${s.name} exited with code ${code} during start${why ? `; its last words: ${why.slice(0, 600)}` : ''}`,
            ),
          );
        }),
      ),
    );
    const aborted = new Promise<never>((_, reject) => {
      const onAbort = () => reject(new Error('mesh start aborted'));
      if (opts.signal?.aborted) onAbort();
      else opts.signal?.addEventListener('abort', onAbort, { once: true });
    });
    // The gateway is ready once every wanted model has a ready worker: wait for the workers first.
    await Promise.race([
      allWorkersReady.then(() => waitForHttp(`${url}/v2/health/ready`, 120_000, (st) => st === 200)),
      failed,
      aborted,
    ]);
    failed.catch(() => undefined);
    aborted.catch(() => undefined);
    started = true;
    return {
      url,
      services,
      stop,
      workers: () => services.filter((s) => s.name.startsWith('worker-')),
      restarts: (service) => restartLog.filter((e) => service === undefined || e.service === service).length,
    };
  } catch (err) {
    await stop(2_000);
    throw err;
  }
}

/** The launcher's one line per restart: which service, how it ended, and when it comes back. */
export function describeRestart(e: RestartEvent): string {
  const how = e.signal ? `signal ${e.signal}` : `code ${e.code}`;
  return `${e.service} exited (${how}) after ${(e.upMs / 1000).toFixed(1)} s; restart ${e.attempt} in ${(e.delayMs / 1000).toFixed(1)} s`;
}
