import { MeshClient } from '@ge-mesh/client';
import type { Send } from './driver.js';
import { buildInputSets, type MetaTargetOptions, type ModelMeta, modelMetaOf } from './kserve-http.js';

/**
 * The AMQP ingress as a load target: the same requests as over HTTP, sent
 * with the project's producer client (direct reply-to, publisher confirms).
 * The model's metadata still comes from the gateway's HTTP API.
 */
export interface AmqpTargetOptions extends MetaTargetOptions {
  rabbitmqUrl: string;
  namespace: string;
  timeoutMs?: number;
}

export async function amqpTarget(
  o: AmqpTargetOptions,
): Promise<{ send: Send; meta: ModelMeta; close(): Promise<void> }> {
  const meta = await modelMetaOf(o);
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
