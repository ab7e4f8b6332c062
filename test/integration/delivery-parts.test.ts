import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Broker, topology } from '@ge-mesh/broker';
import { createLogger } from '@ge-mesh/telemetry';
import type { ConsumeMessage } from 'amqplib';
import { RABBITMQ_URL, uniqueNamespace } from '../support/mesh-harness.js';

/**
 * Deliveries split into parts (Broker.split, as the batcher takes a bundle of
 * requests) on the real broker, acks coalesced as the batcher's are: the
 * broker forgets a delivery once every part was acked, and gets it back
 * whole, marked redelivered, when a part was requeued or left unsettled.
 */
describe('split deliveries', () => {
  const ns = uniqueNamespace('parts');
  const log = createLogger('test', 'silent');
  const queue = `${ns}.q`;
  let broker: Broker;

  before(async () => {
    broker = await Broker.connect(RABBITMQ_URL, topology(ns), log, 'delivery-parts-test');
  });

  after(async () => {
    const ch = await broker.channel();
    await ch.deleteQueue(queue).catch(() => undefined);
    await broker.close();
  });

  it('acks a delivery when all its parts are acked, and requeues it whole otherwise, a rejected part beside a requeued one included', async () => {
    const setup = await broker.channel();
    await setup.assertQueue(queue, { durable: false, arguments: { 'x-queue-type': 'classic' } });
    for (const body of ['w', 'x', 'y', 'z']) setup.sendToQueue(queue, Buffer.from(body));
    await setup.close();
    const ch = await broker.channel(10);
    const got: ConsumeMessage[] = [];
    await broker.consume(ch, queue, (m) => got.push(m), { coalesceAcks: true });
    for (let i = 0; i < 200 && got.length < 4; i++) await new Promise((r) => setTimeout(r, 10));
    const [w, x, y, z] = got.map((m) => broker.split(m, [Buffer.from('1'), Buffer.from('2'), Buffer.from('3')]));
    assert.ok(w && x && y && z);
    // w: one part rejected, one requeued (the queue has no dead-letter exchange: a rejected whole would be
    // gone). x: every part acked, one twice. y: one part requeued. z: one part never settled.
    broker.settle(w[0] as ConsumeMessage, 'reject');
    broker.settle(w[1] as ConsumeMessage, 'requeue');
    broker.settle(w[2] as ConsumeMessage, 'ack');
    for (const i of [2, 0, 1, 1]) assert.equal(broker.settle(x[i] as ConsumeMessage, 'ack'), true);
    broker.settle(y[0] as ConsumeMessage, 'ack');
    broker.settle(y[1] as ConsumeMessage, 'requeue');
    broker.settle(y[2] as ConsumeMessage, 'ack');
    broker.settle(z[0] as ConsumeMessage, 'ack');
    broker.settle(z[1] as ConsumeMessage, 'ack');
    await new Promise((r) => setTimeout(r, 100));
    await broker.closeChannel(ch);

    const again = await broker.channel(10);
    const back: ConsumeMessage[] = [];
    await again.consume(queue, (m) => m && back.push(m), { noAck: true });
    for (let i = 0; i < 50 && back.length < 3; i++) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 100));
    await again.close();
    assert.deepEqual(back.map((m) => m.content.toString()).sort(), ['w', 'y', 'z']);
    for (const m of back) assert.equal(m.fields.redelivered, true);
  });
});
