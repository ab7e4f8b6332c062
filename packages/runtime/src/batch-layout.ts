import { elementCount, elementSize, MeshError, type WireTensor } from '@ge-mesh/protocol';
import type { BufferPool } from './buffer-pool.js';
import type { EngineTensor, EngineTensorSpec } from './engine.js';

/** One request's rows inside a batch. */
export interface MemberRows {
  readonly inputs: readonly WireTensor[];
  readonly rows: number;
}

/**
 * Concatenate the members' inputs row-wise into pooled buffers shaped for the
 * tier. Padding rows (tier − real rows) keep whatever the pool holds: rows are
 * independent in the models served, and their outputs are dropped.
 */
export function assembleBatch(
  specs: readonly EngineTensorSpec[],
  members: readonly MemberRows[],
  tier: number,
  batched: boolean,
  pool: BufferPool,
): Map<string, EngineTensor> {
  const out = new Map<string, EngineTensor>();
  for (const spec of specs) {
    const first = members[0]?.inputs.find((t) => t.name === spec.name);
    if (!first) throw new MeshError('INTERNAL', `batch has no input '${spec.name}'`);
    if (!batched) {
      out.set(spec.name, { data: first.data, shape: first.shape });
      continue;
    }
    const rowShape = first.shape.slice(1);
    const rowBytes = elementCount(rowShape) * elementSize(spec.dataType);
    const buf = pool.get(`${spec.name}@${tier}`, rowBytes * tier);
    let offset = 0;
    for (const m of members) {
      const t = m.inputs.find((x) => x.name === spec.name);
      if (!t || t.data.byteLength !== rowBytes * m.rows) {
        throw new MeshError('INTERNAL', `batch member input '${spec.name}' does not match the batch layout`);
      }
      buf.set(t.data, offset);
      offset += t.data.byteLength;
    }
    out.set(spec.name, { data: buf, shape: [tier, ...rowShape] });
  }
  return out;
}

/** Cut each member's rows out of the batch outputs (copies: outputs are reused). */
export function sliceOutputs(
  specs: readonly EngineTensorSpec[],
  outputs: ReadonlyMap<string, EngineTensor>,
  memberRows: readonly number[],
  batched: boolean,
): WireTensor[][] {
  const perMember: WireTensor[][] = memberRows.map(() => []);
  for (const spec of specs) {
    const t = outputs.get(spec.name);
    if (!t) throw new MeshError('EXECUTION_FAILED', `the model produced no output '${spec.name}'`);
    if (!batched) {
      perMember[0]?.push({
        name: spec.name,
        datatype: spec.dataType,
        shape: [...t.shape],
        data: copyBytes(t.data, 0, t.data.byteLength),
      });
      continue;
    }
    const tier = t.shape[0] ?? 1;
    const rowBytes = t.data.byteLength / tier;
    let row = 0;
    memberRows.forEach((rows, i) => {
      const start = row * rowBytes;
      perMember[i]?.push({
        name: spec.name,
        datatype: spec.dataType,
        shape: [rows, ...t.shape.slice(1)],
        data: copyBytes(t.data, start, start + rows * rowBytes),
      });
      row += rows;
    });
  }
  return perMember;
}

/** A copy, also when given a Buffer (whose slice() is a view). */
function copyBytes(src: Uint8Array, start: number, end: number): Uint8Array {
  return Uint8Array.prototype.slice.call(src, start, end);
}
