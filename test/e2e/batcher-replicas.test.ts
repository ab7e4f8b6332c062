import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { demoModel, sampleInputs } from '@ge-mesh/demo-models';
import { type ServiceProcess, startService } from '@ge-mesh/launcher';
import { BatchStore } from '@ge-mesh/store';
import { outputY, RawProducer, type SentRequest, tinyVariants } from '../support/batcher-fixtures.js';
import { DURABILITY, RABBITMQ_URL, REDIS_URL, startTestMesh, type TestMesh } from '../support/mesh-harness.js';
import { Reference, toleranceRatio } from '../support/reference.js';

/**
 * Several batcher processes on one model, and batchers killed with SIGKILL
 * under load, on the real broker and Redis. A raw AMQP producer publishes
 * the requests itself and receives every reply on its own queue, so replies
 * are counted per request exactly: every request must be answered exactly
 * once, with its own outputs (checked against onnxruntime in-process).
 */
const MODELS = {
  rep: 'max_batch_size: 8\ndynamic_batching { preferred_batch_size: [ 1, 2, 4, 8 ] max_queue_delay_microseconds: 1000 }',
  // Two lanes could finish batches out of order; preserve_ordering must not let them.
  ord: `max_batch_size: 4
dynamic_batching { preferred_batch_size: [ 4 ] max_queue_delay_microseconds: 2000 preserve_ordering: true }
instance_group [ { count: 2 } ]`,
};

describe('batcher replicas and crashes (real broker and Redis)', { timeout: 240_000 }, () => {
  let mesh: TestMesh;
  let repo: Awaited<ReturnType<typeof tinyVariants>>;
  let producer: RawProducer;
  const ref = new Reference();
  const extra = new Map<string, ServiceProcess>();

  /** Another batcher process in the mesh's namespace. */
  function replica(label: string, args: string[] = [], env: NodeJS.ProcessEnv = {}): ServiceProcess {
    const p = startService(
      'batcher',
      label,
      ['--namespace', mesh.namespace, '--model-repository', repo.dir, '--log-level', 'debug', ...args],
      {
        namespace: mesh.namespace,
        modelRepository: repo.dir,
        httpPort: 0,
        env: { GEMESH_RABBITMQ_URL: RABBITMQ_URL, GEMESH_REDIS_URL: REDIS_URL, ...env },
        onLine: (svc, line) => {
          mesh.lines.push(`[${svc}] ${line}`);
          if (process.env.GEMESH_TEST_VERBOSE) process.stderr.write(`[${svc}] ${line}\n`);
        },
      },
    );
    extra.set(label, p);
    return p;
  }

  async function readyAll(labels: string[]): Promise<void> {
    const until = Date.now() + 60_000;
    while (
      !labels.every((l) => mesh.lines.some((x) => x.startsWith(`[${l}]`) && x.includes('"msg":"batcher ready"')))
    ) {
      if (Date.now() > until) throw new Error(`replicas not ready: ${labels.join(', ')}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  before(async () => {
    repo = await tinyVariants(MODELS);
    mesh = await startTestMesh({
      modelRepository: repo.dir,
      models: Object.keys(MODELS),
      flags: { batcher: ['--log-level', 'debug'] },
    });
    replica('batcher-b');
    replica('batcher-c');
    await readyAll(['batcher-b', 'batcher-c']);
    producer = await RawProducer.open(mesh.namespace);
  });
  after(async () => {
    for (const p of extra.values())
      if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGTERM');
    await Promise.all([...extra.values()].map((p) => p.exited));
    await producer?.close();
    await ref.close();
    await mesh?.teardown();
    await repo?.remove();
  });

  const STORED = DURABILITY === 'fast';

  /** Publish `n` requests of 1–3 rows, `parallel` at a time, calling `during(i)` before the i-th. */
  async function load(n: number, during: (i: number) => void = () => undefined, parallel = 8): Promise<SentRequest[]> {
    const sent: SentRequest[] = [];
    for (let i = 0; i < n; i += parallel) {
      for (let k = i; k < Math.min(n, i + parallel); k++) during(k);
      const chunk = Array.from({ length: Math.min(parallel, n - i) }, (_, k) =>
        // In fast mode every other request travels beside its message, as a large one from the gateway.
        producer.send('rep', { rows: 1 + ((i + k) % 3), seed: 10_000 + i + k, stored: STORED && (i + k) % 2 === 0 }),
      );
      sent.push(...(await Promise.all(chunk)));
    }
    return sent;
  }

  /** Every request answered exactly once (no duplicate even after a grace period), with its own outputs. */
  async function answeredExactlyOnce(sent: SentRequest[]): Promise<void> {
    const linesBefore = mesh.lines.length;
    // Where the model's batches stand if the answers are slow: read into the failure message.
    let stalled = '';
    const snapshot = setTimeout(() => {
      void inFlightState().then(
        (s) => {
          stalled = s;
        },
        (err: Error) => {
          stalled = `not read: ${err.message}`;
        },
      );
    }, 15_000);
    try {
      await producer.waitAll(
        sent.map((s) => s.id),
        90_000,
      );
    } finally {
      clearTimeout(snapshot);
    }
    await new Promise((r) => setTimeout(r, 1_000));
    const counts = sent.map((s) => producer.count(s.id));
    assert.equal(counts.filter((c) => c === 0).length, 0, 'lost');
    assert.equal(counts.filter((c) => c > 1).length, 0, 'answered twice');
    const byId = new Map(producer.replies.map((r) => [r.id, r]));
    const failed = sent.filter((s) => byId.get(s.id)?.error);
    const first = failed[0];
    if (first) {
      // Say how many failed and what the batchers logged, so a failure in CI can be read from its output.
      const store = BatchStore.connect(REDIS_URL, mesh.namespace);
      const owner = await store.redis.get(store.claimKey('rep', first.id));
      const m = owner && !owner.startsWith('!') ? await store.manifest(owner, 'rep') : null;
      const inflight = await store.redis.zrange(store.inFlightKey('rep'), '0', '-1');
      await store.close();
      const codes = new Map<string, number>();
      for (const s of failed) {
        const code = byId.get(s.id)?.error?.code ?? '?';
        codes.set(code, (codes.get(code) ?? 0) + 1);
      }
      const notable = mesh.lines.slice(linesBefore).filter((l) => /"level":(40|50|60)/.test(l));
      assert.fail(
        `${failed.length} of ${sent.length} answered with an error (${[...codes].map(([c, n]) => `${c} ${n}`).join(', ')}); ` +
          `first ${first.id}: ${byId.get(first.id)?.error?.message}; claim ${owner}, state ${m?.state}, members ${m?.members.length}, ` +
          `in flight ${inflight.join(' ')}\n15 s into the wait: ${stalled || '(answered by then)'}\n` +
          `warnings and errors of the mesh meanwhile (${notable.length}):\n${notable.slice(0, 15).join('\n')}`,
      );
    }
    for (const s of sent) {
      const res = byId.get(s.id);
      assert.ok(res);
      const want = await ref.run('tiny', sampleInputs(demoModel('tiny'), s.rows, s.seed));
      const y = want.y;
      assert.ok(y);
      assert.ok(toleranceRatio(outputY(res), y.data, 1e-4, 1e-3) <= 1, `${s.id}: outputs differ from the reference`);
    }
  }

  /** The model's in-flight batches in Redis, each with its state and how many members it still holds. */
  async function inFlightState(): Promise<string> {
    const store = BatchStore.connect(REDIS_URL, mesh.namespace);
    try {
      const batches = await store.inFlightBatches('rep');
      const out = [`${batches.length} batch(es) in flight at ${Date.now()}`];
      for (const b of batches) {
        const m = await store.manifest(b.batchId, 'rep');
        const claims = await Promise.all((m?.members ?? []).map((x) => store.redis.get(store.claimKey('rep', x.id))));
        const own = claims.filter((c) => c === b.batchId).length;
        out.push(
          `${b.batchId} lapses ${b.lapsesAt}: state ${b.state}, ${m?.members.length} member(s), ${own} still claimed by it`,
        );
      }
      return out.join('; ');
    } finally {
      await store.close();
    }
  }

  const published = (label: string) =>
    mesh.lines.filter((l) => l.startsWith(`[${label}]`) && l.includes('"msg":"batch published"')).length;

  it('three replicas under load: every request answered exactly once, all three forming batches', async () => {
    const sent = await load(300);
    await answeredExactlyOnce(sent);
    for (const label of ['batcher', 'batcher-b', 'batcher-c'])
      assert.ok(published(label) > 0, `${label} formed no batch`);
  });

  it('a batcher crashing in each window of a batch (SIGKILL) loses nothing and answers nothing twice', async () => {
    // One dies at its first batch for an idle lane, with the batch and create-batch both written
    // (neither answered); the others at their 2nd batch: after recording it in Redis, and after
    // the broker confirmed it but before acking its requests (its state still 'formed').
    const faulty = ['sent:1', 'recorded:2', 'published:2'].map((point) =>
      replica(`batcher-crash-${point.split(':')[0]}`, ['--models', 'rep'], { GEMESH_TEST_CRASH_POINT: point }),
    );
    await readyAll(faulty.map((f) => f.name));
    const sent = await load(300);
    await answeredExactlyOnce(sent);
    for (const f of faulty) {
      assert.equal(f.child.signalCode, 'SIGKILL', `${f.name} did not crash (exit ${f.child.exitCode})`);
    }
  });

  it('SIGKILL of a batcher under load: zero lost, zero duplicate answers', async () => {
    const victim = extra.get('batcher-b');
    assert.ok(victim);
    const sent = await load(400, (i) => {
      if (i === 120) victim.child.kill('SIGKILL');
    });
    await answeredExactlyOnce(sent);
    await victim.exited;
    assert.equal(victim.child.signalCode, 'SIGKILL');
  });

  it('preserve_ordering: responses come back in request order, over two lanes and across a change of lead', async () => {
    const leader = () => {
      const line = mesh.lines.filter((l) => l.includes('"msg":"leading (preserve_ordering)"')).at(-1) ?? '';
      return /^\[([\w-]+)\]/.exec(line)?.[1];
    };
    const order = async (seed: number): Promise<void> => {
      const sent: SentRequest[] = [];
      for (let i = 0; i < 30; i++) sent.push(await producer.send('ord', { rows: 1 + (i % 3), seed: seed + i }));
      await producer.waitAll(
        sent.map((s) => s.id),
        60_000,
      );
      const ids = new Set(sent.map((s) => s.id));
      const replies = producer.replies.filter((r) => ids.has(r.id));
      assert.ok(replies.every((r) => !r.error));
      assert.deepEqual(
        replies.map((r) => r.id),
        sent.map((s) => s.id),
      );
    };
    await order(50_000);
    const first = leader();
    assert.ok(first, 'a batcher leads the model');
    // Kill the leader: another batcher takes the lead once its lease lapses.
    const proc = extra.get(first) ?? mesh.services.find((s) => s.name === first);
    assert.ok(proc);
    proc.child.kill('SIGKILL');
    await proc.exited;
    await order(60_000);
    assert.notEqual(leader(), first);
  });
});
