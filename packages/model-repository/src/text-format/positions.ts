import type { SourcePosition } from '../config-error.js';

/** Where a field of a parsed message was written. */
export interface FieldLocation {
  /** The field name, at its first occurrence. */
  readonly name: SourcePosition;
  /** Each value in order (for a repeated field, one per element; for a message, its opening brace). */
  readonly values: SourcePosition[];
  /** Map fields: each key's entry (the last one written, as the last duplicate wins). */
  readonly keys: Map<string, SourcePosition>;
}

// Kept beside the parsed objects rather than in them, so a parsed message
// stays plain data (it is served as JSON by `/config`).
const LOCATIONS = new WeakMap<object, Map<string, FieldLocation>>();

export function recordField(message: object, field: string, name: SourcePosition): FieldLocation {
  let fields = LOCATIONS.get(message);
  if (!fields) {
    fields = new Map();
    LOCATIONS.set(message, fields);
  }
  let loc = fields.get(field);
  if (!loc) {
    loc = { name, values: [], keys: new Map() };
    fields.set(field, loc);
  }
  return loc;
}

export function fieldLocation(message: object, field: string): FieldLocation | undefined {
  return LOCATIONS.get(message)?.get(field);
}

/**
 * Where `field` of a message returned by parseTextProto was written: with a
 * number, the position of that element of a repeated field; with a string,
 * the entry of that key of a map field; otherwise the field name. Undefined
 * when the field was not written (it has its default).
 */
export function sourcePosition(message: object, field: string, index?: number | string): SourcePosition | undefined {
  const loc = fieldLocation(message, field);
  if (!loc) return undefined;
  if (typeof index === 'number') return loc.values[index] ?? loc.name;
  if (typeof index === 'string') return loc.keys.get(index) ?? loc.name;
  return loc.name;
}

/** Position of a singular field's value (e.g. the 8 of `max_batch_size: 8`). */
export function valuePosition(message: object, field: string): SourcePosition | undefined {
  const loc = fieldLocation(message, field);
  return loc ? (loc.values[0] ?? loc.name) : undefined;
}
