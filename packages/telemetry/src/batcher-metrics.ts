import { Counter, Gauge, Registry } from 'prom-client';
import { collectProcessMetrics } from './process-metrics.js';

/** What a model's batcher holds and has not batched yet, read when scraped. */
export interface PendingSnapshot {
  readonly requests: number;
  /** When the oldest held request was accepted (ms since the epoch); undefined when none is held. */
  readonly oldestAcceptedAt: number | undefined;
}

/**
 * The batcher's view: batches per tier, their real and padded rows (the
 * padding waste an operator tunes tiers with), and per model the requests
 * held and not yet batched with the age of the oldest one.
 */
export class BatcherMetrics {
  readonly registry: Registry;
  private readonly batches: Counter<'model' | 'tier'>;
  private readonly rows: Counter<'model' | 'tier'>;
  private readonly padded: Counter<'model' | 'tier'>;
  private readonly elements: Counter<'model' | 'tier'>;
  private readonly paddedElements: Counter<'model' | 'tier'>;

  constructor(pending: () => Iterable<readonly [string, PendingSnapshot]>, registry = new Registry()) {
    this.registry = registry;
    const registers = [registry];
    const perTier = ['model', 'tier'] as const;
    this.batches = new Counter({
      name: 'gemesh_batcher_batches_total',
      help: 'Batches published, by model and tier (the static batch size they run at).',
      labelNames: perTier,
      registers,
    });
    this.rows = new Counter({
      name: 'gemesh_batcher_batch_rows_total',
      help: 'Real rows (request batch rows) in the batches published, by model and tier.',
      labelNames: perTier,
      registers,
    });
    this.padded = new Counter({
      name: 'gemesh_batcher_padded_rows_total',
      help: 'Padding rows added to fill a tier, by model and tier: computed and thrown away.',
      labelNames: perTier,
      registers,
    });
    this.elements = new Counter({
      name: 'gemesh_batcher_batch_elements_total',
      help: 'Input elements the requests in the batches published sent (padding excluded), by model and tier.',
      labelNames: perTier,
      registers,
    });
    this.paddedElements = new Counter({
      name: 'gemesh_batcher_padded_elements_total',
      help: 'Input elements added by padding (rows up to a tier, and dims up to a gear), by model and tier: computed and thrown away.',
      labelNames: perTier,
      registers,
    });
    new Gauge({
      name: 'gemesh_batcher_pending_requests',
      help: 'Requests this batcher holds and has not batched yet, by model.',
      labelNames: ['model'],
      registers,
      collect() {
        for (const [model, p] of pending()) this.set({ model }, p.requests);
      },
    });
    new Gauge({
      name: 'gemesh_batcher_oldest_pending_age_seconds',
      help: 'Age of the oldest request this batcher holds unbatched (since the gateway accepted it), by model; 0 when none.',
      labelNames: ['model'],
      registers,
      collect() {
        const now = Date.now();
        for (const [model, p] of pending()) {
          this.set({ model }, p.oldestAcceptedAt === undefined ? 0 : Math.max(0, now - p.oldestAcceptedAt) / 1000);
        }
      },
    });
    collectProcessMetrics(registry, 'gemesh_batcher_');
  }

  /** Creates a model's series at zero, so a dashboard shows the tiers before traffic. */
  addModel(model: string, tiers: readonly number[]): void {
    for (const t of tiers) {
      const l = { model, tier: String(t) };
      this.batches.inc(l, 0);
      this.rows.inc(l, 0);
      this.padded.inc(l, 0);
      this.elements.inc(l, 0);
      this.paddedElements.inc(l, 0);
    }
  }

  /** One batch published: `rows` real rows run at `tier`, with `elements` input elements sent and run. */
  batchPublished(model: string, tier: number, rows: number, elements?: { real: number; run: number }): void {
    const l = { model, tier: String(tier) };
    this.batches.inc(l);
    this.rows.inc(l, rows);
    this.padded.inc(l, Math.max(0, tier - rows));
    if (elements) {
      this.elements.inc(l, elements.real);
      this.paddedElements.inc(l, Math.max(0, elements.run - elements.real));
    }
  }
}
