import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type BatchShape,
  type Decision,
  decide,
  nearestTier,
  type PendingView,
  type PolicyName,
  planSplit,
  type Slots,
  tierCostModel,
  tritonDecide,
} from '../../services/batcher/src/batch-policy.js';

const T0 = 1_000_000;
const reqs = (sizes: number[], shapeKey = 'x:FP32:16', at = T0): PendingView[] =>
  sizes.map((rows) => ({ rows, shapeKey, enqueuedAt: at }));
const IDLE: Slots = { laneIdle: true, stageFree: true };
const STAGE_ONLY: Slots = { laneIdle: false, stageFree: true };
const FULL: Slots = { laneIdle: false, stageFree: false };

// Triton's worked setup: preferred_batch_size [4, 8], max_batch_size 16 → tiers 4, 8, 16.
const tri = (delayUs = 0, preferred = [4, 8]): BatchShape => ({
  tiers: [4, 8, 16],
  preferred,
  maxBatch: 16,
  maxQueueDelayUs: delayUs,
});

/** Apply decisions with a free lane until nothing is sent: the batches formed, as "rows@tier". */
function drain(sizes: number[], shape: BatchShape, now: number, policy: PolicyName): string[] {
  let pending = reqs(sizes);
  const out: string[] = [];
  for (;;) {
    const d = decide({ pending, shape, now, slots: IDLE, policy });
    if (d.kind !== 'send') return out;
    out.push(`${d.rows}@${d.tier}`);
    pending = pending.slice(d.take);
  }
}

const send = (take: number, rows: number, tier: number): Decision => ({ kind: 'send', take, rows, tier });

describe('batch policy: Triton rules (tritonDecide)', () => {
  it('nearestTier pads up to the smallest tier that fits', () => {
    assert.equal(nearestTier([1, 4, 8, 16], 1), 1);
    assert.equal(nearestTier([1, 4, 8, 16], 2), 4);
    assert.equal(nearestTier([1, 4, 8, 16], 9), 16);
    assert.equal(nearestTier([4, 8], 8), 8);
  });

  it('waits with nothing pending', () => {
    assert.deepEqual(tritonDecide([], tri(), T0), { kind: 'wait', until: null });
  });

  it('preferred [4,8], delay 0, six batch-1 requests → sends 4, keeps 2', () => {
    assert.deepEqual(tritonDecide(reqs([1, 1, 1, 1, 1, 1]), tri(), T0), send(4, 4, 4));
  });

  it('sizes 3,3,3 with preferred [4,8] → no preferred size is hit and 9 > 8, so it sends 6', () => {
    assert.deepEqual(tritonDecide(reqs([3, 3, 3]), tri(), T0), send(2, 6, 8));
  });

  it('sizes 1,1,1,1,3,3 with preferred [4,8] → 4 is hit, then 10 > 8, so it sends 4 although 7 would fit', () => {
    assert.deepEqual(tritonDecide(reqs([1, 1, 1, 1, 3, 3]), tri(), T0), send(4, 4, 4));
    assert.deepEqual(tritonDecide(reqs([1, 1, 1, 1, 3, 3]), tri(5_000), T0 + 1), send(4, 4, 4));
  });

  it('dynamic_batching {} (preferred = [max], delay 0): whatever is queued goes at once, up to max', () => {
    const shape: BatchShape = { tiers: [16], preferred: [16], maxBatch: 16, maxQueueDelayUs: 0 };
    assert.deepEqual(tritonDecide(reqs([1, 2, 3]), shape, T0), send(3, 6, 16));
    assert.deepEqual(tritonDecide(reqs([8, 8, 8]), shape, T0), send(2, 16, 16));
  });

  it('delay > 0 and no preferred size hit: waits until the oldest request is max_queue_delay old', () => {
    const shape = tri(5_000, [16]);
    const pending = [...reqs([3], 'x:FP32:16', T0), ...reqs([3], 'x:FP32:16', T0 + 3)];
    assert.deepEqual(tritonDecide(pending, shape, T0 + 1), { kind: 'wait', until: T0 + 5 });
    assert.deepEqual(tritonDecide(pending, shape, T0 + 5), send(2, 6, 8));
  });

  it('delay exceeded with pending above the largest preferred size: sends all pending, up to max', () => {
    assert.deepEqual(tritonDecide(reqs([1, 1, 1, 1, 3, 3]), tri(5_000), T0 + 5), send(6, 10, 16));
    assert.deepEqual(tritonDecide(reqs([6, 6, 6]), tri(5_000), T0 + 5), send(2, 12, 16));
  });

  it('the first shape mismatch closes the batch; it is never split and never skipped', () => {
    const pending = [...reqs([1, 2]), ...reqs([1], 'x:FP32:32'), ...reqs([1])];
    const shape: BatchShape = { tiers: [8], preferred: [8], maxBatch: 8, maxQueueDelayUs: 1_000_000 };
    assert.deepEqual(tritonDecide(pending, shape, T0), send(2, 3, 8));
  });

  it('without dynamic_batching every request goes on its own', () => {
    const shape: BatchShape = {
      tiers: [1, 2, 4],
      preferred: [4],
      maxBatch: 4,
      maxQueueDelayUs: 0,
      singleRequest: true,
    };
    assert.deepEqual(tritonDecide(reqs([3, 1]), shape, T0), send(1, 3, 4));
  });
});

describe('batch policy: tier-aware choice (decide)', () => {
  it('Triton worked case 1,1,1,1,3,3 with the delay not exceeded: the same batches as Triton (4, then 6 padded to 8)', () => {
    assert.deepEqual(drain([1, 1, 1, 1, 3, 3], tri(0), T0, 'triton'), ['4@4', '6@8']);
    assert.deepEqual(drain([1, 1, 1, 1, 3, 3], tri(0), T0, 'tier-aware'), ['4@4', '6@8']);
  });

  it('the same six requests once the delay is exceeded: Triton computes 16 rows, the tier-aware policy 12', () => {
    // Triton sends all 10 rows, padded to tier 16 (6 padding rows).
    assert.deepEqual(drain([1, 1, 1, 1, 3, 3], tri(5_000), T0 + 10, 'triton'), ['10@16']);
    // 4 (fills tier 4) and 6 (tier 8): 12 computed rows, 2 of them padding.
    assert.deepEqual(drain([1, 1, 1, 1, 3, 3], tri(5_000), T0 + 10, 'tier-aware'), ['4@4', '6@8']);
  });

  it('a prefix that fills a tier goes at once; a padded remainder waits for the delay like Triton', () => {
    const d = decide({ pending: reqs([1, 1, 1, 1, 3, 3]), shape: tri(5_000), now: T0 + 1, slots: IDLE });
    assert.deepEqual(d, send(4, 4, 4));
    const rest = decide({ pending: reqs([3, 3]), shape: tri(5_000), now: T0 + 1, slots: IDLE });
    assert.deepEqual(rest, { kind: 'wait', until: T0 + 5 });
  });

  it('3,3,3 with only max_batch_size preferred: Triton pads 9 rows to 16, the tier-aware policy sends 6 then 3', () => {
    assert.deepEqual(drain([3, 3, 3], tri(0, [16]), T0, 'triton'), ['9@16']);
    assert.deepEqual(drain([3, 3, 3], tri(0, [16]), T0, 'tier-aware'), ['6@8', '3@4']);
  });

  it('planSplit: fewest computed rows, then fewest batches, then a first batch that fills its tier', () => {
    const shape = tri(0);
    assert.deepEqual(planSplit(reqs([1, 1, 1, 1, 3, 3]), shape), { take: 4, rows: 4 });
    assert.deepEqual(planSplit(reqs([3, 3, 3]), shape), { take: 2, rows: 6 });
    // 4+3 = 7 pads to 8 and so does 4 | 3 (4 + 4): one batch wins the tie.
    assert.deepEqual(planSplit(reqs([4, 3]), shape), { take: 2, rows: 7 });
    // 3,3,3,3,4 = 16 rows fill tier 16 exactly (Triton would send its marked 6 rows, padded to 8).
    assert.deepEqual(planSplit(reqs([3, 3, 3, 3, 4]), shape), { take: 5, rows: 16 });
    // Only requests of the head's shape are planned.
    assert.deepEqual(planSplit([...reqs([3]), ...reqs([1], 'y')], shape), { take: 1, rows: 3 });
  });

  it('tier costs: rows + 1 before any measurement; measured lane times interpolated, plus the per-batch overhead', () => {
    const prior = tierCostModel([4, 8, 16], new Map());
    assert.deepEqual([4, 8, 16].map(prior), [5, 9, 17]);
    const m = tierCostModel(
      [1, 4, 8, 16],
      new Map([
        [4, 40],
        [16, 100],
      ]),
    );
    assert.equal(m(4), 42);
    assert.equal(m(8), 40 + (60 * 4) / 12 + 2); // between 4 and 16
    assert.equal(m(1), (40 * 2) / 5 + 2); // below the smallest measured tier: scaled by rows + 1
    assert.equal(m(16), 102);
  });

  it('measured costs decide the split: time ∝ rows (a CPU) splits 1,1,1,1,3,3; a flat cost (an NPU) pads', () => {
    const shape = tri(5_000);
    const late = T0 + 10;
    const run = (cost: ReturnType<typeof tierCostModel>) => {
      let pending = reqs([1, 1, 1, 1, 3, 3]);
      const out: string[] = [];
      for (let d = decide({ pending, shape, now: late, slots: IDLE, cost }); d.kind === 'send'; ) {
        out.push(`${d.rows}@${d.tier}`);
        pending = pending.slice(d.take);
        d = decide({ pending, shape, now: late, slots: IDLE, cost });
      }
      return out;
    };
    const cpu = tierCostModel(
      shape.tiers,
      new Map([
        [4, 40],
        [8, 80],
        [16, 160],
      ]),
    );
    const npu = tierCostModel(
      shape.tiers,
      new Map([
        [4, 10],
        [8, 11],
        [16, 13],
      ]),
    );
    assert.deepEqual(run(cpu), ['4@4', '6@8']);
    assert.deepEqual(run(npu), ['10@16']);
  });

  it('no free slot: nothing is sent, whatever is pending', () => {
    assert.deepEqual(decide({ pending: reqs([8, 8]), shape: tri(), now: T0, slots: FULL }), {
      kind: 'wait',
      until: null,
    });
  });

  it('lanes busy, staging slot free: a batch that can still grow waits instead of being padded', () => {
    const shape: BatchShape = { tiers: [1, 2, 4, 8], preferred: [1, 2, 4, 8], maxBatch: 8, maxQueueDelayUs: 0 };
    assert.deepEqual(decide({ pending: reqs([1, 1, 1]), shape, now: T0, slots: STAGE_ONLY }), {
      kind: 'wait',
      until: null,
    });
    // A full largest tier cannot grow: it is staged for the next free lane.
    assert.deepEqual(decide({ pending: reqs([4, 4, 1]), shape, now: T0, slots: STAGE_ONLY }), send(2, 8, 8));
    // Closed by a request that does not fit: it cannot grow either.
    assert.deepEqual(decide({ pending: reqs([6, 6]), shape, now: T0, slots: STAGE_ONLY }), send(1, 6, 8));
  });

  it('lanes busy: once the pending requests cannot grow the batch, the least-padding first part is staged', () => {
    // 1,2,3,1,2 = 9 rows > 8: the pending set is closed; Triton would send 1,2,3,1 = 7 rows padded to 8.
    const shape: BatchShape = { tiers: [1, 2, 4, 8], preferred: [1, 2, 4, 8], maxBatch: 8, maxQueueDelayUs: 0 };
    const pending = reqs([1, 2, 3, 1, 2]);
    const plan = planSplit(pending, shape);
    const d = decide({ pending, shape, now: T0, slots: STAGE_ONLY });
    assert.equal(d.kind, 'send');
    assert.deepEqual(d, send(plan.take, plan.rows, nearestTier(shape.tiers, plan.rows)));
  });

  it('the triton policy forms batches only when a lane is idle (no staging)', () => {
    const shape: BatchShape = { tiers: [1, 2, 4, 8], preferred: [1, 2, 4, 8], maxBatch: 8, maxQueueDelayUs: 0 };
    const d = decide({ pending: reqs([4, 4]), shape, now: T0, slots: STAGE_ONLY, policy: 'triton' });
    assert.deepEqual(d, { kind: 'wait', until: null });
  });

  it('without batching (max_batch_size 0) every request is its own batch of tier 1', () => {
    const shape: BatchShape = { tiers: [1], preferred: [1], maxBatch: 1, maxQueueDelayUs: 0 };
    assert.deepEqual(drain([1, 1, 1], shape, T0, 'tier-aware'), ['1@1', '1@1', '1@1']);
  });
});
