import assert from 'node:assert/strict';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { MessageChannel } from 'node:worker_threads';
import { type LaneRequest, runRequest } from '../../services/worker/src/lane-messages.js';

/** A run request moves copies of the batch and the stored requests to the lane; the sender's bytes stay. */
describe('lane run requests', () => {
  it('moves copies: the lane gets equal bytes, the sender keeps its own, a pooled buffer is never taken', async () => {
    // A small Buffer is a slice of Buffer's shared pool; a large one a slice of a bigger message.
    const small = Buffer.from([1, 2, 3, 4, 5]);
    const frame = Buffer.alloc(1 << 20, 7);
    const batch = frame.subarray(100, 100 + 300_000);
    const stored = new Map<string, Uint8Array | null>([
      ['a', small],
      ['b', null],
    ]);
    const [msg, transfer] = runRequest(9, batch, stored);
    assert.equal(transfer.length, 2);
    const { port1, port2 } = new MessageChannel();
    const got = once(port2, 'message');
    port1.postMessage(msg, transfer);
    const [received] = (await got) as [LaneRequest & { type: 'run' }];
    port1.close();
    assert.equal(received.seq, 9);
    assert.deepEqual(Buffer.from(received.batch), batch);
    assert.deepEqual(
      [...(received.stored ?? [])].map(([id, b]) => [id, b && [...b]]),
      [
        ['a', [1, 2, 3, 4, 5]],
        ['b', null],
      ],
    );
    // The moved copies are gone from the sender; its own bytes and the pool are intact.
    assert.ok(transfer.every((b) => b.byteLength === 0));
    assert.equal(batch.byteLength, 300_000);
    assert.equal(batch[0], 7);
    assert.deepEqual([...small], [1, 2, 3, 4, 5]);
    assert.equal(Buffer.from([9, 9]).readUInt8(0), 9);
  });
});
