import type { HeartbeatResult, WorkerInfo, WorkerRegistry } from '@ge-mesh/store';
import type { Logger } from '@ge-mesh/telemetry';

export interface PresenceOptions {
  readonly heartbeatMs: number;
  /** The registry entry and the leases lapse after this many missed heartbeats. */
  readonly missedBeats?: number;
}

/**
 * This worker in the registry: it leases its devices (waiting while none is
 * free), then beats every `heartbeatMs` with a fresh description (models,
 * lanes, load). A change of state is written at once and announced, so
 * the gateway and batchers follow within milliseconds; a worker that dies
 * simply stops beating and drops out within its TTL. If its leases were
 * taken while it stalled, `onLeaseLost` is called and it must stop.
 */
export class WorkerPresence {
  private timer?: NodeJS.Timeout;
  private beating = false;
  private pendingChange = false;
  private stopped = false;
  private wanted?: readonly string[];

  constructor(
    private readonly registry: WorkerRegistry,
    private readonly describe: () => WorkerInfo,
    private readonly opts: PresenceOptions,
    private readonly log: Logger,
    private readonly onLeaseLost: (devices: number[]) => void,
    /** Called after every beat (the worker re-reads the model control then). */
    private readonly onBeat: () => void = () => undefined,
  ) {}

  get ttlMs(): number {
    return this.opts.heartbeatMs * (this.opts.missedBeats ?? 3);
  }

  /**
   * Lease `count` devices among `candidates`, waiting (and saying so once)
   * while fewer are free: a replica beyond the machine's devices is a hot
   * standby that takes over the device of a worker that dies.
   */
  async claim(
    id: string,
    node: string,
    kind: string,
    candidates: readonly number[],
    count: number,
    isStopped: () => boolean,
  ): Promise<number[] | null> {
    let said = false;
    while (!isStopped()) {
      const got = await this.registry
        .claimDevices(id, node, kind, candidates, count, this.ttlMs)
        .catch((err: Error) => {
          this.log.warn({ err: err.message }, 'device lease not claimed (Redis)');
          return null;
        });
      if (got) return got;
      if (!said) {
        this.log.warn(
          { node, kind, candidates: candidates.length, wanted: count },
          'every device is leased by a live worker; waiting for one to free up',
        );
        said = true;
      }
      await new Promise((r) => setTimeout(r, this.opts.heartbeatMs));
    }
    return null;
  }

  /** First beat, marking `wanted` models as wanted in the model control; then every heartbeatMs. */
  async start(wanted: readonly string[]): Promise<void> {
    this.wanted = wanted;
    await this.beat(true);
    this.timer = setInterval(() => void this.beat(false), this.opts.heartbeatMs);
  }

  /** Write the description now (a state changed). */
  changed(): void {
    void this.beat(true);
  }

  /** Write the description now and wait until it is written (e.g. before announcing readiness). */
  async flush(): Promise<void> {
    while (this.beating) await new Promise((r) => setTimeout(r, 5));
    await this.beat(true);
  }

  private async beat(changed: boolean): Promise<void> {
    if (this.stopped) return;
    if (this.beating) {
      this.pendingChange ||= changed;
      return;
    }
    this.beating = true;
    let res: HeartbeatResult | undefined;
    try {
      const info = { ...this.describe(), beatAt: Date.now() };
      res = await this.registry.heartbeat(info, {
        ttlMs: this.ttlMs,
        leaseTtlMs: this.ttlMs,
        changed,
        ...(this.wanted ? { wanted: this.wanted } : {}),
      });
      this.wanted = undefined;
    } catch (err) {
      // Redis away: the entry may lapse; the next beat writes it again.
      this.log.warn({ err: (err as Error).message }, 'heartbeat not written');
    } finally {
      this.beating = false;
    }
    if (res && !res.ok && !this.stopped) {
      this.stop();
      this.onLeaseLost(res.lostDevices);
      return;
    }
    if (res?.ok) this.onBeat();
    if (this.pendingChange) {
      this.pendingChange = false;
      await this.beat(true);
    }
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
  }

  /** Leave the registry and free the leases now. */
  async release(info: Pick<WorkerInfo, 'id' | 'node' | 'kind' | 'devices'>): Promise<void> {
    this.stop();
    while (this.beating) await new Promise((r) => setTimeout(r, 5));
    await this.registry.release(info).catch((err: Error) => {
      this.log.warn({ err: err.message }, 'leases not released; they lapse with their TTL');
    });
  }
}
