import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DeliveryParts, partsOf, type Settlement } from '@ge-mesh/broker';
import type { ConsumeMessage } from 'amqplib';

const whole = {
  content: Buffer.from('bundle'),
  fields: { deliveryTag: 7, redelivered: true, exchange: '', routingKey: 'q', consumerTag: 'c' },
  properties: { headers: { a: 1 } },
} as unknown as ConsumeMessage;

/** Three parts of `whole`, and every settlement of the whole that they caused. */
function three(): { parts: ConsumeMessage[]; settle: (i: number, how: Settlement) => boolean; wholes: Settlement[] } {
  const parts = partsOf(whole, [Buffer.from('a'), new Uint8Array([98]), Buffer.from('c')]);
  const wholes: Settlement[] = [];
  const d = new DeliveryParts(parts, (how) => {
    wholes.push(how);
    return true;
  });
  return { parts, settle: (i, how) => d.settle(parts[i] as ConsumeMessage, how), wholes };
}

describe('a delivery split into parts', () => {
  it('gives each part its own bytes and the whole delivery’s fields and properties', () => {
    const { parts } = three();
    assert.deepEqual(
      parts.map((p) => p.content.toString()),
      ['a', 'b', 'c'],
    );
    for (const p of parts) {
      assert.ok(Buffer.isBuffer(p.content));
      assert.equal(p.fields.redelivered, true);
      assert.equal(p.properties, whole.properties);
    }
  });

  it('acks the whole once, after the last part, when every part was acked; a part settled twice counts once', () => {
    const { settle, wholes } = three();
    settle(2, 'ack');
    settle(2, 'ack');
    settle(0, 'ack');
    assert.deepEqual(wholes, []);
    settle(1, 'ack');
    assert.deepEqual(wholes, ['ack']);
    settle(1, 'requeue');
    assert.deepEqual(wholes, ['ack']);
  });

  const outcomes: Array<{ what: string; hows: Settlement[]; whole: Settlement }> = [
    {
      what: 'requeues the whole when a part was requeued and none rejected',
      hows: ['ack', 'requeue', 'ack'],
      whole: 'requeue',
    },
    {
      what: 'dead-letters the whole when a part was rejected and none requeued',
      hows: ['ack', 'reject', 'ack'],
      whole: 'reject',
    },
    {
      // The requeued part is a good request that met a passing fault: dead-lettering would answer it as poison.
      what: 'requeues the whole when a rejected part comes before a requeued one',
      hows: ['reject', 'ack', 'requeue'],
      whole: 'requeue',
    },
    {
      what: 'requeues the whole when a requeued part comes before a rejected one',
      hows: ['requeue', 'reject', 'ack'],
      whole: 'requeue',
    },
  ];
  for (const { what, hows, whole: expected } of outcomes) {
    it(what, () => {
      const { settle, wholes } = three();
      for (const [i, how] of hows.entries()) settle(i, how);
      assert.deepEqual(wholes, [expected]);
    });
  }
});
