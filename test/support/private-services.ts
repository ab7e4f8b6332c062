import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { accessSync, constants, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './mesh-harness.js';

/**
 * A RabbitMQ node and a redis-server of a test's own, on free loopback ports
 * with their data in a temporary folder: a test stops and restarts them as
 * the real thing does (stop_app/start_app, SHUTDOWN and a start on the same
 * append-only file) without touching the machine's shared instances, which
 * other tests and people use at the same time.
 */

const run = promisify(execFile);

/**
 * Where rabbitmq-server and rabbitmqctl are found. Debian's /usr/sbin entries are a wrapper that
 * switches to the rabbitmq user through `su`, which resets HOME (and with it the Erlang cookie the
 * CLI must share with the node): the scripts behind it, in /usr/lib/rabbitmq/bin, are used instead.
 */
function rabbitScripts(): { server: string; ctl: string } | undefined {
  const dirs = [
    process.env.GEMESH_RABBITMQ_SBIN,
    '/usr/lib/rabbitmq/bin',
    ...(process.env.PATH ?? '').split(delimiter),
  ].filter((d): d is string => !!d);
  for (const dir of dirs) {
    const server = join(dir, 'rabbitmq-server');
    const ctl = join(dir, 'rabbitmqctl');
    try {
      accessSync(server, constants.X_OK);
      accessSync(ctl, constants.X_OK);
      return { server, ctl };
    } catch {}
  }
  return undefined;
}

function onPath(name: string): boolean {
  return (process.env.PATH ?? '').split(delimiter).some((d) => {
    try {
      accessSync(join(d, name), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** Why private instances cannot run here (a skip reason), or undefined when they can. */
export function privateServicesMissing(): string | undefined {
  if (!rabbitScripts()) return 'rabbitmq-server and rabbitmqctl not installed';
  if (!onPath('redis-server') || !onPath('redis-cli')) return 'redis-server and redis-cli not installed';
  return undefined;
}

/** Resolves once something accepts TCP connections on 127.0.0.1:port. */
async function waitForPort(port: number, timeoutMs: number, alive: () => boolean): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (!alive()) throw new Error(`the process exited before port ${port} opened`);
    const up = await new Promise<boolean>((resolve) => {
      const s = connect({ host: '127.0.0.1', port });
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (up) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`port ${port} not open after ${timeoutMs} ms`);
}

function tail(file: string, lines = 30): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

/**
 * Processes and folders to remove if the test process ends without stop() (a crash, a failed
 * before hook): a private broker left running would hold its ports and memory for good.
 */
const leftovers = new Map<string, { pgid?: number; dir: string }>();
process.once('exit', () => {
  for (const l of leftovers.values()) {
    try {
      if (l.pgid) process.kill(-l.pgid, 'SIGKILL');
    } catch {}
    rmSync(l.dir, { recursive: true, force: true });
  }
});

/** Sends `signal` to the process group of a detached child; false when it is gone. */
function signalGroup(child: ChildProcess, signal: NodeJS.Signals): boolean {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return false;
  try {
    process.kill(-child.pid, signal);
    return true;
  } catch {
    return false;
  }
}

/** Waits for a child's exit, up to `ms`; true when it exited. */
async function exitWithin(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return true;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((r) => {
    timer = setTimeout(() => r(false), ms);
  });
  const exited = once(child, 'exit').then(() => true as const);
  const done = await Promise.race([exited, timeout]);
  clearTimeout(timer);
  return done;
}

/** Stops a detached child's whole group: SIGTERM, then SIGKILL after `graceMs`. */
async function stopGroup(child: ChildProcess, graceMs: number): Promise<void> {
  if (!signalGroup(child, 'SIGTERM')) return;
  if (await exitWithin(child, graceMs)) {
    // Whatever the group still holds (Erlang's port helpers) goes too.
    signalGroup(child, 'SIGKILL');
    return;
  }
  signalGroup(child, 'SIGKILL');
  await exitWithin(child, 5_000);
}

export class PrivateRabbit {
  /** How long the node took from spawn to ready, ms. */
  startMs = 0;

  private constructor(
    readonly node: string,
    readonly port: number,
    private readonly dir: string,
    private readonly child: ChildProcess,
    private readonly ctlPath: string,
    private readonly env: NodeJS.ProcessEnv,
  ) {}

  /** The node's Erlang VM (beam.smp), for memory and CPU readings; undefined while it starts or after it stopped. */
  get pid(): number | undefined {
    try {
      return Number(readFileSync(join(this.dir, 'rabbit.pid'), 'utf8').trim()) || undefined;
    } catch {
      return undefined;
    }
  }

  /** amqp URL of the node (guest/guest). */
  get url(): string {
    return `amqp://guest:guest@127.0.0.1:${this.port}`;
  }

  /** Starts a fresh node and waits until its AMQP listener is up and the app reports started. */
  static async start(): Promise<PrivateRabbit> {
    const scripts = rabbitScripts();
    if (!scripts) throw new Error('rabbitmq-server and rabbitmqctl not installed');
    const t0 = Date.now();
    const dir = mkdtempSync(join(tmpdir(), 'gemesh-rabbit-'));
    const [port, distPort] = [await freePort(), await freePort()];
    const node = `gm${randomBytes(4).toString('hex')}@localhost`;
    // One HOME for the node and every rabbitmqctl call: they find the same Erlang cookie there.
    const home = join(dir, 'home');
    for (const d of ['home', 'mnesia', 'log']) mkdirSync(join(dir, d));
    writeFileSync(join(home, '.erlang.cookie'), randomBytes(16).toString('hex'), { mode: 0o400 });
    writeFileSync(join(dir, 'enabled_plugins'), '');
    // An empty env file: the machine's rabbitmq-env.conf (its node name, ports) is not read.
    writeFileSync(join(dir, 'rabbitmq-env.conf'), '');
    writeFileSync(
      join(dir, 'rabbitmq.conf'),
      [`listeners.tcp.local = 127.0.0.1:${port}`, 'log.console = false', 'log.file.level = info', ''].join('\n'),
    );
    // Nothing of the caller's RabbitMQ or Erlang settings leaks in (they would point at the shared node).
    const base = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !k.startsWith('RABBITMQ_') && !k.startsWith('ERL_')),
    );
    const env: NodeJS.ProcessEnv = {
      ...base,
      HOME: home,
      RABBITMQ_NODENAME: node,
      RABBITMQ_NODE_IP_ADDRESS: '127.0.0.1',
      RABBITMQ_NODE_PORT: String(port),
      RABBITMQ_DIST_PORT: String(distPort),
      RABBITMQ_MNESIA_BASE: join(dir, 'mnesia'),
      RABBITMQ_LOG_BASE: join(dir, 'log'),
      RABBITMQ_CONFIG_FILE: join(dir, 'rabbitmq.conf'),
      RABBITMQ_ADVANCED_CONFIG_FILE: join(dir, 'advanced.config'),
      RABBITMQ_CONF_ENV_FILE: join(dir, 'rabbitmq-env.conf'),
      RABBITMQ_ENABLED_PLUGINS_FILE: join(dir, 'enabled_plugins'),
      RABBITMQ_PID_FILE: join(dir, 'rabbit.pid'),
      // Used only if no epmd runs yet: the one the node starts then listens on loopback only.
      ERL_EPMD_ADDRESS: '127.0.0.1',
    };
    const out = openSync(join(dir, 'server.out'), 'w');
    // Its own process group: stop() takes the node and Erlang's helper processes down together.
    const child = spawn(scripts.server, [], { env, cwd: dir, detached: true, stdio: ['ignore', out, out] });
    child.unref();
    leftovers.set(dir, { ...(child.pid ? { pgid: child.pid } : {}), dir });
    const rabbit = new PrivateRabbit(node, port, dir, child, scripts.ctl, env);
    try {
      const alive = () => child.exitCode === null && child.signalCode === null;
      await waitForPort(port, 60_000, alive);
      await rabbit.ctl('await_startup', '--timeout', '60');
    } catch (err) {
      const why = `${(err as Error).message}\n${tail(join(dir, 'server.out'))}\n${tail(join(dir, 'log', `${node}.log`))}`;
      await rabbit.stop();
      throw new Error(`private RabbitMQ node did not start: ${why}`);
    }
    rabbit.startMs = Date.now() - t0;
    return rabbit;
  }

  /** Runs `rabbitmqctl -n <node> ...` against this node. */
  async ctl(...args: string[]): Promise<string> {
    const { stdout } = await run(this.ctlPath, ['-n', this.node, ...args], {
      env: this.env,
      cwd: this.dir,
      timeout: 90_000,
    });
    return stdout;
  }

  /** Stops the RabbitMQ application (connections closed, port closed); the Erlang node stays. */
  async stopApp(): Promise<void> {
    await this.ctl('stop_app');
  }

  /** Starts the application again; resolves once it accepts connections. */
  async startApp(): Promise<void> {
    await this.ctl('start_app');
    await waitForPort(this.port, 30_000, () => this.child.exitCode === null);
  }

  /** The node's log, for failure reports. */
  logTail(lines = 40): string {
    return tail(join(this.dir, 'log', `${this.node}.log`), lines);
  }

  /** Stops the node (SIGTERM, SIGKILL after 10 s) and removes its folder; safe to call twice. */
  async stop(): Promise<void> {
    await stopGroup(this.child, 10_000);
    rmSync(this.dir, { recursive: true, force: true });
    leftovers.delete(this.dir);
  }
}

export class PrivateRedis {
  private child: ChildProcess | undefined;
  /** How long the last start took, spawn to PONG, ms. */
  startMs = 0;

  private constructor(
    readonly port: number,
    private readonly dir: string,
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** The running server's process id; undefined while it is shut down. */
  get pid(): number | undefined {
    const c = this.child;
    return c && c.exitCode === null && c.signalCode === null ? c.pid : undefined;
  }

  /** A fresh redis-server with an append-only file fsynced every second, as production runs it. */
  static async start(): Promise<PrivateRedis> {
    const dir = mkdtempSync(join(tmpdir(), 'gemesh-redis-'));
    leftovers.set(dir, { dir });
    const redis = new PrivateRedis(await freePort(), dir);
    try {
      await redis.start();
    } catch (err) {
      await redis.stop();
      throw err;
    }
    return redis;
  }

  /** Starts redis-server (again) on the same port and folder: it reloads its append-only file. */
  async start(): Promise<void> {
    if (this.child && this.child.exitCode === null && this.child.signalCode === null) {
      throw new Error('redis-server is already running');
    }
    const t0 = Date.now();
    const log = openSync(join(this.dir, 'redis.out'), 'a');
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(this.port),
        '--bind',
        '127.0.0.1',
        '--dir',
        this.dir,
        '--appendonly',
        'yes',
        '--appendfsync',
        'everysec',
        '--save',
        '',
        '--daemonize',
        'no',
      ],
      { cwd: this.dir, detached: true, stdio: ['ignore', log, log] },
    );
    child.unref();
    this.child = child;
    leftovers.set(this.dir, { ...(child.pid ? { pgid: child.pid } : {}), dir: this.dir });
    const until = Date.now() + 30_000;
    // PING answers PONG only once the append-only file is loaded (before that: LOADING).
    while ((await this.cli('PING').catch(() => '')) !== 'PONG') {
      if (child.exitCode !== null || child.signalCode !== null || Date.now() > until) {
        throw new Error(`redis-server did not start: ${tail(join(this.dir, 'redis.out'))}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    this.startMs = Date.now() - t0;
  }

  /** Runs one redis-cli command against this server; its trimmed output. */
  async cli(...args: string[]): Promise<string> {
    const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(this.port), ...args], {
      timeout: 10_000,
    });
    return stdout.trim();
  }

  /** SHUTDOWN (the append-only file is flushed first); resolves once the process has exited. */
  async shutdown(): Promise<void> {
    const child = this.child;
    if (!child) return;
    // redis-cli reports the connection closing under it; the process exit is what counts.
    await this.cli('SHUTDOWN').catch(() => undefined);
    if (!(await exitWithin(child, 10_000))) throw new Error('redis-server did not exit on SHUTDOWN');
  }

  /** Empties every database (a Redis that lost its data). */
  async flushAll(): Promise<void> {
    await this.cli('FLUSHALL');
  }

  /** Stops the server and removes its folder; safe to call twice. */
  async stop(): Promise<void> {
    if (this.child) await stopGroup(this.child, 5_000);
    rmSync(this.dir, { recursive: true, force: true });
    leftovers.delete(this.dir);
  }
}
