/**
 * Triton's JSON form of a ModelConfig (protobuf JSON with the .proto's field
 * names, as `/config` prints it and the load API's `config` parameter takes
 * it) → protobuf text format, so an override is parsed and checked by the
 * same parser and rules as a config.pbtxt. Only the JSON's shape is checked
 * here (objects, arrays, known fields); values are the parser's to check.
 */
import { ConfigError } from './config-error.js';
import { MODEL_CONFIG_SCHEMA } from './model-config-schema.js';
import type { FieldSchema, MessageSchema } from './text-format/schema.js';

/** Throws ConfigError (file `what`) when the JSON is not a ModelConfig's shape. */
export function configTextFromJson(json: string, what: string): string {
  let doc: unknown;
  try {
    doc = JSON.parse(json);
  } catch (e) {
    throw new ConfigError({ kind: 'syntax', file: what, detail: `the config is not JSON: ${(e as Error).message}` });
  }
  const lines: string[] = [];
  writeMessage(doc, MODEL_CONFIG_SCHEMA, '', what, lines, '');
  return `${lines.join('\n')}\n`;
}

function fail(what: string, path: string, detail: string): never {
  throw new ConfigError({ kind: 'type', file: what, field: path || undefined, detail });
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function writeMessage(
  doc: unknown,
  schema: MessageSchema,
  path: string,
  what: string,
  out: string[],
  indent: string,
): void {
  if (!isObject(doc)) fail(what, path, `${path || 'the config'} must be a JSON object (${schema.name})`);
  for (const [jsonKey, value] of Object.entries(doc)) {
    // protobuf's JSON reader (Triton's) takes a field's lowerCamelCase JSON name too.
    const key = schema.fields[jsonKey] ? jsonKey : jsonKey.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
    const field = schema.fields[key];
    const at = path ? `${path}.${key}` : key;
    if (!field) {
      fail(
        what,
        at,
        `${schema.name} has no field '${jsonKey}' (JSON configs use the .proto's field names or their lowerCamelCase JSON names, e.g. max_batch_size or maxBatchSize)`,
      );
    }
    if (value === null) continue;
    writeField(key, value, field, at, what, out, indent);
  }
}

function writeField(
  key: string,
  value: unknown,
  field: FieldSchema,
  path: string,
  what: string,
  out: string[],
  indent: string,
): void {
  if (field.kind === 'map') {
    if (!isObject(value)) fail(what, path, `${path} must be a JSON object (a map)`);
    const valueField = field.entry.fields.value as FieldSchema;
    for (const [k, v] of Object.entries(value)) {
      out.push(`${indent}${key} {`);
      out.push(`${indent}  key: ${JSON.stringify(k)}`);
      writeField('value', v, valueField, `${path}["${k}"]`, what, out, `${indent}  `);
      out.push(`${indent}}`);
    }
    return;
  }
  if (field.repeated) {
    if (!Array.isArray(value)) fail(what, path, `${path} must be a JSON array`);
    value.forEach((v, i) => {
      writeField(key, v, { ...field, repeated: false } as FieldSchema, `${path}[${i}]`, what, out, indent);
    });
    return;
  }
  if (field.kind === 'message') {
    out.push(`${indent}${key} {`);
    writeMessage(value, field.message, path, what, out, `${indent}  `);
    out.push(`${indent}}`);
    return;
  }
  out.push(`${indent}${key}: ${scalarText(value, field, path, what)}`);
}

function scalarText(value: unknown, field: FieldSchema, path: string, what: string): string {
  if (field.kind === 'enum') {
    if (typeof value === 'number') return String(value);
    if (typeof value !== 'string' || !/^\w+$/.test(value)) fail(what, path, `${path} must be an enum name`);
    // Triton reads JSON enums case-insensitively; ModelConfig's enum names are all upper case.
    return value.toUpperCase();
  }
  if (field.kind === 'string') {
    if (typeof value !== 'string') fail(what, path, `${path} must be a JSON string`);
    return JSON.stringify(value);
  }
  if (field.kind === 'bool') {
    if (typeof value !== 'boolean') fail(what, path, `${path} must be true or false`);
    return String(value);
  }
  // Numbers; protobuf JSON writes 64-bit integers as strings.
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string' && /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(value)) return value;
  return fail(what, path, `${path} must be a number`);
}
