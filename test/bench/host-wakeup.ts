import { percentile } from '@ge-mesh/loadgen';

/**
 * What an idle gap costs this machine: the same piece of JavaScript timed
 * back to back and right after the process slept. On a virtual machine a
 * vCPU that went idle comes back with cold caches (and may have been
 * descheduled), so work that follows a wait runs slower. At low concurrency
 * every hop of the mesh starts after such a wait, so this is what a c=1
 * latency pays per hop on this host, and why it varies from host to host.
 */
export interface WakeupRow {
  /** How long the process slept before the work (0: back to back). */
  readonly idleMs: number;
  /** Median time of the work, µs. */
  readonly workUs: number;
}

/** About a hundred µs of allocation, string hashing and object churn, the kind of work a service does per request. */
function work(): number {
  let h = 0;
  const items: Array<{ k: string; v: number[] }> = [];
  for (let i = 0; i < 1000; i++) {
    const k = `key-${i}-${h & 0xff}`;
    items.push({ k, v: [i, i * 2, i * 3] });
    for (let j = 0; j < k.length; j++) h = (h * 31 + k.charCodeAt(j)) | 0;
  }
  return h + JSON.stringify(items.slice(0, 20)).length;
}

function timeWork(): number {
  const t0 = process.hrtime.bigint();
  work();
  return Number(process.hrtime.bigint() - t0) / 1000;
}

export function measureWakeup(samples = 300, gapsMs: readonly number[] = [0, 0.2, 1, 5]): WakeupRow[] {
  for (let i = 0; i < 2000; i++) work(); // JIT-compiled before anything is timed
  // Atomics.wait blocks the thread in the kernel for exactly the gap (timers round up to a millisecond).
  const cell = new Int32Array(new SharedArrayBuffer(4));
  // Each gap in runs of `samples / rounds` (back to back must stay back to back), the runs taking
  // turns round after round, so the host's drift falls on every gap alike.
  const rounds = 3;
  const times = gapsMs.map(() => [] as number[]);
  for (let r = 0; r < rounds; r++) {
    for (const [g, idleMs] of gapsMs.entries()) {
      for (let i = 0; i < samples / rounds; i++) {
        if (idleMs > 0) Atomics.wait(cell, 0, 0, idleMs);
        times[g]?.push(timeWork());
      }
    }
  }
  return gapsMs.map((idleMs, g) => ({ idleMs, workUs: percentile(Float64Array.from(times[g] ?? []).sort(), 50) }));
}

/** One sentence for the report's header. */
export function wakeupSentence(rows: readonly WakeupRow[]): string {
  const busy = rows.find((r) => r.idleMs === 0);
  if (!busy || rows.length < 2) return '';
  const after = rows
    .filter((r) => r.idleMs > 0)
    .map((r) => `${r.workUs.toFixed(0)} µs after ${r.idleMs} ms idle (${(r.workUs / busy.workUs).toFixed(2)}×)`);
  return (
    `This host's idle-wakeup penalty, measured at the start of the run (\`test/bench/host-wakeup.ts\`): the same JavaScript takes ` +
    `${busy.workUs.toFixed(0)} µs back to back, ${after.join(', ')}. Every hop of a request at concurrency 1 starts after such a wait.`
  );
}
