import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { demoModel, sampleInputs } from '@ge-mesh/demo-models';
import { BatchStore } from '@ge-mesh/store';
import { RawProducer, tinyVariants } from '../support/batcher-fixtures.js';
import { REDIS_URL, startTestMesh, type TestMesh } from '../support/mesh-harness.js';
import { jsonInferBody } from '../support/reference.js';

/**
 * Triton's queue policy through the whole mesh (HTTP → gateway → batcher →
 * worker), against a deliberately slow worker: the test hook
 * GEMESH_TEST_LANE_DELAY_MS holds every batch HOLD_MS before it runs, like
 * the `execute_delay_ms` model of Triton's own queue tests. Each scenario
 * first sends a "blocker" and waits until it occupies the model's only
 * lane; requests sent then have to wait in the queue. Models with a queue
 * policy stage no batches (as Triton), so nothing leaves the queue while
 * the lane is busy. The four scenarios use four models and run at once.
 */
const HOLD_MS = 1_000;

const MODELS = {
  q8: 'max_batch_size: 8\ndynamic_batching { preferred_batch_size: [ 1, 2, 4, 8 ] default_queue_policy { max_queue_size: 8 } }',
  tmo: `max_batch_size: 8
dynamic_batching {
  preferred_batch_size: [ 1, 2, 4, 8 ]
  default_queue_policy { timeout_action: REJECT default_timeout_microseconds: 300000 allow_timeout_override: true }
}`,
  dly: `max_batch_size: 1
dynamic_batching {
  default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 3000000 allow_timeout_override: true }
}`,
  prio: 'max_batch_size: 2\ndynamic_batching { preferred_batch_size: [ 2 ] priority_levels: 2 default_priority_level: 2 }',
};

interface Answer {
  name: string;
  status: number;
  body: Record<string, unknown>;
  /** ms from sending to the answer. */
  ms: number;
}

describe('queue policy end to end (slow worker)', { timeout: 180_000, concurrency: true }, () => {
  let mesh: TestMesh;
  let repo: Awaited<ReturnType<typeof tinyVariants>>;
  let store: BatchStore;
  const finished: string[] = [];

  before(async () => {
    repo = await tinyVariants(MODELS);
    mesh = await startTestMesh({
      modelRepository: repo.dir,
      models: Object.keys(MODELS),
      env: { GEMESH_TEST_LANE_DELAY_MS: String(HOLD_MS) },
    });
    store = BatchStore.connect(REDIS_URL, mesh.namespace);
    // Warm every path once (the first requests through fresh processes are slow), then forget them.
    await Promise.all(Object.keys(MODELS).map((m) => infer(m, 'warmup')));
    finished.length = 0;
  });
  after(async () => {
    await store?.close();
    await mesh?.teardown();
    await repo?.remove();
  });

  let seed = 1;
  async function infer(model: string, name: string, parameters?: Record<string, number>): Promise<Answer> {
    const body = jsonInferBody(sampleInputs(demoModel('tiny'), 1, seed++), parameters ? { parameters } : {});
    const t0 = performance.now();
    const res = await fetch(`${mesh.url}/v2/models/${model}/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    const answer = {
      name,
      status: res.status,
      body: (await res.json()) as Record<string, unknown>,
      ms: performance.now() - t0,
    };
    finished.push(`${model}:${name}`);
    return answer;
  }

  /** Send a request that occupies the model's lane, and wait until it does (boxed: an async function flattens a promise). */
  async function block(model: string): Promise<{ blocker: Promise<Answer> }> {
    const blocker = infer(model, 'blocker');
    const until = Date.now() + 30_000;
    while ((await store.inFlight(model)) < 1) {
      if (Date.now() > until) throw new Error(`the blocker of ${model} never reached a lane`);
      await new Promise((r) => setTimeout(r, 10));
    }
    return { blocker };
  }

  const order = (model: string) =>
    finished.filter((f) => f.startsWith(`${model}:`)).map((f) => f.slice(model.length + 1));

  it('max_queue_size 8, 10 simultaneous requests while the lane is busy: exactly 2 refused at once with 503', async () => {
    const { blocker } = await block('q8');
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => infer('q8', `r${i}`)));
    const refused = answers.filter((a) => a.status === 503);
    assert.equal(refused.length, 2, JSON.stringify(answers.map((a) => a.status)));
    assert.equal(answers.filter((a) => a.status === 200).length, 8);
    for (const a of refused) assert.deepEqual(a.body, { error: 'Exceeds maximum queue size' });
    assert.equal((await blocker).status, 200);
    // The two refusals came back before the blocker's own answer: refused at once, not queued.
    const done = order('q8');
    const firstTwo = done.slice(0, 2).sort();
    assert.deepEqual(firstTwo, refused.map((a) => a.name).sort());
    assert.equal(await store.queues.size(store.queueKey('q8', 0)), 0, 'every admitted request left the queue');
  });

  it('default_timeout 300 ms (REJECT), override only shortens; a dispatched request is never timed out', async () => {
    const { blocker } = await block('tmo');
    const [plain, shorter, longer] = await Promise.all([
      infer('tmo', 'plain'),
      infer('tmo', 'shorter', { timeout: 100_000 }),
      infer('tmo', 'longer', { timeout: 5_000_000 }),
    ]);
    for (const a of [plain, shorter, longer]) {
      assert.equal(a.status, 503, `${a.name}: ${JSON.stringify(a.body)}`);
      assert.deepEqual(a.body, { error: 'Request timeout expired' });
    }
    // 100 ms expires before 300 ms; a 5 s override cannot lengthen the 300 ms default (else it would run and get 200).
    assert.equal(order('tmo')[0], 'shorter');
    assert.ok(shorter.ms < plain.ms, `shorter ${shorter.ms} ms, plain ${plain.ms} ms`);
    const b = await blocker;
    assert.deepEqual(order('tmo'), ['shorter', ...order('tmo').slice(1, 3), 'blocker']);
    assert.equal(b.status, 200, 'queue timeouts apply only while a request waits in the queue');
    assert.ok(b.ms >= HOLD_MS, `the blocker took ${b.ms} ms, longer than its 300 ms queue timeout`);
  });

  it('timeout_action DELAY: an expired request is not rejected; it goes behind the unexpired ones', async () => {
    const { blocker } = await block('dly');
    // early's 100 ms timeout expires while the lane is busy; late's 3 s default does not.
    const early = infer('dly', 'early', { timeout: 100_000 });
    await new Promise((r) => setTimeout(r, 300));
    const late = infer('dly', 'late');
    const [e, l] = await Promise.all([early, late]);
    assert.equal(e.status, 200, JSON.stringify(e.body));
    assert.equal(l.status, 200, JSON.stringify(l.body));
    assert.equal((await blocker).status, 200);
    assert.deepEqual(order('dly'), ['blocker', 'late', 'early']);
  });

  it('priority levels: level 1 is batched before level 2, FIFO within a level; timeout ignored with no default', async () => {
    const { blocker } = await block('prio');
    // Published straight to the request queue, each confirmed before the next: the arrival order is exact.
    const producer = await RawProducer.open(mesh.namespace);
    try {
      const names = new Map<string, string>();
      for (const name of ['low1', 'low2', 'low3']) {
        // Priority 0 maps to default_priority_level 2; the timeout is ignored since the default is 0.
        names.set((await producer.send('prio', { priority: 0, timeoutUs: 1_000 })).id, name);
      }
      for (const name of ['high1', 'high2']) names.set((await producer.send('prio', { priority: 1 })).id, name);
      await producer.waitAll([...names.keys()], 60_000);
      for (const r of producer.replies) assert.equal(r.error, undefined, `${names.get(r.id)}: ${r.error?.message}`);
      assert.equal((await blocker).status, 200);
      // Batches of 2, replies in member order: [high1, high2], then [low1, low2], then [low3].
      assert.deepEqual(
        producer.replies.map((r) => names.get(r.id)),
        ['high1', 'high2', 'low1', 'low2', 'low3'],
      );
    } finally {
      await producer.close();
    }
  });
});
