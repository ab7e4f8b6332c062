import { Counter, Gauge, Registry } from 'prom-client';
import { collectProcessMetrics } from './process-metrics.js';

/** Lanes a worker runs for one model on one device, read when scraped. */
export interface LaneCount {
  readonly model: string;
  readonly device: number;
  readonly lanes: number;
}

/** A device's memory, as its runtime reports it. */
export interface DeviceMemoryReading {
  readonly device: number;
  readonly usedBytes: number;
  readonly totalBytes: number;
}

export interface WorkerMetricSources {
  lanes(): Iterable<LaneCount>;
  /** Empty where the runtime has no device memory of its own (CPU). */
  deviceMemory(): Iterable<DeviceMemoryReading>;
}

/**
 * The worker's view: executions per tier, the time batches held a lane
 * (utilisation = rate of busy seconds / lanes), device memory in use, and
 * the dead letters it answered.
 */
export class WorkerMetrics {
  readonly registry: Registry;
  private readonly executions: Counter<'model' | 'device' | 'tier'>;
  private readonly busy: Counter<'model' | 'device'>;
  private readonly deadLetters: Counter<'kind' | 'reason'>;

  constructor(sources: WorkerMetricSources, registry = new Registry()) {
    this.registry = registry;
    const registers = [registry];
    this.executions = new Counter({
      name: 'gemesh_worker_executions_total',
      help: 'Batches run, by model, device and tier.',
      labelNames: ['model', 'device', 'tier'],
      registers,
    });
    this.busy = new Counter({
      name: 'gemesh_worker_lane_busy_seconds_total',
      help: 'Time batches held a lane (assemble, run, slice, encode), by model and device; divided by the lanes it is utilisation.',
      labelNames: ['model', 'device'],
      registers,
    });
    new Gauge({
      name: 'gemesh_worker_lanes',
      help: 'Lanes (device streams, one worker_thread each) serving a model on a device.',
      labelNames: ['model', 'device'],
      registers,
      collect() {
        this.reset();
        for (const l of sources.lanes()) this.inc({ model: l.model, device: String(l.device) }, l.lanes);
      },
    });
    const memory = () => [...sources.deviceMemory()];
    new Gauge({
      name: 'gemesh_device_memory_used_bytes',
      help: 'Device memory in use (total - free, as the runtime reports it), by device.',
      labelNames: ['device'],
      registers,
      collect() {
        this.reset();
        for (const m of memory()) this.set({ device: String(m.device) }, m.usedBytes);
      },
    });
    new Gauge({
      name: 'gemesh_device_memory_total_bytes',
      help: 'Device memory capacity, by device.',
      labelNames: ['device'],
      registers,
      collect() {
        this.reset();
        for (const m of memory()) this.set({ device: String(m.device) }, m.totalBytes);
      },
    });
    this.deadLetters = new Counter({
      name: 'gemesh_dead_letters_total',
      help: "Dead-lettered messages answered, by kind (batch, request, unknown) and the broker's reason (delivery_limit, rejected, expired …).",
      labelNames: ['kind', 'reason'],
      registers,
    });
    for (const kind of ['batch', 'request']) this.deadLetters.inc({ kind, reason: 'rejected' }, 0);
    collectProcessMetrics(registry, 'gemesh_worker_');
  }

  /** One batch ran at `tier` on `device`, holding its lane `laneMs`. */
  batchRan(model: string, device: number, tier: number, laneMs: number): void {
    this.executions.inc({ model, device: String(device), tier: String(tier) });
    this.busy.inc({ model, device: String(device) }, laneMs / 1000);
  }

  deadLettered(kind: string, reason: string): void {
    this.deadLetters.inc({ kind, reason });
  }
}
