import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decide, nearestTier, type PendingView } from '../../services/batcher/src/batch-policy.js';

const T0 = 1_000_000;
const reqs = (sizes: number[], shapeKey = 'x:FP32:16', at = T0): PendingView[] =>
  sizes.map((rows) => ({ rows, shapeKey, enqueuedAt: at }));

describe('batch policy', () => {
  it('nearestTier pads up to the smallest tier that fits', () => {
    assert.equal(nearestTier([1, 4, 8, 16], 1), 1);
    assert.equal(nearestTier([1, 4, 8, 16], 2), 4);
    assert.equal(nearestTier([1, 4, 8, 16], 9), 16);
    assert.equal(nearestTier([4, 8], 8), 8);
  });

  it('waits with nothing pending', () => {
    assert.deepEqual(decide({ pending: [], tiers: [1, 2], maxQueueDelayUs: 0, now: T0, laneFree: true }), {
      kind: 'wait',
      until: null,
    });
  });

  it('Triton: preferred [4,8], delay 0, six batch-1 requests → sends 4, keeps 2', () => {
    const d = decide({
      pending: reqs([1, 1, 1, 1, 1, 1]),
      tiers: [4, 8, 16],
      maxQueueDelayUs: 0,
      now: T0,
      laneFree: true,
    });
    assert.deepEqual(d, { kind: 'send', take: 4, rows: 4, tier: 4 });
  });

  it('Triton: sizes 1,1,1,1,3,3 with preferred [4,8] → sends the first 4', () => {
    const d = decide({
      pending: reqs([1, 1, 1, 1, 3, 3]),
      tiers: [4, 8, 16],
      maxQueueDelayUs: 0,
      now: T0,
      laneFree: true,
    });
    assert.deepEqual(d, { kind: 'send', take: 4, rows: 4, tier: 4 });
  });

  it('delay 0 and no tier hit: sends everything pending, padded to the nearest tier', () => {
    const d = decide({ pending: reqs([3, 3, 3]), tiers: [4, 8, 16], maxQueueDelayUs: 0, now: T0, laneFree: true });
    assert.deepEqual(d, { kind: 'send', take: 3, rows: 9, tier: 16 });
  });

  it('delay > 0 and no tier hit: waits until the oldest request is max_queue_delay old', () => {
    const pending = reqs([3, 3]);
    const d = decide({ pending, tiers: [4, 8, 16], maxQueueDelayUs: 5_000, now: T0 + 1, laneFree: true });
    assert.deepEqual(d, { kind: 'wait', until: T0 + 5 });
    const later = decide({ pending, tiers: [4, 8, 16], maxQueueDelayUs: 5_000, now: T0 + 5, laneFree: true });
    assert.deepEqual(later, { kind: 'send', take: 2, rows: 6, tier: 8 });
  });

  it('never splits a request and stops at the largest tier', () => {
    const d = decide({
      pending: reqs([6, 6, 6]),
      tiers: [1, 2, 4, 8, 16],
      maxQueueDelayUs: 1_000_000,
      now: T0,
      laneFree: true,
    });
    // 6+6 = 12 fits 16; the third would overflow, which closes the batch.
    assert.deepEqual(d, { kind: 'send', take: 2, rows: 12, tier: 16 });
  });

  it('the first shape mismatch closes the batch', () => {
    const pending = [...reqs([1, 2]), ...reqs([1], 'x:FP32:32'), ...reqs([1])];
    const d = decide({ pending, tiers: [8], maxQueueDelayUs: 1_000_000, now: T0, laneFree: true });
    assert.deepEqual(d, { kind: 'send', take: 2, rows: 3, tier: 8 });
  });

  it('while no lane is free, a batch that can still grow waits instead of being padded', () => {
    const d = decide({ pending: reqs([1, 1, 1]), tiers: [1, 2, 4, 8], maxQueueDelayUs: 0, now: T0, laneFree: false });
    assert.deepEqual(d, { kind: 'wait', until: null });
  });

  it('a full largest tier goes even while lanes are busy', () => {
    const d = decide({ pending: reqs([4, 4, 1]), tiers: [1, 2, 4, 8], maxQueueDelayUs: 0, now: T0, laneFree: false });
    assert.deepEqual(d, { kind: 'send', take: 2, rows: 8, tier: 8 });
  });
});
