import {
  type GearClass,
  type GearSet,
  gearElements,
  memberElements,
  type RepositoryModel,
} from '@ge-mesh/model-repository';
import type { BatchShape, TierCost } from './batch-policy.js';

/**
 * What a model's config says its batches may look like (tiers, preferred
 * sizes, max_batch_size, queue delay), for the model as a whole and for each
 * gear class of a model with gears: the batch policy's input besides the
 * pending requests and the lanes.
 */

/** The shape rules of a model's batches, from its config. */
export function batchShape(model: RepositoryModel): BatchShape {
  const c = model.config;
  const db = c.dynamicBatching;
  // The GE backend docs ask for preferred sizes derived from the tiers; an explicit list is Triton's.
  const explicit = db?.preferredBatchSizeListed === true;
  const maxBatch = c.maxBatchSize > 0 ? c.maxBatchSize : 1;
  return {
    tiers: c.tiers,
    preferred: explicit && db ? db.preferredBatchSize : c.tiers.filter((t) => t <= maxBatch),
    maxBatch,
    maxQueueDelayUs: db?.maxQueueDelayMicroseconds ?? 0,
    ...(db ? {} : { singleRequest: true }),
  };
}

/**
 * The shape rules of the batches of one gear class: its tiers are the batch
 * sizes of the gears that hold its rows, and max_batch_size caps them.
 */
export function gearClassShape(model: RepositoryModel, base: BatchShape, cls: GearClass): BatchShape {
  const explicit = model.config.dynamicBatching?.preferredBatchSizeListed === true;
  const maxBatch = Math.min(base.maxBatch, cls.tiers[cls.tiers.length - 1] ?? base.maxBatch);
  return {
    ...base,
    tiers: cls.tiers,
    preferred: explicit ? base.preferred.filter((t) => t <= maxBatch) : cls.tiers.filter((t) => t <= maxBatch),
    maxBatch,
  };
}

/**
 * Lane time of a gear class's batch per tier, with nothing measured: the
 * input elements its gear runs, in rows of the class, plus one row for the
 * batch itself (as tierCostModel counts rows).
 */
export function gearClassCost(gears: GearSet, cls: GearClass): TierCost {
  const perRow = memberElements(gears, { rows: 1, dims: cls.dims });
  return (tier) => {
    const gear = cls.gearOf.get(tier);
    return (gear ? gearElements(gears, gear) / perRow : tier) + 1;
  };
}

/**
 * Pending requests of a model with gears, grouped by gear class in walk
 * order of each group's first request: the tier-aware policy batches each
 * group on its own, so requests of different lengths that pad to the same
 * gears share batches and a class never waits behind another.
 */
export function byGearClass<T extends { readonly item: { readonly gearClass?: GearClass } }>(
  pending: readonly T[],
): T[][] {
  const groups = new Map<string, T[]>();
  for (const p of pending) {
    const key = p.item.gearClass?.key ?? '';
    const g = groups.get(key);
    if (g) g.push(p);
    else groups.set(key, [p]);
  }
  return [...groups.values()];
}
