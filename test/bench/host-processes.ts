import { cpuSeconds, peakRssMiB, rssMiB } from './process-metrics.js';

/**
 * CPU and memory of every process that serves a scenario: the mesh's own
 * services and the machine's RabbitMQ node and Redis server, which do work
 * for every request too. The load generator (this process) is left out.
 */
export interface Proc {
  name: string;
  pid: number;
}

/** A running mesh's service processes, by service name. */
export function serviceProcs(mesh: {
  readonly services: ReadonlyArray<{ name: string; child: { pid?: number } }>;
}): Proc[] {
  return mesh.services.map((s) => ({ name: s.name, pid: s.child.pid ?? 0 }));
}

export interface UsageRow {
  scenario: string;
  service: string;
  /** Highest VmRSS sampled during the scenario, MiB. */
  rssMiB: number;
  /** VmHWM at the end: the process's peak since it started, MiB. */
  hwmMiB: number;
  /** Average cores over the scenario. */
  cpuCores: number;
  /** This process's CPU per answered request. */
  cpuMsPerRequest: number;
  /** The CPU of every process of the scenario per answered request. */
  allCpuMsPerRequest: number;
  requests: number;
}

/** Usage of a set of processes over one scenario: start it, run the scenario, finish with the answers it got. */
export class ScenarioMeter {
  private readonly cpu0: number[];
  private readonly rss: number[];
  private readonly t0 = performance.now();
  private readonly timer: NodeJS.Timeout;

  constructor(
    readonly scenario: string,
    private readonly procs: readonly Proc[],
  ) {
    this.cpu0 = procs.map((p) => cpuSeconds(p.pid));
    this.rss = procs.map((p) => rssMiB(p.pid));
    // VmRSS is sampled because a long-lived broker's VmHWM says nothing about this scenario.
    this.timer = setInterval(() => this.sample(), 250);
    this.timer.unref();
  }

  private sample(): void {
    this.procs.forEach((p, i) => {
      this.rss[i] = Math.max(this.rss[i] ?? 0, rssMiB(p.pid));
    });
  }

  /** One row per process; `requests` = requests answered during the scenario. */
  finish(requests: number): UsageRow[] {
    clearInterval(this.timer);
    this.sample();
    const secs = (performance.now() - this.t0) / 1000;
    const cpu = this.procs.map((p, i) => cpuSeconds(p.pid) - (this.cpu0[i] ?? 0));
    const all = cpu.reduce((a, b) => a + b, 0);
    const perRequest = (s: number) => (requests > 0 ? (s * 1000) / requests : Number.NaN);
    return this.procs.map((p, i) => ({
      scenario: this.scenario,
      service: p.name,
      rssMiB: this.rss[i] ?? 0,
      hwmMiB: peakRssMiB(p.pid),
      cpuCores: (cpu[i] ?? 0) / secs,
      cpuMsPerRequest: perRequest(cpu[i] ?? 0),
      allCpuMsPerRequest: perRequest(all),
      requests,
    }));
  }
}
