import { randomUUID } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { topology } from '@ge-mesh/broker';
import { demoModel, ensureDemoModels, sampleInputs } from '@ge-mesh/demo-models';
import {
  decodeResponses,
  encode,
  type InferRequestMessage,
  type InferResponseMessage,
  PROTOCOL_VERSION,
  storedEnvelope,
} from '@ge-mesh/protocol';
import { BatchStore } from '@ge-mesh/store';
import amqp, { type ChannelModel, type ConfirmChannel } from 'amqplib';
import { DEMO_REPOSITORY, DURABILITY, RABBITMQ_URL, REDIS_URL } from './mesh-harness.js';

/**
 * A throw-away model repository of variants of the demo model `tiny`
 * (x FP32 [16] → y FP32 [4]), one per config body given: the same ONNX file
 * under the batching and queue-policy settings a test needs.
 */
export async function tinyVariants(configs: Record<string, string>): Promise<{ dir: string; remove(): Promise<void> }> {
  await ensureDemoModels(DEMO_REPOSITORY);
  const dir = await mkdtemp(join(tmpdir(), 'gemesh-batcher-'));
  for (const [name, body] of Object.entries(configs)) await writeTinyVariant(dir, name, body);
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/** One variant of `tiny` in a repository folder: version 1's model file and a config with `body` (written again on each call). */
export async function writeTinyVariant(dir: string, name: string, body: string): Promise<void> {
  await mkdir(join(dir, name, '1'), { recursive: true });
  await copyFile(join(DEMO_REPOSITORY, 'tiny', '1', 'model.onnx'), join(dir, name, '1', 'model.onnx'));
  await writeFile(join(dir, name, 'config.pbtxt'), `name: "${name}"\nbackend: "onnxruntime"\n${body}\n`);
}

/** A batching config body for tiny's variants: these tiers as preferred batch sizes, the largest as max_batch_size. */
export const tiersConfig = (tiers: readonly number[]) =>
  `max_batch_size: ${Math.max(...tiers)}\ndynamic_batching { preferred_batch_size: [ ${tiers.join(', ')} ] }`;

export interface RawRequestOptions {
  rows?: number;
  seed?: number;
  priority?: number;
  timeoutUs?: number;
  /** From now, ms. */
  deadlineMs?: number;
  /** Protocol version stamped on the message (another service version's). */
  version?: number;
  /** Travel beside the message, as the gateway sends a large request (InferRequestMessage.stored). */
  stored?: boolean;
}

/**
 * An InferRequestMessage of `tiny`'s shape (input x: `rows` samples of
 * sampleInputs with `seed`), as a gateway would publish it.
 */
export function tinyRequest(
  o: Omit<RawRequestOptions, 'stored'> & { seed: number; replyTo: string; model?: string; clientId?: string },
): InferRequestMessage {
  const rows = o.rows ?? 1;
  const id = randomUUID();
  const [x] = sampleInputs(demoModel('tiny'), rows, o.seed);
  if (!x || !(x.data instanceof Float32Array)) throw new Error('tiny takes one FP32 input');
  const now = Date.now();
  return {
    v: (o.version ?? PROTOCOL_VERSION) as typeof PROTOCOL_VERSION,
    id,
    model: o.model ?? 'tiny',
    version: '1',
    inputs: [{ name: 'x', datatype: 'FP32', shape: x.dims, data: new Uint8Array(x.data.buffer, 0, x.data.byteLength) }],
    outputs: [],
    batch: rows,
    priority: o.priority ?? 0,
    timeoutUs: o.timeoutUs ?? 0,
    deadline: now + (o.deadlineMs ?? 60_000),
    acceptedAt: now,
    replyTo: o.replyTo,
    correlationId: id,
    ...(o.clientId ? { clientId: o.clientId } : {}),
  };
}

export interface SentRequest {
  id: string;
  model: string;
  rows: number;
  seed: number;
}

/**
 * A producer that speaks the mesh's wire protocol itself: it publishes
 * InferRequestMessages for tiny variants straight to a model's request
 * queue (with publisher confirms) and receives every reply on its own queue,
 * so tests count the replies per request exactly, duplicates included.
 */
export class RawProducer {
  /** Every reply received, in arrival order. */
  readonly replies: InferResponseMessage[] = [];
  private readonly counts = new Map<string, number>();
  private waiters: Array<() => void> = [];

  private store?: BatchStore;

  private constructor(
    private readonly conn: ChannelModel,
    private readonly ch: ConfirmChannel,
    readonly replyQueue: string,
    private readonly namespace: string,
  ) {}

  static async open(namespace: string): Promise<RawProducer> {
    const conn = await amqp.connect(RABBITMQ_URL, { noDelay: true });
    const ch = await conn.createConfirmChannel();
    const replyQueue = `${namespace}.replies.raw-${randomUUID()}`;
    await ch.assertQueue(replyQueue, { exclusive: true, autoDelete: true, durable: false });
    const p = new RawProducer(conn, ch, replyQueue, namespace);
    await ch.consume(
      replyQueue,
      (msg) => {
        if (!msg) return;
        for (const res of decodeResponses(msg.content)) {
          p.replies.push(res);
          p.counts.set(res.id, (p.counts.get(res.id) ?? 0) + 1);
        }
        for (const w of p.waiters) w();
      },
      { noAck: true },
    );
    return p;
  }

  count(id: string): number {
    return this.counts.get(id) ?? 0;
  }

  /** Publish one request and wait for the broker's confirm. */
  async send(model: string, o: RawRequestOptions = {}): Promise<SentRequest> {
    const { id, body, rows, seed, envelope } = this.request(model, o);
    let message = body;
    if (o.stored) {
      this.store ??= BatchStore.connect(REDIS_URL, this.namespace);
      await this.store.storeRequestBody(model, id, body, (o.deadlineMs ?? 60_000) + 5_000);
      message = envelope;
    }
    await this.publish(topology(this.namespace, DURABILITY).requests(model), message);
    return { id, model, rows, seed };
  }

  /** Publish any body to a queue of the mesh and wait for the broker's confirm. */
  publish(queue: string, body: Buffer, headers?: Record<string, string>): Promise<void> {
    return new Promise<void>((resolve, reject) =>
      this.ch.sendToQueue(
        queue,
        body,
        { persistent: DURABILITY === 'durable', ...(headers ? { headers } : {}) },
        (err) => (err ? reject(err) : resolve()),
      ),
    );
  }

  /** An encoded request of `tiny`'s shape, answered on this producer's queue. */
  request(
    model: string,
    o: RawRequestOptions = {},
  ): { id: string; body: Buffer; rows: number; seed: number; envelope: Buffer } {
    const rows = o.rows ?? 1;
    const seed = o.seed ?? Math.floor(Math.random() * 1e9);
    const msg = tinyRequest({ ...o, model, rows, seed, replyTo: this.replyQueue });
    return { id: msg.id, body: encode(msg), rows, seed, envelope: encode(storedEnvelope(msg)) };
  }

  /** Resolves once every id has at least one reply, or rejects after `timeoutMs` naming how many are missing. */
  async waitAll(ids: readonly string[], timeoutMs: number): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (ids.some((id) => this.count(id) === 0)) {
      const left = until - Date.now();
      if (left <= 0) {
        const missing = ids.filter((id) => this.count(id) === 0).length;
        throw new Error(`${missing} of ${ids.length} requests unanswered after ${timeoutMs} ms`);
      }
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.min(left, 200));
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
      this.waiters = [];
    }
  }

  async close(): Promise<void> {
    await this.conn.close().catch(() => undefined);
    await this.store?.close();
  }
}

/** The FP32 output `y` of a reply, copied out of its (possibly unaligned) bytes. */
export function outputY(res: InferResponseMessage): Float32Array {
  const t = res.outputs?.find((o) => o.name === 'y');
  if (!t) throw new Error(`reply ${res.id} has no output y (${res.error?.message ?? 'no error'})`);
  return new Float32Array(Uint8Array.from(t.data).buffer);
}
