import type { ModelKeys } from './model-keys.js';
import type { ScriptName, ScriptRunner } from './scripts.js';

/**
 * Which batcher batches a model whose responses must keep request order
 * (preserve_ordering): one lease per model, taken and renewed by the
 * batcher that holds it, lapsing when that batcher stops renewing.
 */
export class ModelLeads {
  constructor(
    private readonly keys: ModelKeys,
    private readonly scripts: Record<ScriptName, ScriptRunner>,
  ) {}

  /** Take or renew the lead of a model for `ttlMs` (0 = give it up); false while another batcher holds it. */
  async take(model: string, token: string, ttlMs: number): Promise<boolean> {
    return (await this.scripts['lead-model']([this.keys.leadKey(model)], [token, ttlMs])) === 1;
  }
}
