import { readdirSync, readFileSync } from 'node:fs';

/** User + system CPU seconds in a /proc `stat` file (a process's or one thread's); throws when it is gone. */
function statCpuSeconds(path: string): number {
  const f = readFileSync(path, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(f[11]) + Number(f[12])) / 100;
}

/** CPU seconds (user + system) a process has used so far, from /proc. */
export function cpuSeconds(pid: number): number {
  try {
    return statCpuSeconds(`/proc/${pid}/stat`);
  } catch {
    return 0;
  }
}

/** A memory field of a live process's /proc status (VmRSS, VmHWM …), MiB; 0 when it is gone. */
function statusMiB(pid: number, field: string): number {
  try {
    const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

/** Resident memory of a live process now (VmRSS), MiB. */
export const rssMiB = (pid: number): number => statusMiB(pid, 'VmRSS');

/** Peak resident memory of a live process (VmHWM), MiB. */
export const peakRssMiB = (pid: number): number => statusMiB(pid, 'VmHWM');

/** The machine's RabbitMQ node and Redis server, whose CPU counts in the mesh's cost per request. */
export function brokerAndRedisPids(): Array<{ name: string; pid: number }> {
  const found: Array<{ name: string; pid: number }> = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let cmd = '';
    try {
      cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    if (cmd.includes('beam.smp') && cmd.includes('rabbit')) found.push({ name: 'rabbitmq', pid: Number(entry) });
    else if (cmd.startsWith('redis-server') && cmd.includes(':6379')) found.push({ name: 'redis', pid: Number(entry) });
  }
  return found;
}

/** One thread of a process: its CPU so far and how often it gave up the CPU (voluntary) or was preempted. */
export interface ThreadUsage {
  readonly tid: number;
  /** The thread's name (comm): `node` for the main thread and worker_threads alike, `v8:…`, `libuv-worker` … */
  readonly name: string;
  readonly cpuSeconds: number;
  readonly voluntarySwitches: number;
  readonly involuntarySwitches: number;
}

/** Every live thread of a process (/proc/<pid>/task); empty when the process is gone. */
export function threadUsage(pid: number): ThreadUsage[] {
  let tids: string[] = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  const threads: ThreadUsage[] = [];
  for (const tid of tids) {
    try {
      const dir = `/proc/${pid}/task/${tid}`;
      const status = readFileSync(`${dir}/status`, 'utf8');
      threads.push({
        tid: Number(tid),
        name: readFileSync(`${dir}/comm`, 'utf8').trim(),
        cpuSeconds: statCpuSeconds(`${dir}/stat`),
        voluntarySwitches: Number(/\nvoluntary_ctxt_switches:\s+(\d+)/.exec(status)?.[1] ?? 0),
        involuntarySwitches: Number(/nonvoluntary_ctxt_switches:\s+(\d+)/.exec(status)?.[1] ?? 0),
      });
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return threads;
}

/** The machine's CPU time so far, all cores, in clock ticks: [busy, idle] (/proc/stat). */
export function machineTicks(): [busy: number, idle: number] {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]?.trim().split(/\s+/).slice(1).map(Number) ?? [];
  const idle = (f[3] ?? 0) + (f[4] ?? 0);
  return [f.reduce((a, b) => a + b, 0) - idle, idle];
}

/** Kernel-side work of a process so far: read/write syscalls (/proc/<pid>/io) and context switches (every thread). */
export interface KernelCounts {
  reads: number;
  writes: number;
  switches: number;
}

export function kernelCounts(pid: number): KernelCounts {
  const counts: KernelCounts = { reads: 0, writes: 0, switches: 0 };
  try {
    const io = readFileSync(`/proc/${pid}/io`, 'utf8');
    counts.reads = Number(/syscr:\s+(\d+)/.exec(io)?.[1] ?? 0);
    counts.writes = Number(/syscw:\s+(\d+)/.exec(io)?.[1] ?? 0);
    for (const t of threadUsage(pid)) counts.switches += t.voluntarySwitches + t.involuntarySwitches;
  } catch {
    // the process is gone: counts stay at what was read
  }
  return counts;
}
