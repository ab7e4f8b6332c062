/**
 * The shape of a protobuf message as the text-format parser needs it: for
 * each field, its value kind, whether it repeats, its enum values or nested
 * message, and its oneof. Written as plain data so a schema reads like the
 * .proto it mirrors.
 */

export type ScalarKind = 'string' | 'bool' | 'int32' | 'int64' | 'uint32' | 'uint64' | 'float' | 'double';

export interface EnumSchema {
  readonly name: string;
  /** Value name → number. */
  readonly values: Readonly<Record<string, number>>;
  /** Names people write by habit from other tools → the value they mean, for error hints. */
  readonly hints?: Readonly<Record<string, string>>;
}

export type FieldSchema =
  | { readonly kind: ScalarKind; readonly repeated: boolean; readonly oneof?: string }
  | { readonly kind: 'enum'; readonly enum: EnumSchema; readonly repeated: boolean; readonly oneof?: string }
  | { readonly kind: 'message'; readonly message: MessageSchema; readonly repeated: boolean; readonly oneof?: string }
  | {
      readonly kind: 'map';
      /** The implicit `{ key, value }` entry message. */
      readonly entry: MessageSchema;
      readonly repeated: true;
      readonly oneof?: undefined;
    };

export interface MessageSchema {
  /** Type name as the .proto spells it, used in error messages (e.g. `ModelInput`). */
  readonly name: string;
  readonly fields: Readonly<Record<string, FieldSchema>>;
}

// Builders, so the ModelConfig table stays one line per field.

export const scalar = (kind: ScalarKind): FieldSchema => ({ kind, repeated: false });
export const repeatedScalar = (kind: ScalarKind): FieldSchema => ({ kind, repeated: true });
export const enumField = (e: EnumSchema): FieldSchema => ({ kind: 'enum', enum: e, repeated: false });
export const message = (m: MessageSchema): FieldSchema => ({ kind: 'message', message: m, repeated: false });
export const repeatedMessage = (m: MessageSchema): FieldSchema => ({ kind: 'message', message: m, repeated: true });

/** Puts a field into a oneof. */
export function inOneof(oneof: string, f: FieldSchema): FieldSchema {
  if (f.kind === 'map') throw new Error('a map field cannot be a oneof member');
  return { ...f, oneof };
}

/** `map<K, V>`: V is a scalar kind or a message. */
export function mapField(entryName: string, key: ScalarKind, value: ScalarKind | MessageSchema): FieldSchema {
  return {
    kind: 'map',
    repeated: true,
    entry: {
      name: entryName,
      fields: { key: scalar(key), value: typeof value === 'string' ? scalar(value) : message(value) },
    },
  };
}

export function enumOf(name: string, names: readonly string[], hints?: Record<string, string>): EnumSchema {
  return { name, values: Object.fromEntries(names.map((n, i) => [n, i])), ...(hints ? { hints } : {}) };
}
