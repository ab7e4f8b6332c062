import { readdirSync, readFileSync } from 'node:fs';

/** CPU seconds (user + system) a process has used so far, from /proc. */
export function cpuSeconds(pid: number): number {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return (Number(f[11]) + Number(f[12])) / 100;
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
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const status = readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
      for (const m of status.matchAll(/ctxt_switches:\s+(\d+)/g)) counts.switches += Number(m[1]);
    }
  } catch {
    // the process is gone: counts stay at what was read
  }
  return counts;
}
