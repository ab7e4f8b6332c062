import { createHash } from 'node:crypto';
import { decode, encode, tensorBytes, type WireTensor } from '@ge-mesh/protocol';
import type { ResponseCache } from '@ge-mesh/store';
import type { Logger } from '@ge-mesh/telemetry';
import type { ValidatedInfer } from '../infer/index.js';

/**
 * The response cache as the infer pipeline uses it: a request's key (model,
 * version, the requested outputs and every input's name, datatype, shape and
 * bytes; how the answer is encoded — JSON or binary, classification — is
 * applied after, so it is not part of the key) and the outputs stored under
 * it. The cache serves answers, never decides them: a Redis error is a miss
 * (logged once until the cache works again), and only successful answers are
 * stored.
 */
export class CachedResponses {
  private failing = false;

  constructor(
    private readonly cache: ResponseCache,
    private readonly log: Logger,
  ) {}

  key(model: string, version: string, req: ValidatedInfer): string {
    const h = createHash('sha256');
    h.update(JSON.stringify([model, version, req.allOutputs ? null : req.outputs.map((o) => o.name)]));
    for (const t of req.inputs) {
      h.update(JSON.stringify([t.name, t.datatype, t.shape, t.data.byteLength]));
      h.update(t.data);
    }
    return h.digest('base64url');
  }

  async get(key: string): Promise<WireTensor[] | null> {
    try {
      const bytes = await this.cache.get(key);
      this.recovered();
      return bytes ? decode<WireTensor[]>(bytes) : null;
    } catch (err) {
      this.failed(err);
      return null;
    }
  }

  async put(key: string, outputs: readonly WireTensor[]): Promise<void> {
    try {
      // A copy: small messages are encoded into a shared buffer, and the command is written a tick later.
      await this.cache.put(key, Buffer.from(encode(outputs, tensorBytes(outputs))));
      this.recovered();
    } catch (err) {
      this.failed(err);
    }
  }

  private failed(err: unknown): void {
    if (this.failing) return;
    this.failing = true;
    this.log.warn({ err: (err as Error).message }, 'response cache unreachable: requests run uncached');
  }

  private recovered(): void {
    if (!this.failing) return;
    this.failing = false;
    this.log.info('response cache reachable again');
  }
}
