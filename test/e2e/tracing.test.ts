import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { decodeMessage, encodeMessage, ingressNames } from '@ge-mesh/client';
import { demoModel, sampleInputs } from '@ge-mesh/demo-models';
import amqp from 'amqplib';
import { tinyVariants } from '../support/batcher-fixtures.js';
import { RABBITMQ_URL, startTestMesh, type TestMesh } from '../support/mesh-harness.js';
import { OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.js';
import { jsonInferBody } from '../support/reference.js';

/**
 * OpenTelemetry across every hop: the mesh exports to a local OTLP/HTTP
 * receiver (OTEL_EXPORTER_OTLP_ENDPOINT), and one request of 3 rows to a
 * model with tiers [4, 8] must be one trace whose spans come from the
 * gateway, the batcher and the worker, each parented by the previous hop
 * through the traceparent the AMQP messages carry.
 */
const MODEL = 't48';

/** The trace as an indented tree (the test's diagnostic output). */
export function spanTree(spans: readonly ReceivedSpan[]): string {
  const ids = new Set(spans.map((s) => s.spanId));
  const lines: string[] = [];
  let t0 = spans[0]?.startNs ?? 0n;
  for (const s of spans) if (s.startNs < t0) t0 = s.startNs;
  const walk = (s: ReceivedSpan, depth: number) => {
    const ms = (ns: bigint) => (Number(ns) / 1e6).toFixed(2);
    const attrs = Object.entries(s.attributes)
      .filter(([k]) => /tier|padding|rows|requests|device/.test(k))
      .map(([k, v]) => `${k.replace('gemesh.', '')}=${v}`)
      .join(' ');
    lines.push(
      `${'  '.repeat(depth)}${s.name} [${s.service}] +${ms(s.startNs - t0)} ms, ${ms(s.endNs - s.startNs)} ms${attrs ? ` (${attrs})` : ''}${s.links.length ? ` links=${s.links.length}` : ''}`,
    );
    for (const c of spans.filter((x) => x.parentSpanId === s.spanId).sort((a, b) => Number(a.startNs - b.startNs)))
      walk(c, depth + 1);
  };
  for (const root of spans.filter((s) => !ids.has(s.parentSpanId))) walk(root, 0);
  return lines.join('\n');
}

describe('traces across gateway, batcher and worker', { timeout: 180_000 }, () => {
  let mesh: TestMesh;
  let receiver: OtlpReceiver;
  let repo: Awaited<ReturnType<typeof tinyVariants>>;

  before(async () => {
    receiver = await OtlpReceiver.start();
    repo = await tinyVariants({ [MODEL]: 'max_batch_size: 8\ndynamic_batching { preferred_batch_size: [ 4, 8 ] }' });
    mesh = await startTestMesh({
      modelRepository: repo.dir,
      models: [MODEL],
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '100' },
    });
  });
  after(async () => {
    await mesh?.teardown();
    await receiver?.close();
    await repo?.remove();
  });

  const infer = (headers: Record<string, string> = {}) =>
    fetch(`${mesh.url}/v2/models/${MODEL}/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: jsonInferBody(sampleInputs(demoModel('tiny'), 3, 7)),
    });

  async function traceOf(traceId: string): Promise<ReceivedSpan[]> {
    await receiver.waitFor((s) => s.filter((x) => x.traceId === traceId && x.name === 'infer t48').length > 0);
    await new Promise((r) => setTimeout(r, 300)); // the other services' last exports
    return receiver.trace(traceId);
  }

  it("one request is one trace: the caller's traceparent honoured, every hop parented, tier and padding recorded", async (t) => {
    const traceId = randomBytes(16).toString('hex');
    const callerSpan = randomBytes(8).toString('hex');
    const res = await infer({ traceparent: `00-${traceId}-${callerSpan}-01` });
    assert.equal(res.status, 200, await res.text());
    const traceresponse = res.headers.get('traceresponse') ?? '';
    assert.match(traceresponse, new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`), 'the response names the trace');

    const spans = await traceOf(traceId);
    t.diagnostic(`\n${spanTree(spans)}`);
    const one = (name: string) => {
      const found = spans.filter((s) => s.name === name);
      assert.equal(found.length, 1, `one '${name}' span in ${spans.map((s) => s.name).join(', ')}`);
      return found[0] as ReceivedSpan;
    };
    assert.deepEqual([...new Set(spans.map((s) => s.service))].sort(), [
      'gemesh-batcher',
      'gemesh-gateway',
      'gemesh-worker',
    ]);
    const root = one('infer t48');
    assert.equal(root.parentSpanId, callerSpan, 'the gateway span is a child of the caller');
    assert.equal(root.spanId, traceresponse.split('-')[2]);
    assert.equal(root.service, 'gemesh-gateway');
    for (const name of ['gateway validate', 'gateway publish', 'gateway wait reply'])
      assert.equal(one(name).parentSpanId, root.spanId, name);
    const publish = one('gateway publish');
    const queueWait = one('batcher queue wait');
    assert.equal(queueWait.service, 'gemesh-batcher');
    assert.equal(queueWait.parentSpanId, publish.spanId);
    const batch = one('batcher batch');
    assert.equal(batch.parentSpanId, publish.spanId);
    assert.deepEqual(batch.links, [{ traceId, spanId: publish.spanId }], 'the batch links its member request');
    assert.equal(batch.attributes['gemesh.batch.tier'], 4);
    assert.equal(batch.attributes['gemesh.batch.rows'], 3);
    assert.equal(batch.attributes['gemesh.batch.padding'], 1);
    const work = one('worker batch');
    assert.equal(work.service, 'gemesh-worker');
    assert.equal(work.parentSpanId, batch.spanId);
    assert.equal(work.attributes['gemesh.lane.tier'], 4);
    for (const name of ['lane wait', 'assemble', 'device run', 'slice', 'encode', 'reply publish'])
      assert.equal(one(name).parentSpanId, work.spanId, name);
    assert.equal(one('device run').attributes['gemesh.batch.tier'], 4);
    // Stages in order, inside the request's span.
    const assemble = one('assemble');
    const run = one('device run');
    const slice = one('slice');
    assert.ok(assemble.endNs <= run.startNs + 1000n && run.endNs <= slice.startNs + 1000n);
    assert.ok(root.startNs <= work.startNs && work.endNs <= root.endNs + 5_000_000n);
    assert.ok(spans.every((s) => s.statusCode !== 2));
  });

  it('AMQP ingress: the traceparent header is honoured, the reply names the trace', async () => {
    const traceId = randomBytes(16).toString('hex');
    const caller = randomBytes(8).toString('hex');
    const conn = await amqp.connect(RABBITMQ_URL);
    try {
      const ch = await conn.createChannel();
      const { queue } = await ch.assertQueue('', { exclusive: true });
      const reply = new Promise<amqp.ConsumeMessage>((resolve) => {
        void ch.consume(queue, (m) => m && resolve(m), { noAck: true });
      });
      const x = new Float32Array(48).fill(0.25);
      ch.sendToQueue(
        ingressNames(mesh.namespace).queue,
        encodeMessage({
          model: MODEL,
          inputs: [{ name: 'x', datatype: 'FP32', shape: [3, 16], data: new Uint8Array(x.buffer) }],
        } as never),
        { replyTo: queue, correlationId: 'c1', headers: { traceparent: `00-${traceId}-${caller}-01` } },
      );
      const m = await reply;
      assert.match(String(m.properties.headers?.traceresponse ?? ''), new RegExp(`^00-${traceId}-`));
      assert.ok(!(decodeMessage(m.content) as { error?: string }).error);
    } finally {
      await conn.close();
    }
    const spans = await traceOf(traceId);
    const root = spans.find((s) => s.name === `infer ${MODEL}`);
    assert.equal(root?.parentSpanId, caller);
    assert.equal(root?.attributes['gemesh.ingress'], 'amqp');
    assert.ok(spans.some((s) => s.name === 'worker batch'));
  });

  it('without a traceparent the gateway starts the trace, and errors are recorded', async () => {
    const ok = await infer();
    assert.equal(ok.status, 200);
    const traceId = (ok.headers.get('traceresponse') ?? '').split('-')[1] ?? '';
    const spans = await traceOf(traceId);
    assert.equal(spans.find((s) => s.name === 'infer t48')?.parentSpanId, '');
    assert.ok(spans.some((s) => s.name === 'worker batch'));

    const bad = await fetch(`${mesh.url}/v2/models/${MODEL}/infer`, {
      method: 'POST',
      body: JSON.stringify({ inputs: [{ name: 'x', shape: [1, 3], datatype: 'FP32', data: [1, 2, 3] }] }),
    });
    assert.equal(bad.status, 400);
    const badTrace = (bad.headers.get('traceresponse') ?? '').split('-')[1] ?? '';
    assert.match(badTrace, /^[0-9a-f]{32}$/, 'an error answer names its trace too');
    await receiver.waitFor((s) => s.some((x) => x.traceId === badTrace && x.name === 'infer t48'));
    const failed = receiver.trace(badTrace);
    assert.equal(failed.find((s) => s.name === 'infer t48')?.statusCode, 2);
    assert.equal(failed.find((s) => s.name === 'gateway validate')?.statusCode, 2);
  });
});
