import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Broker, topology } from '@ge-mesh/broker';
import { bundleCorrelationId, decode, encode, isRequestBundle, PROTOCOL_VERSION } from '@ge-mesh/protocol';
import { createLogger } from '@ge-mesh/telemetry';
import type { ConsumeMessage } from 'amqplib';
import { RequestBundles } from '../../services/gateway/src/pipeline/request-bundles.js';
import { RABBITMQ_URL, uniqueNamespace } from '../support/mesh-harness.js';

/**
 * The gateway's request bundles on the real broker: what one turn of the
 * event loop publishes to a queue arrives as one message (a lone request as
 * itself), at most `max` requests to a bundle.
 */
describe('request bundles', () => {
  const ns = uniqueNamespace('bundles');
  const log = createLogger('test', 'silent');
  const queues = [`${ns}.a`, `${ns}.b`, `${ns}.c`];
  let broker: Broker;
  let bundles: RequestBundles;

  before(async () => {
    broker = await Broker.connect(RABBITMQ_URL, topology(ns), log, 'request-bundles-test');
    const ch = await broker.channel();
    for (const q of queues) await ch.assertQueue(q, { durable: false, arguments: { 'x-queue-type': 'classic' } });
    await ch.close();
    bundles = new RequestBundles(broker, `${ns}.replies`);
  });

  after(async () => {
    const ch = await broker.channel();
    for (const q of queues) await ch.deleteQueue(q).catch(() => undefined);
    await broker.close();
  });

  /** Every message on `queue`, once `n` arrived (and a little longer, to see that no more come). */
  async function drain(queue: string, n: number): Promise<ConsumeMessage[]> {
    const ch = await broker.channel();
    const got: ConsumeMessage[] = [];
    await ch.consume(queue, (m) => m && got.push(m), { noAck: true });
    for (let i = 0; i < 200 && got.length < n; i++) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 100));
    await ch.close();
    return got;
  }

  /** Members are encoded as the gateway encodes requests: what reads as a bundle is one by its shape alone. */
  const body = (s: string) => encode(s);
  const text = (b: Uint8Array) => decode<string>(b);

  it('sends the requests of one turn to a queue as one bundle, and a lone one as itself', async () => {
    const [a, b] = queues as [string, string];
    const sent = await Promise.all([
      bundles.add(a, 'tiny', 'id-1', body('one'), 8),
      bundles.add(b, 'tiny', 'id-9', body('alone'), 8),
      bundles.add(a, 'tiny', 'id-2', body('two'), 8),
      bundles.add(a, 'tiny', 'id-3', body('three'), 8),
    ]);
    assert.deepEqual(sent, ['queued', 'queued', 'queued', 'queued']);
    const [onA, onB] = [await drain(a, 1), await drain(b, 1)];
    assert.equal(onA.length, 1);
    const bundle = decode<unknown>((onA[0] as ConsumeMessage).content);
    assert.ok(isRequestBundle(bundle));
    const correlationId = bundleCorrelationId(['id-1', 'id-2', 'id-3']);
    assert.deepEqual(
      { ...bundle, requests: bundle.requests.map(text) },
      {
        v: PROTOCOL_VERSION,
        id: correlationId,
        correlationId,
        model: 'tiny',
        version: '',
        replyTo: `${ns}.replies`,
        requests: ['one', 'two', 'three'],
      },
    );
    assert.deepEqual(
      onB.map((m) => [text(m.content), m.properties.messageId]),
      [['alone', 'id-9']],
    );
  });

  it('holds at most max requests to a bundle', async () => {
    const c = queues[2] as string;
    await Promise.all(['r1', 'r2', 'r3'].map((id) => bundles.add(c, 'tiny', id, body(id), 2)));
    const got = await drain(c, 2);
    const read = got.map((m) => {
      const d = decode<unknown>(m.content);
      return isRequestBundle(d) ? d.requests.map(text) : d;
    });
    assert.deepEqual(read, [['r1', 'r2'], 'r3']);
  });
});
