import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_DELIVERY_LIMIT, topology } from '@ge-mesh/broker';
import { demoModel, sampleInputs } from '@ge-mesh/demo-models';
import { decodeResponses, encode, type InferResponseMessage, isErrorCode } from '@ge-mesh/protocol';
import { ModelKeys, type WorkerInfo, WorkerRegistry } from '@ge-mesh/store';
import amqp, { type ChannelModel, type ConfirmChannel } from 'amqplib';
import { Redis } from 'ioredis';
import { tinyRequest } from '../support/batcher-fixtures.js';
import { driveHttp } from '../support/http-load.js';
import { DURABILITY, RABBITMQ_URL, REDIS_URL, startTestMesh, type TestMesh } from '../support/mesh-harness.js';
import { Reference, toleranceRatio } from '../support/reference.js';

/**
 * Three worker processes on the real RabbitMQ and Redis, each leasing its
 * own device with no id given: even spread of batches, kill -9 of one
 * under load, SIGTERM drain of another, and a poison batch that crashes
 * every worker that takes it.
 *
 * Load is open-loop (~200 req/s of `tiny`). The ledger publishes requests
 * straight to the model's request queue and receives every reply on its own
 * queue, so it sees the internal hop exactly: each request is checked for
 * its replies, their arrival before the deadline + 250 ms (or a typed
 * error), and its outputs against onnxruntime in this process. Under kill
 * -9, three quarters of the load goes through the gateway over HTTP, the
 * public path, where a client must see exactly one answer per request.
 *
 * Test fault injection (read once by each worker): every batch is held
 * 10 ms (GEMESH_TEST_LANE_DELAY_MS) so a worker killed under load is
 * certainly holding one; a request whose id is POISON kills the worker
 * that runs it (GEMESH_TEST_CRASH_ON_REQUEST).
 */
const RATE = 200;
const DEADLINE_MS = 3_000;
const HEARTBEAT_MS = 500;
const POISON = `poison-${randomUUID()}`;

interface Sent {
  seed: number;
  sentAt: number;
  deadline: number;
  replies: Array<{ at: number; res: InferResponseMessage }>;
}

/** Publishes tiny requests with confirms and records every reply per request id. */
class Ledger {
  readonly sent = new Map<string, Sent>();
  private constructor(
    private readonly conn: ChannelModel,
    private readonly ch: ConfirmChannel,
    private readonly queue: string,
    private readonly replyQueue: string,
  ) {}

  static async open(namespace: string): Promise<Ledger> {
    const conn = await amqp.connect(RABBITMQ_URL, { noDelay: true });
    const ch = await conn.createConfirmChannel();
    const replyQueue = `${namespace}.replies.ledger-${randomUUID()}`;
    await ch.assertQueue(replyQueue, { exclusive: true, autoDelete: true, durable: false });
    const l = new Ledger(conn, ch, topology(namespace, DURABILITY).requests('tiny'), replyQueue);
    await ch.consume(
      replyQueue,
      (msg) => {
        if (!msg) return;
        for (const res of decodeResponses(msg.content)) l.sent.get(res.id)?.replies.push({ at: Date.now(), res });
      },
      { noAck: true },
    );
    return l;
  }

  async send(seed: number, opts: { clientId?: string; deadlineMs?: number } = {}): Promise<string> {
    const msg = tinyRequest({
      seed,
      replyTo: this.replyQueue,
      deadlineMs: opts.deadlineMs ?? DEADLINE_MS,
      ...(opts.clientId ? { clientId: opts.clientId } : {}),
    });
    const { id } = msg;
    this.sent.set(id, { seed, sentAt: msg.acceptedAt, deadline: msg.deadline, replies: [] });
    await new Promise<void>((resolve, reject) =>
      this.ch.sendToQueue(this.queue, encode(msg), { persistent: DURABILITY === 'durable' }, (err) =>
        err ? reject(err) : resolve(),
      ),
    );
    return id;
  }

  /** Sends `rate` requests a second for `ms`, calling `at` with the elapsed time as it goes. */
  async drive(ms: number, at: (elapsed: number) => void = () => undefined, rate = RATE): Promise<string[]> {
    const start = Date.now();
    const sends: Promise<string>[] = [];
    while (Date.now() - start < ms) {
      const due = Math.floor(((Date.now() - start) / 1000) * rate);
      while (sends.length < due) sends.push(this.send(sends.length + start));
      at(Date.now() - start);
      await new Promise((r) => setTimeout(r, 5));
    }
    return Promise.all(sends);
  }

  /** Waits until every id has a reply or its deadline + 2 s passed, then 500 ms more for late duplicates. */
  async settle(ids: readonly string[]): Promise<void> {
    const last = Math.max(...ids.map((id) => this.sent.get(id)?.deadline ?? 0)) + 2_000;
    while (Date.now() < last && ids.some((id) => (this.sent.get(id)?.replies.length ?? 0) === 0)) {
      await new Promise((r) => setTimeout(r, 50));
    }
    await new Promise((r) => setTimeout(r, 500));
  }

  async close(): Promise<void> {
    await this.conn.close().catch(() => undefined);
  }
}

interface Tally {
  requests: number;
  lost: number;
  duplicates: number;
  ok: number;
  typedErrors: number;
  late: number;
  wrong: number;
  errorCodes: string[];
}

describe('workers at scale: leases, spread, kill -9, drain, poison', { timeout: 240_000 }, () => {
  let mesh: TestMesh;
  let ledger: Ledger;
  let redis: Redis;
  let registry: WorkerRegistry;
  const ref = new Reference();

  before(async () => {
    mesh = await startTestMesh({
      workers: 3,
      models: ['tiny'],
      logLevel: 'info',
      env: { GEMESH_TEST_LANE_DELAY_MS: '10', GEMESH_TEST_CRASH_ON_REQUEST: POISON },
      flags: {
        worker: ['--models', 'tiny', '--heartbeat-ms', String(HEARTBEAT_MS)],
        batcher: ['--models', 'tiny'],
        // Every HTTP request travels beside its message (as a large one does), through the kill too.
        gateway: ['--request-timeout-ms', String(DEADLINE_MS), '--large-request-bytes', '1'],
      },
    });
    ledger = await Ledger.open(mesh.namespace);
    redis = new Redis(REDIS_URL);
    registry = new WorkerRegistry(redis, mesh.namespace);
  });
  after(async () => {
    await ledger?.close();
    await ref.close();
    await redis?.quit();
    await mesh?.teardown();
  });

  const tinyBatches = (workers: WorkerInfo[]) =>
    new Map(workers.map((w) => [w.id, w.models.find((m) => m.model === 'tiny')?.batches ?? 0]));
  const waitFor = async (what: string, done: () => Promise<boolean>, timeoutMs: number) => {
    const until = Date.now() + timeoutMs;
    while (!(await done())) {
      if (Date.now() > until) throw new Error(`${what}: not within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  /** Every request of `ids` checked: one reply, in time or a typed error, outputs right. */
  async function tally(ids: readonly string[]): Promise<Tally> {
    const t: Tally = {
      requests: ids.length,
      lost: 0,
      duplicates: 0,
      ok: 0,
      typedErrors: 0,
      late: 0,
      wrong: 0,
      errorCodes: [],
    };
    for (const id of ids) {
      const s = ledger.sent.get(id);
      if (!s || s.replies.length === 0) {
        t.lost++;
        continue;
      }
      if (s.replies.length > 1) t.duplicates += s.replies.length - 1;
      const { at, res } = s.replies[0] as Sent['replies'][number];
      if (res.error) {
        if (isErrorCode(res.error.code)) t.typedErrors++;
        t.errorCodes.push(res.error.code);
        continue;
      }
      if (at > s.deadline + 250) t.late++;
      const y = res.outputs?.find((o) => o.name === 'y');
      const expected = (await ref.run('tiny', sampleInputs(demoModel('tiny'), 1, s.seed))).y?.data;
      const got = y ? new Float32Array(Uint8Array.from(y.data).buffer) : new Float32Array();
      if (!expected || toleranceRatio(got, expected, 1e-4, 1e-3) > 1) t.wrong++;
      else t.ok++;
    }
    return t;
  }

  it('gives each of 3 workers started without ids its own device', async () => {
    const workers = await registry.liveWorkers();
    assert.equal(workers.length, 3);
    assert.deepEqual(workers.flatMap((w) => w.devices).sort(), [0, 1, 2]);
    for (const w of workers) {
      assert.equal(await registry.leaseHolder('local', 'cpu', w.devices[0] as number), w.id);
      assert.deepEqual(
        [w.state, w.kind, w.models.map((m) => `${m.model}:${m.state}:${m.lanes}`)],
        ['ready', 'cpu', ['tiny:ready:1']],
      );
    }
    assert.equal(await registry.liveLanes('tiny'), 3);
  });

  it('spreads batches within 20% across equal workers', async () => {
    const before = tinyBatches(await registry.liveWorkers());
    const ids = await ledger.drive(4_000);
    await ledger.settle(ids);
    // Counts are published with each heartbeat.
    await new Promise((r) => setTimeout(r, HEARTBEAT_MS * 2));
    const afterCounts = tinyBatches(await registry.liveWorkers());
    const done = [...afterCounts].map(([id, n]) => n - (before.get(id) ?? 0));
    const mean = done.reduce((a, b) => a + b, 0) / done.length;
    assert.equal(done.length, 3);
    assert.ok(mean >= 20, `too few batches to compare: ${done.join(', ')}`);
    process.stderr.write(`batches per worker: ${done.join(', ')}\n`);
    for (const n of done) assert.ok(Math.abs(n - mean) <= 0.2 * mean, `batches per worker ${done.join(', ')}`);
    const t = await tally(ids);
    assert.deepEqual([t.lost, t.duplicates, t.wrong, t.ok], [0, 0, 0, ids.length], JSON.stringify(t));
  });

  it('kill -9 of a worker under load: nothing lost, each request answered once, every answer in time or a typed error', async () => {
    const victim = mesh.workers()[0];
    assert.ok(victim?.child.pid);
    const victimPid = victim.child.pid;
    const redeliveredBefore = mesh.lines.filter((l) => l.includes('"msg":"redelivered batch"')).length;
    let killedAt = 0;
    const kill = (elapsed: number) => {
      if (elapsed >= 1_500 && killedAt === 0) {
        killedAt = Date.now();
        process.kill(victimPid, 'SIGKILL');
      }
    };
    const [viaHttp, raw] = await Promise.all([
      driveHttp(mesh.url, (RATE * 3) / 4, 4_000, kill),
      ledger.drive(4_000, () => undefined, RATE / 4),
    ]);
    await ledger.settle(raw);

    // The public path: one answer per request, none lost, in time or a typed error, outputs right.
    const h = { requests: viaHttp.length, lost: 0, ok: 0, typedErrors: 0, late: 0, wrong: 0, untyped: 0 };
    // Successes per phase: before the kill, and from 1 s after it (the survivors took over).
    const phase = { okBefore: 0, sentAfter: 0, okAfter: 0 };
    const after = (sentAt: number) => sentAt >= killedAt + 1_000;
    for (const s of viaHttp) if (after(s.sentAt)) phase.sentAfter++;
    for (const s of viaHttp) {
      if (s.status === undefined) {
        h.lost++;
        continue;
      }
      if (s.status !== 200) {
        const e = JSON.parse(s.body ?? '{}') as { error?: unknown };
        if (typeof e.error === 'string' && [500, 503].includes(s.status)) h.typedErrors++;
        else h.untyped++;
        continue;
      }
      if ((s.at ?? 0) > s.sentAt + DEADLINE_MS + 250) h.late++;
      const y = (JSON.parse(s.body ?? '{}') as { outputs: Array<{ data: number[] }> }).outputs[0]?.data ?? [];
      const expected = (await ref.run('tiny', sampleInputs(demoModel('tiny'), 1, s.seed))).y?.data;
      if (!expected || toleranceRatio(y, expected, 1e-4, 1e-3) > 1) h.wrong++;
      else {
        h.ok++;
        if (s.sentAt < killedAt) phase.okBefore++;
        if (after(s.sentAt)) phase.okAfter++;
      }
    }
    assert.ok(phase.okBefore >= 100, `200s before the kill: ${JSON.stringify(phase)}`);
    assert.ok(phase.okAfter >= 100, `200s after the kill: ${JSON.stringify(phase)}`);
    assert.ok(phase.okAfter >= 0.99 * phase.sentAfter, `200s after the kill: ${JSON.stringify(phase)}`);
    assert.ok(h.requests >= RATE * 2, `sent ${h.requests}`);
    assert.deepEqual(
      { lost: h.lost, late: h.late, wrong: h.wrong, untyped: h.untyped },
      { lost: 0, late: 0, wrong: 0, untyped: 0 },
      JSON.stringify(h),
    );

    // The internal hop, seen raw: nothing lost; a kill can repeat only the one batch the victim held
    // (prefetch = its one lane), at most max_batch_size replies, which the gateway drops.
    const t = await tally(raw);
    assert.deepEqual(
      { lost: t.lost, late: t.late, wrong: t.wrong, untyped: t.requests - t.ok - t.typedErrors },
      { lost: 0, late: 0, wrong: 0, untyped: 0 },
      JSON.stringify(t),
    );
    assert.ok(t.duplicates <= 8, `duplicate replies ${t.duplicates}`);

    // The batch the victim held was run again by another worker.
    const redelivered = mesh.lines.filter((l) => l.includes('"msg":"redelivered batch"')).length - redeliveredBefore;
    assert.ok(redelivered >= 1, 'no batch was redelivered');
    // The dead worker left the registry within its heartbeat TTL; the supervisor started it again,
    // and the replacement took a free device once the dead one's lease lapsed.
    const live = await registry.liveWorkers();
    assert.ok(!live.some((w) => w.pid === victimPid));
    await waitFor(
      '3 live workers again',
      async () => (await registry.liveWorkers()).filter((w) => w.state === 'ready').length === 3,
      60_000,
    );
    assert.deepEqual((await registry.liveWorkers()).flatMap((w) => w.devices).sort(), [0, 1, 2]);
    process.stderr.write(
      `kill -9: http ${JSON.stringify(h)}; raw ${JSON.stringify(t)}; redelivered batches ${redelivered}\n`,
    );
  });

  it('SIGTERM drains a worker under load: zero failed requests, exit 0, lease released, nothing redelivered', async () => {
    const victim = mesh.workers()[1];
    assert.ok(victim?.child.pid);
    const pid = victim.child.pid;
    const w = (await registry.liveWorkers()).find((x) => x.pid === pid);
    assert.ok(w);
    // The kill -9 before this test returns its victim's batches: let those redeliveries land first.
    // Every batch formed so far is finished (none in flight that has not lapsed), and then no new
    // redelivery shows for 1.5 s.
    const inFlight = new ModelKeys(mesh.namespace).inFlightKey('tiny');
    await waitFor('every batch finished', async () => (await redis.zcount(inFlight, Date.now(), '+inf')) === 0, 60_000);
    const redeliveries = () => mesh.lines.filter((l) => l.includes('"msg":"redelivered batch"')).length;
    for (let seen = -1, i = 0; seen !== redeliveries() && i < 10; i++) {
      seen = redeliveries();
      await new Promise((r) => setTimeout(r, 1_500));
    }
    const redeliveredBefore = redeliveries();
    let termAt = 0;
    let exit: Promise<number | null> | undefined;
    const ids = await ledger.drive(3_000, (elapsed) => {
      if (elapsed >= 1_000 && termAt === 0) {
        termAt = Date.now();
        exit = victim.exited;
        victim.child.kill('SIGTERM');
      }
    });
    assert.equal(await exit, 0);
    assert.ok(Date.now() - termAt < 10_000);
    await ledger.settle(ids);
    const t = await tally(ids);
    assert.deepEqual([t.ok, t.lost, t.duplicates, t.wrong], [ids.length, 0, 0, 0], JSON.stringify(t));
    assert.equal(await registry.leaseHolder('local', 'cpu', w.devices[0] as number), null);
    assert.ok(!(await registry.liveWorkers()).some((x) => x.pid === pid));
    assert.equal(redeliveries(), redeliveredBefore);
    const drained = mesh.lines.find((l) => l.includes(`"pid":${pid}`) && l.includes('"msg":"stopped"'));
    assert.match(drained ?? '', /"drained":true/);
  });

  it('dead-letters a poison batch after the delivery limit and answers it with POISON_INPUT, once', async () => {
    const restartsBefore = mesh.restarts();
    const id = await ledger.send(7, { clientId: POISON, deadlineMs: 60_000 });
    await ledger.settle([id]);
    const replies = ledger.sent.get(id)?.replies ?? [];
    assert.equal(replies.length, 1);
    assert.deepEqual(replies[0]?.res.error, {
      code: 'POISON_INPUT',
      message: `the batch carrying this request was dead-lettered after the delivery limit of ${DEFAULT_DELIVERY_LIMIT} redeliveries: every worker that ran it crashed or gave it back`,
    });
    // Each delivery crashed one worker; the limit bounds them. Nothing crashes afterwards.
    const crashes = mesh.restarts() - restartsBefore;
    assert.ok(crashes >= 1 && crashes <= DEFAULT_DELIVERY_LIMIT + 1, `crashes: ${crashes}`);
    await new Promise((r) => setTimeout(r, 1_500));
    assert.equal(mesh.restarts() - restartsBefore, crashes);
    assert.equal(
      mesh.lines.filter((l) => l.includes('"msg":"dead-lettered batch: its requests were answered with POISON_INPUT"'))
        .length,
      1,
    );
    // The mesh serves again once the crashed workers are back.
    await waitFor(
      '2 live workers',
      async () => (await registry.liveWorkers()).filter((w) => w.state === 'ready').length >= 2,
      60_000,
    );
    const ids = [await ledger.send(1), await ledger.send(2)];
    await ledger.settle(ids);
    assert.equal((await tally(ids)).ok, 2);
    process.stderr.write(`poison: ${crashes} worker crashes before it was dead-lettered\n`);
  });
});
