/**
 * The socket reads and writes of a few processes, with kernel timestamps,
 * from the syscall tracepoints of tracefs (root only). Much lighter than
 * strace, which stops the traced thread on every call and triples a hop's
 * time here. No maintained Node library reads tracefs, so this is by hand.
 *
 * Each event names the process (and whether it is its main thread), the call
 * and what the descriptor is: the broker, Redis, an HTTP peer or an eventfd
 * (how worker_threads wake each other).
 */
import { readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import type { Proc } from './host-processes.js';

const TRACEFS = '/sys/kernel/tracing';
const CALLS = ['read', 'write', 'writev'] as const;

export type Peer = 'broker' | 'redis' | 'http' | 'eventfd' | 'other';

export interface SyscallEvent {
  /** The process's name (Proc.name). */
  proc: string;
  /** On the process's main thread (false: a worker_thread or a native pool thread). */
  main: boolean;
  /** CLOCK_MONOTONIC, ms: comparable with process.hrtime. */
  t: number;
  call: (typeof CALLS)[number];
  peer: Peer;
}

/** CLOCK_MONOTONIC in ms, the clock the trace is taken with. */
export const monotonicMs = (): number => Number(process.hrtime.bigint()) / 1e6;

const write = (file: string, value: string) => writeFileSync(`${TRACEFS}/${file}`, value);

/** Whether this process may trace (root, tracefs mounted). */
export function canTrace(): boolean {
  try {
    write('tracing_on', '0');
    return true;
  } catch {
    return false;
  }
}

/** Local port → remote port of every TCP socket, by inode. */
function tcpSockets(): Map<string, number> {
  const byInode = new Map<string, number>();
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(file, 'utf8').split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      const remote = cols[2]?.split(':')[1];
      const inode = cols[9];
      if (remote && inode) byInode.set(inode, Number.parseInt(remote, 16));
    }
  }
  return byInode;
}

export class SyscallTrace {
  private readonly threads = new Map<string, { proc: string; main: boolean }>();
  private readonly peers = new Map<string, Peer>();
  private readonly pidOf = new Map<string, number>();
  private clock = 'local';

  /** `ports`: the broker's and Redis's ports, to tell their sockets from HTTP peers. */
  constructor(
    private readonly procs: readonly Proc[],
    private readonly ports: { broker: number; redis: number },
  ) {}

  /** Starts tracing the processes' threads and sockets as they are now (call it once they are warm). */
  start(): void {
    const tcp = tcpSockets();
    for (const { name, pid } of this.procs) {
      this.pidOf.set(name, pid);
      for (const tid of readdirSync(`/proc/${pid}/task`))
        this.threads.set(tid, { proc: name, main: tid === String(pid) });
      for (const fd of readdirSync(`/proc/${pid}/fd`)) {
        let link: string;
        try {
          link = readlinkSync(`/proc/${pid}/fd/${fd}`);
        } catch {
          continue; // closed meanwhile
        }
        const inode = link.match(/^socket:\[(\d+)\]$/)?.[1];
        const remote = inode ? tcp.get(inode) : undefined;
        const peer: Peer =
          remote === this.ports.broker
            ? 'broker'
            : remote === this.ports.redis
              ? 'redis'
              : remote !== undefined
                ? 'http'
                : link.includes('eventfd')
                  ? 'eventfd'
                  : 'other';
        this.peers.set(`${pid}:${fd}`, peer);
      }
    }
    this.clock = readFileSync(`${TRACEFS}/trace_clock`, 'utf8').match(/\[(\w+)\]/)?.[1] ?? 'local';
    write('tracing_on', '0');
    write('trace', '');
    write('trace_clock', 'mono');
    write('buffer_size_kb', '16384');
    write('set_event_pid', [...this.threads.keys()].join(' '));
    for (const c of CALLS) write(`events/syscalls/sys_enter_${c}/enable`, '1');
    write('tracing_on', '1');
  }

  /** Stops tracing, restores tracefs and returns the socket calls in time order. */
  stop(): SyscallEvent[] {
    write('tracing_on', '0');
    const raw = readFileSync(`${TRACEFS}/trace`, 'utf8');
    for (const c of CALLS) write(`events/syscalls/sys_enter_${c}/enable`, '0');
    write('set_event_pid', '');
    write('trace_clock', this.clock);
    write('trace', '');
    const events: SyscallEvent[] = [];
    for (const line of raw.split('\n')) {
      const m = line.match(/-(\d+)\s+\[\d+\]\s+\S+\s+([\d.]+): sys_(\w+)\(fd: 0x([0-9a-f]+)/);
      if (!m) continue;
      const [, tid = '', ts = '', call = '', fd = ''] = m;
      const thread = this.threads.get(tid);
      if (!thread || !(CALLS as readonly string[]).includes(call)) continue;
      const peer = this.peers.get(`${this.pidOf.get(thread.proc)}:${Number.parseInt(fd, 16)}`) ?? 'other';
      if (peer === 'other') continue;
      events.push({ ...thread, t: Number(ts) * 1000, call: call as SyscallEvent['call'], peer });
    }
    return events;
  }
}
