import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Broker, topology } from '@ge-mesh/broker';
import { createLogger } from '@ge-mesh/telemetry';
import type { Channel, ConsumeMessage } from 'amqplib';
import { RABBITMQ_URL, uniqueNamespace } from '../support/mesh-harness.js';

const tick = () => new Promise((r) => setImmediate(r));

/**
 * Coalesced acks (consume's `coalesceAcks`) on the real broker: what the
 * broker still holds afterwards is exactly what was not acked, and the oldest
 * run of acks in a tick leaves as one multiple ack.
 */
describe('coalesced acks', () => {
  const ns = uniqueNamespace('acks');
  const log = createLogger('test', 'silent');
  let broker: Broker;
  let queue: string;

  before(async () => {
    broker = await Broker.connect(RABBITMQ_URL, topology(ns), log, 'channel-acks-test');
  });

  after(async () => {
    const ch = await broker.channel();
    await ch.deleteQueue(queue).catch(() => undefined);
    await broker.close();
  });

  /** Ten messages 0..9 on a fresh queue, consumed with coalesced acks; every ack call amqplib gets is recorded. */
  async function consumeTen() {
    queue = `${ns}.q`;
    const setup = await broker.channel();
    await setup.deleteQueue(queue).catch(() => undefined);
    await setup.assertQueue(queue, { durable: false, arguments: { 'x-queue-type': 'classic' } });
    for (let i = 0; i < 10; i++) setup.sendToQueue(queue, Buffer.from(String(i)));
    await setup.close();
    const ch = await broker.channel(20);
    const calls: Array<{ tag: number; upTo: boolean }> = [];
    const ack = ch.ack.bind(ch);
    ch.ack = (m, upTo) => {
      calls.push({ tag: m.fields.deliveryTag, upTo: upTo === true });
      ack(m, upTo);
    };
    const got: ConsumeMessage[] = [];
    await broker.consume(ch, queue, (m) => got.push(m), { coalesceAcks: true });
    for (let i = 0; i < 200 && got.length < 10; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(got.length, 10);
    return { ch, got, calls };
  }

  /** The bodies the broker delivers again once `ch` closes, sorted. */
  async function requeued(ch: Channel): Promise<number[]> {
    await ch.close().catch(() => undefined); // closed already in one test
    const again = await broker.channel(20);
    const bodies: number[] = [];
    await again.consume(queue, (m) => m && bodies.push(Number(m.content.toString())), { noAck: true });
    for (let i = 0; i < 20; i++) await new Promise((r) => setTimeout(r, 10));
    await again.close();
    return bodies.sort((a, b) => a - b);
  }

  it('acks the oldest run in one frame and the rest one by one; the broker keeps exactly the others', async () => {
    const { ch, got, calls } = await consumeTen();
    const at = (i: number) => got[i] as ConsumeMessage;
    // Out of order within the tick: the run 0..3 is still the oldest.
    for (const i of [2, 0, 3, 1, 5, 7]) assert.equal(broker.settle(at(i), 'ack'), true);
    assert.deepEqual(calls, [], 'nothing is sent before the tick ends');
    await tick();
    assert.deepEqual(calls, [
      { tag: at(3).fields.deliveryTag, upTo: true },
      { tag: at(5).fields.deliveryTag, upTo: false },
      { tag: at(7).fields.deliveryTag, upTo: false },
    ]);
    // Settled twice: ignored, where a second ack would make the broker close the channel.
    broker.settle(at(5), 'ack');
    broker.settle(at(4), 'requeue');
    broker.settle(at(6), 'ack');
    await tick();
    // 4 is settled (requeued), 5 was acked: the run from the oldest open delivery reaches 6.
    assert.deepEqual(calls.slice(3), [{ tag: at(6).fields.deliveryTag, upTo: true }]);
    assert.deepEqual(await requeued(ch), [4, 8, 9]);
  });

  it('sends the acks of the tick before a channel closed through the broker', async () => {
    const { ch, got } = await consumeTen();
    for (const m of got.slice(0, 4)) broker.settle(m, 'ack');
    // In the same tick: closing would void the acks still waiting for its end.
    await broker.closeChannel(ch);
    assert.deepEqual(await requeued(ch), [4, 5, 6, 7, 8, 9]);
  });

  it('drops the acks of a channel that closed before the tick ended', async () => {
    const { ch, got } = await consumeTen();
    for (const m of got.slice(0, 4)) broker.settle(m, 'ack');
    await ch.close();
    await tick();
    // Nothing was acked: every message is back in the queue.
    assert.deepEqual(await requeued(ch), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });
});
