import { MeshClient } from '@ge-mesh/client';
import { Pool } from 'undici';
import type { Send } from './driver.js';
import { buildInputSets, fetchModelMeta, type ModelMeta } from './kserve-http.js';

/**
 * The AMQP ingress as a load target: the same requests as over HTTP, sent
 * with the project's producer client (direct reply-to, publisher confirms).
 * The model's metadata still comes from the gateway's HTTP API.
 */
export interface AmqpTargetOptions {
  rabbitmqUrl: string;
  namespace: string;
  /** Gateway HTTP URL, for the model's metadata. */
  url: string;
  model: string;
  version?: string;
  batch: number;
  inputData: 'random' | 'zero';
  shapes?: Record<string, number[]>;
  apiKey?: string;
  timeoutMs?: number;
}

export async function amqpTarget(
  o: AmqpTargetOptions,
): Promise<{ send: Send; meta: ModelMeta; close(): Promise<void> }> {
  const pool = new Pool(o.url, { connections: 2 });
  const meta = await fetchModelMeta(pool, o.model, o.version, o.apiKey ? { authorization: `Bearer ${o.apiKey}` } : {});
  await pool.close();
  const sets = buildInputSets(meta, o);
  const client = await MeshClient.connect({
    url: o.rabbitmqUrl,
    namespace: o.namespace,
    timeoutMs: o.timeoutMs ?? 60_000,
    ...(o.apiKey ? { apiKey: o.apiKey } : {}),
  });
  const send: Send = async (seq) => {
    const set = sets[seq % sets.length] ?? [];
    await client.infer({
      model: o.model,
      ...(o.version ? { version: o.version } : {}),
      inputs: set.map((t) => ({ name: t.name, datatype: t.datatype as never, shape: t.shape, data: t.bytes })),
    });
    return true;
  };
  return { send, meta, close: () => client.close() };
}
