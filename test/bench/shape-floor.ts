/**
 * The shape's floor: the mesh's hops and round trips with nothing else in
 * them, to tell what the shape itself costs on this machine from what the
 * mesh's code adds. Three processes with the services' V8 flags:
 * - gateway: node:http (lighter than the gateway's fastify), publishes each
 *   request's raw body unconfirmed to a classic queue with transient messages,
 *   answers from one reply queue with a precomputed response;
 * - batcher: consumes requests, takes up to max_batch_size of them while the
 *   worker has a batch slot free (two per lane, as the mesh), runs one Redis
 *   script, publishes the batch with a confirm and then acks its members,
 *   coalesced as the mesh's batcher does (ChannelAcks: one multiple ack for
 *   the oldest run); a batch for an idle lane is published first and the
 *   script written once the broker confirmed it, as the mesh's batcher does;
 *   finish notifications come over Redis pub/sub, as the mesh's do;
 * - worker: consumes batches (prefetch two), runs one Redis script while a
 *   worker_thread lane decodes the batch and encodes one reply per reply
 *   queue (output-sized answers, no engine), publishes the replies, acks the
 *   batch, runs a last Redis script that publishes the finish.
 * It parses no KServe request, validates nothing and runs no model: each
 * figure it gives is a bound the mesh cannot beat with this shape here.
 *
 *   node --import tsx test/bench/shape-floor.ts --role gateway|batcher|worker --prefix P --model tiny [--port N]
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import { ChannelAcks, coalesceWrites } from '@ge-mesh/broker';
import { ROOT, SERVICE_NODE_FLAGS, waitForHttp } from '@ge-mesh/launcher';
import { loadModel } from '@ge-mesh/model-repository';
import { elementCount } from '@ge-mesh/protocol';
import amqp, { type ChannelModel, type ConsumeMessage } from 'amqplib';
import { Redis } from 'ioredis';
import { pack, unpack } from 'msgpackr';
import { encodeInferResponse } from '../../services/gateway/src/infer/index.js';
import { movableCopy } from '../../services/worker/src/lane-messages.js';
import { DEMO_REPOSITORY, freePort, RABBITMQ_URL, REDIS_URL } from '../support/mesh-harness.js';
import type { Proc } from './host-processes.js';
import { modelMetadataJson } from './model-metadata.js';

type Role = 'gateway' | 'batcher' | 'worker';
const ROLES: readonly Role[] = ['worker', 'batcher', 'gateway'];
/** Batches a lane holds: the one it runs and the next (the mesh's BATCHES_IN_HAND_PER_LANE). */
const SLOTS = 2;

const queues = (prefix: string) => ({
  requests: `${prefix}.requests`,
  batches: `${prefix}.batches`,
  finished: `${prefix}.finished`,
});
const QUEUE = { durable: false, autoDelete: true, arguments: { 'x-queue-type': 'classic' } } as const;

async function connect(): Promise<ChannelModel> {
  const conn = await amqp.connect(RABBITMQ_URL, { noDelay: true });
  coalesceWrites((conn.connection as unknown as { stream: Socket }).stream);
  return conn;
}

/** Three one-round-trip scripts, as many as a mesh batch runs (create, start, finish). */
function redisWithScripts() {
  const redis = new Redis(REDIS_URL, { enableAutoPipelining: true });
  redis.defineCommand('floorCreate', {
    numberOfKeys: 1,
    lua: "redis.call('HSET', KEYS[1], 'state', 'formed', 'n', ARGV[1]); return redis.call('PEXPIRE', KEYS[1], 30000)",
  });
  redis.defineCommand('floorStart', { numberOfKeys: 1, lua: "return redis.call('HSET', KEYS[1], 'state', 'running')" });
  redis.defineCommand('floorFinish', {
    numberOfKeys: 1,
    lua: "redis.call('DEL', KEYS[1]); return redis.call('PUBLISH', ARGV[1], KEYS[1])",
  });
  return redis as Redis & {
    floorCreate(key: string, n: number): Promise<number>;
    floorStart(key: string): Promise<number>;
    floorFinish(key: string, channel: string): Promise<number>;
  };
}

async function gateway(prefix: string, modelName: string, port: number): Promise<void> {
  const model = await loadModel(DEMO_REPOSITORY, modelName);
  const batched = model.config.maxBatchSize > 0;
  const shapeOf = (dims: readonly number[]) => [...(batched ? [1] : []), ...dims];
  const metadata = modelMetadataJson(model, '1');
  const answer = encodeInferResponse(
    {
      model: model.name,
      version: '1',
      outputs: model.config.output.map((o) => ({
        name: o.name,
        datatype: o.dataType,
        shape: shapeOf(o.dims),
        data: new Uint8Array(elementCount(shapeOf(o.dims)) * 4),
      })),
    },
    [],
    true,
  );
  const headers = {
    'content-type': answer.contentType,
    ...(answer.headerLength !== undefined ? { 'inference-header-content-length': String(answer.headerLength) } : {}),
  };
  const q = queues(prefix);
  const conn = await connect();
  const ch = await conn.createChannel();
  await ch.assertQueue(q.requests, QUEUE);
  const replyTo = (await ch.assertQueue('', { exclusive: true, autoDelete: true, durable: false })).queue;
  const waiting = new Map<string, ServerResponse>();
  await ch.consume(
    replyTo,
    (m) => {
      if (!m) return;
      for (const [id] of unpack(m.content) as Array<[string, Uint8Array]>) {
        const res = waiting.get(id);
        waiting.delete(id);
        res?.writeHead(200, headers).end(answer.body);
      }
    },
    { noAck: true },
  );
  let seq = 0;
  const server = createServer((req, res) => {
    if (req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(metadata);
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const id = String(++seq);
      waiting.set(id, res);
      ch.publish('', q.requests, Buffer.concat(chunks), { correlationId: id, replyTo, deliveryMode: 1 });
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(port, '127.0.0.1');
  await once(server, 'listening');
}

async function batcher(prefix: string, modelName: string): Promise<void> {
  const maxBatch = Math.max(1, (await loadModel(DEMO_REPOSITORY, modelName)).config.maxBatchSize);
  const q = queues(prefix);
  const redis = redisWithScripts();
  const finishes = redis.duplicate();
  const conn = await connect();
  const ch = await conn.createConfirmChannel();
  await ch.assertQueue(q.requests, QUEUE);
  await ch.assertQueue(q.batches, QUEUE);
  await ch.prefetch(1024);
  const acks = new ChannelAcks(ch);
  const queued: ConsumeMessage[] = [];
  let inFlight = 0;
  let scheduled = false;
  const send = async (members: ConsumeMessage[], laneIdle: boolean) => {
    const batchId = `${prefix}:${randomUUID()}`;
    const body = pack([batchId, members.map((m) => [m.properties.replyTo, m.properties.correlationId, m.content])]);
    const publish = () =>
      new Promise<void>((resolve, reject) =>
        ch.publish('', q.batches, body, { deliveryMode: 1 }, (err) => (err ? reject(err) : resolve())),
      );
    // As the mesh's batcher (fast mode): a batch for an idle lane goes out first, the script once it is confirmed.
    if (laneIdle) {
      await publish();
      await redis.floorCreate(batchId, members.length);
    } else {
      await redis.floorCreate(batchId, members.length);
      await publish();
    }
    for (const m of members) acks.ack(m);
  };
  const form = () => {
    scheduled = false;
    while (inFlight < SLOTS && queued.length > 0) {
      void send(queued.splice(0, maxBatch), inFlight < SLOTS / 2);
      inFlight++;
    }
  };
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(form);
  };
  finishes.on('message', () => {
    inFlight--;
    schedule();
  });
  await finishes.subscribe(q.finished);
  await ch.consume(q.requests, (m) => {
    if (!m) return;
    acks.delivered(m);
    queued.push(m);
    schedule();
  });
}

async function worker(prefix: string, modelName: string): Promise<void> {
  const model = await loadModel(DEMO_REPOSITORY, modelName);
  const outputBytes = model.config.output.reduce((n, o) => n + elementCount(o.dims) * 4, 0);
  const lane = new Worker(new URL('./shape-floor-lane.mjs', import.meta.url), { workerData: { outputBytes } });
  const pending = new Map<number, (replies: Array<{ replyTo: string; body: Uint8Array }>) => void>();
  lane.on('message', (m: { seq: number; replies: Array<{ replyTo: string; body: Uint8Array }> }) => {
    pending.get(m.seq)?.(m.replies);
    pending.delete(m.seq);
  });
  let seq = 0;
  const run = (batch: Buffer) =>
    new Promise<Array<{ replyTo: string; body: Uint8Array }>>((resolve) => {
      pending.set(++seq, resolve);
      // Copied once and moved, as the mesh's worker does (movableCopy).
      const moved = movableCopy(batch);
      lane.postMessage({ seq, batch: moved }, [moved.buffer as ArrayBuffer]);
    });
  const q = queues(prefix);
  const redis = redisWithScripts();
  const conn = await connect();
  const ch = await conn.createChannel();
  await ch.assertQueue(q.batches, QUEUE);
  await ch.prefetch(SLOTS);
  await ch.consume(q.batches, async (m) => {
    if (!m) return;
    // The batch id is the message's first field; the lane decodes the rest.
    const [batchId] = unpack(m.content) as [string];
    const [, replies] = await Promise.all([redis.floorStart(batchId), run(m.content)]);
    for (const r of replies)
      ch.publish('', r.replyTo, Buffer.from(r.body.buffer, r.body.byteOffset, r.body.byteLength));
    ch.ack(m);
    await redis.floorFinish(batchId, q.finished);
  });
}

export interface ShapeFloor {
  url: string;
  procs: Proc[];
  stop(): Promise<void>;
}

/** Start the three floor processes for one demo model; resolves when the gateway answers. */
export async function startShapeFloor(model: string): Promise<ShapeFloor> {
  const prefix = `bench-floor-${randomUUID().slice(0, 8)}`;
  const port = await freePort();
  const children = ROLES.map((role) =>
    spawn(
      process.execPath,
      [
        ...SERVICE_NODE_FLAGS,
        '--import',
        'tsx',
        new URL(import.meta.url).pathname,
        '--role',
        role,
        '--prefix',
        prefix,
        '--model',
        model,
        '--port',
        String(port),
      ],
      { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] },
    ),
  );
  const exits = children.map((c) => once(c, 'exit'));
  const kill = () => {
    for (const c of children) c.kill('SIGKILL');
  };
  process.once('exit', kill);
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/v2/models/${model}`, 60_000, (s) => s === 200);
  return {
    url,
    procs: children.map((c, i) => ({ name: `floor ${ROLES[i]}`, pid: c.pid ?? 0 })),
    async stop() {
      process.off('exit', kill);
      // The queues are auto-delete: they go with their consumers.
      for (const c of children) c.kill('SIGTERM');
      await Promise.all(exits);
    },
  };
}

if (process.argv[1] === new URL(import.meta.url).pathname) {
  const { values } = parseArgs({
    options: {
      role: { type: 'string' },
      prefix: { type: 'string' },
      model: { type: 'string', default: 'tiny' },
      port: { type: 'string', default: '0' },
    },
  });
  const prefix = values.prefix ?? 'bench-floor';
  const model = values.model ?? 'tiny';
  const role = values.role as Role;
  process.on('SIGTERM', () => process.exit(0));
  if (role === 'gateway') await gateway(prefix, model, Number(values.port));
  else if (role === 'batcher') await batcher(prefix, model);
  else if (role === 'worker') await worker(prefix, model);
  else throw new Error(`--role must be one of ${ROLES.join(', ')}`);
}
