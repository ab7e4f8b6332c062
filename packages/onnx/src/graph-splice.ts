import protobuf from 'protobufjs';
import { FIELD, TO_PLAIN, ValueInfoType } from './onnx-proto.js';
import type { ValueInfoProto } from './types.js';

export type ValueInfoKind = 'input' | 'output' | 'valueInfo';

/** Returns a replacement, or undefined to keep the entry's bytes as they are. */
export type ValueInfoRewrite = (kind: ValueInfoKind, v: ValueInfoProto) => ValueInfoProto | undefined;

const KIND_BY_FIELD = new Map<number, ValueInfoKind>([
  [FIELD.graph.input, 'input'],
  [FIELD.graph.output, 'output'],
  [FIELD.graph.valueInfo, 'valueInfo'],
]);

const LENGTH_DELIMITED = 2;

/**
 * Rewrites the value infos (inputs, outputs, value_info) of a model's main
 * graph and copies every other byte unchanged: nodes, weights, functions and
 * fields this package does not declare survive. Entries the callback leaves
 * alone keep their original encoding. Protobuf libraries drop unknown fields
 * when they re-encode, which is why this splices at the wire level.
 */
export function rewriteGraphValueInfos(model: Uint8Array, rewrite: ValueInfoRewrite): Uint8Array {
  let changed = false;
  const out = spliceFields(model, (field, body) => {
    if (field !== FIELD.model.graph) return undefined;
    const graph = spliceFields(body, (graphField, entry) => {
      const kind = KIND_BY_FIELD.get(graphField);
      if (!kind) return undefined;
      const v = ValueInfoType.toObject(ValueInfoType.decode(entry), TO_PLAIN) as ValueInfoProto;
      const replaced = rewrite(kind, v);
      if (!replaced) return undefined;
      changed = true;
      return ValueInfoType.encode(ValueInfoType.fromObject(replaced)).finish();
    });
    return graph === body ? undefined : graph;
  });
  return changed ? out : model;
}

/**
 * Walks the top-level fields of one encoded message. For each length-delimited
 * field, `replace` may return new body bytes; everything else is copied as is.
 * Returns the input itself when nothing was replaced.
 */
function spliceFields(
  msg: Uint8Array,
  replace: (field: number, body: Uint8Array) => Uint8Array | undefined,
): Uint8Array {
  const reader = protobuf.Reader.create(msg);
  const pieces: Uint8Array[] = [];
  let copiedUpTo = 0;
  while (reader.pos < reader.len) {
    const start = reader.pos;
    const tag = reader.uint32();
    const wireType = tag & 7;
    if (wireType !== LENGTH_DELIMITED) {
      reader.skipType(wireType);
      continue;
    }
    const length = reader.uint32();
    const bodyStart = reader.pos;
    reader.skip(length);
    const replacement = replace(tag >>> 3, msg.subarray(bodyStart, reader.pos));
    if (!replacement) continue;
    pieces.push(msg.subarray(copiedUpTo, start));
    pieces.push(protobuf.Writer.create().uint32(tag).uint32(replacement.length).finish(), replacement);
    copiedUpTo = reader.pos;
  }
  if (pieces.length === 0) return msg;
  pieces.push(msg.subarray(copiedUpTo));
  return concat(pieces);
}

function concat(pieces: Uint8Array[]): Uint8Array {
  let total = 0;
  for (const p of pieces) total += p.length;
  const out = new Uint8Array(total);
  let at = 0;
  for (const p of pieces) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
