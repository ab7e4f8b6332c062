/**
 * Parser for protobuf text format against a schema (see schema.ts), as
 * Triton reads config.pbtxt. Written by hand: no maintained JS library
 * parses text-format protobuf against a schema with errors that name the
 * file, line, column and field and say what to fix.
 *
 * The result is plain data: fields by their .proto names, only the fields
 * written; scalars as string / number / boolean (64-bit integers as numbers,
 * refused beyond 2^53 - 1); enums by value name; repeated fields as arrays;
 * maps as objects keyed by the key's text (last duplicate wins); messages as
 * objects. Where each field was written is kept aside (positions.ts).
 */
import { ConfigError, type ConfigErrorKind, type SourcePosition } from '../config-error.js';
import { MODEL_CONFIG_SCHEMA } from '../model-config-schema.js';
import { LexError, Lexer, type Token } from './lexer.js';
import { fieldLocation, recordField } from './positions.js';
import type { FieldSchema, MessageSchema } from './schema.js';
import { closest } from './suggest.js';

export type TextMessage = Record<string, unknown>;

export interface ParseTextProtoOptions {
  /** Shown in error messages; defaults to `config.pbtxt`. */
  readonly file?: string;
  /** Defaults to Triton's `inference.ModelConfig`. */
  readonly schema?: MessageSchema;
}

/** Parses text-format protobuf into plain data; throws ConfigError on the first problem. */
export function parseTextProto(text: string, options: ParseTextProtoOptions = {}): TextMessage {
  return new Parser(text, options.file ?? 'config.pbtxt').parseFile(options.schema ?? MODEL_CONFIG_SCHEMA);
}

const TRUE_NAMES = new Set(['true', 'True', 't']);
const FALSE_NAMES = new Set(['false', 'False', 'f']);

const INT_RANGES: Record<'int32' | 'int64' | 'uint32' | 'uint64', readonly [bigint, bigint]> = {
  int32: [-(2n ** 31n), 2n ** 31n - 1n],
  int64: [-(2n ** 63n), 2n ** 63n - 1n],
  uint32: [0n, 2n ** 32n - 1n],
  uint64: [0n, 2n ** 64n - 1n],
};
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

interface OpenMessage {
  readonly closer: '}' | '>';
  readonly at: SourcePosition;
  readonly field: string;
}

interface ScalarValue {
  readonly value: unknown;
  readonly at: SourcePosition;
}

const pos = (t: Token): SourcePosition => ({ line: t.line, column: t.column });
const isSymbol = (t: Token, s: string) => t.type === 'symbol' && t.text === s;
const where = (p: SourcePosition) => `line ${p.line}:${p.column}`;

function describe(t: Token): string {
  switch (t.type) {
    case 'eof':
      return 'the end of the file';
    case 'string':
      return `string ${t.text.length > 40 ? `${t.text.slice(0, 37)}...` : t.text}`;
    case 'int':
    case 'float':
      return t.text;
    default:
      return `'${t.text}'`;
  }
}

function kindPhrase(f: FieldSchema): string {
  switch (f.kind) {
    case 'string':
      return 'a string (in quotes)';
    case 'bool':
      return 'a bool (true or false)';
    case 'int32':
    case 'int64':
      return `an integer (${f.kind})`;
    case 'uint32':
    case 'uint64':
      return `a non-negative integer (${f.kind})`;
    case 'float':
    case 'double':
      return `a number (${f.kind})`;
    case 'enum':
      return `a ${f.enum.name} value`;
    case 'message':
      return `a message (${f.message.name})`;
    case 'map':
      return `map entries ({ key: ... value: ... })`;
  }
}

function defaultOf(f: FieldSchema): unknown {
  switch (f.kind) {
    case 'string':
      return '';
    case 'bool':
      return false;
    case 'enum':
      return Object.keys(f.enum.values)[0];
    case 'message':
      return {};
    case 'map':
      return {};
    default:
      return 0;
  }
}

// Map keys may be any text, "__proto__" included, so they are defined, never assigned.
function setOwn(target: object, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

class Parser {
  private readonly lexer: Lexer;
  /** The field being read, for lexical errors inside its value. */
  private context: string | undefined;

  constructor(
    text: string,
    private readonly file: string,
  ) {
    this.lexer = new Lexer(text);
  }

  parseFile(schema: MessageSchema): TextMessage {
    const root: TextMessage = {};
    this.parseFields(root, schema, '', undefined);
    return root;
  }

  private fail(kind: ConfigErrorKind, at: SourcePosition, detail: string, field?: string): never {
    throw new ConfigError({ kind, file: this.file, position: at, field: field ?? this.context, detail });
  }

  private peek(): Token {
    try {
      return this.lexer.peek();
    } catch (e) {
      if (e instanceof LexError) this.fail('syntax', e.position, e.detail);
      throw e;
    }
  }

  private next(): Token {
    const t = this.peek();
    this.lexer.next();
    return t;
  }

  /** Reads fields until the closing delimiter of `open` (or the end of the file at top level). */
  private parseFields(msg: TextMessage, schema: MessageSchema, path: string, open: OpenMessage | undefined): void {
    const oneofs = new Map<string, { field: string; at: SourcePosition }>();
    for (;;) {
      const t = this.peek();
      if (t.type === 'eof') {
        if (open) {
          this.fail(
            'syntax',
            open.at,
            `message '${open.field}' is never closed: add '${open.closer}' (reached the end of the file)`,
            path,
          );
        }
        return;
      }
      if (t.type === 'symbol') {
        if (open && t.text === open.closer) {
          this.next();
          return;
        }
        if (t.text === '}' || t.text === '>') {
          if (open) {
            this.fail(
              'syntax',
              pos(t),
              `expected '${open.closer}' to close message '${open.field}' opened at ${where(open.at)}, found '${t.text}'`,
              path,
            );
          }
          this.fail('syntax', pos(t), `unexpected '${t.text}': no message is open here`, path || undefined);
        }
        if (t.text === '[') {
          this.fail(
            'unknown_field',
            pos(t),
            `extension and Any field names ('[...]') are not part of ${schema.name}`,
            path || undefined,
          );
        }
      }
      if (t.type !== 'ident') {
        this.fail('syntax', pos(t), `expected a field name of ${schema.name}, found ${describe(t)}`, path || undefined);
      }
      this.next();
      this.parseField(msg, schema, path, t, oneofs);
      const sep = this.peek();
      if (isSymbol(sep, ';') || isSymbol(sep, ',')) this.next();
    }
  }

  private parseField(
    msg: TextMessage,
    schema: MessageSchema,
    parentPath: string,
    nameTok: Token,
    oneofs: Map<string, { field: string; at: SourcePosition }>,
  ): void {
    const name = nameTok.text;
    const path = parentPath ? `${parentPath}.${name}` : name;
    const at = pos(nameTok);
    const field = Object.hasOwn(schema.fields, name) ? schema.fields[name] : undefined;
    if (!field) {
      const hint = closest(name, Object.keys(schema.fields));
      this.fail(
        'unknown_field',
        at,
        `unknown field '${name}' in ${schema.name}${hint ? ` (did you mean '${hint}'?)` : ''}`,
        path,
      );
    }
    const prior = fieldLocation(msg, name);
    if (prior && !field.repeated) {
      this.fail(
        'duplicate',
        at,
        `field '${name}' is set twice in ${schema.name} (first at ${where(prior.name)}); a non-repeated field may appear only once`,
        path,
      );
    }
    if (field.oneof) {
      const other = oneofs.get(field.oneof);
      if (other && other.field !== name) {
        this.fail(
          'oneof',
          at,
          `'${name}' cannot be set together with '${other.field}' (${where(other.at)}): both belong to oneof '${field.oneof}' of ${schema.name}; keep only one`,
          path,
        );
      }
      oneofs.set(field.oneof, { field: name, at });
    }
    const loc = recordField(msg, name, at);
    if (field.repeated && msg[name] === undefined) msg[name] = field.kind === 'map' ? {} : [];
    this.context = path;

    const store = (value: unknown, valueAt: SourcePosition) => {
      if (field.repeated) (msg[name] as unknown[]).push(value);
      else msg[name] = value;
      loc.values.push(valueAt);
    };

    if (field.kind === 'message' || field.kind === 'map') {
      if (isSymbol(this.peek(), ':')) this.next();
      const t = this.peek();
      const elementPath = () => (field.repeated ? `${path}[${loc.values.length}]` : path);
      const one = () => {
        const open = this.peek();
        if (!isSymbol(open, '{') && !isSymbol(open, '<')) {
          this.fail(
            'type',
            pos(open),
            `field '${name}' takes ${kindPhrase(field)}: write ${name} { ... }, found ${describe(open)}`,
            path,
          );
        }
        this.next();
        const closer = open.text === '{' ? '}' : '>';
        const elemPath = elementPath();
        if (field.kind === 'message') {
          const sub: TextMessage = {};
          this.parseFields(sub, field.message, elemPath, { closer, at: pos(open), field: name });
          store(sub, pos(open));
        } else {
          const entry: TextMessage = {};
          this.parseFields(entry, field.entry, elemPath, { closer, at: pos(open), field: name });
          const keyField = field.entry.fields.key as FieldSchema;
          const valueField = field.entry.fields.value as FieldSchema;
          const key = String(entry.key ?? defaultOf(keyField));
          setOwn(msg[name] as object, key, entry.value ?? defaultOf(valueField));
          loc.keys.set(key, pos(open));
          loc.values.push(pos(open));
        }
        this.context = path;
      };
      if (isSymbol(t, '[')) {
        if (!field.repeated) {
          this.fail('type', pos(t), `field '${name}' is not repeated, so it takes one message, not a list`, path);
        }
        this.parseList(name, path, one);
      } else {
        one();
      }
    } else {
      const t = this.peek();
      if (isSymbol(t, ':')) {
        this.next();
      } else if (isSymbol(t, '{') || isSymbol(t, '<')) {
        this.fail('type', pos(t), `field '${name}' takes ${kindPhrase(field)}, not a message`, path);
      } else {
        this.fail(
          'syntax',
          pos(t),
          `expected ':' after '${name}', found ${describe(t)} (a scalar field needs a colon)`,
          path,
        );
      }
      const v = this.peek();
      if (isSymbol(v, '[')) {
        if (!field.repeated) {
          this.fail('type', pos(v), `field '${name}' is not repeated, so it takes one value, not a list`, path);
        }
        this.parseList(name, path, () => {
          const s = this.parseScalar(field, name, `${path}[${loc.values.length}]`);
          store(s.value, s.at);
        });
      } else {
        const s = this.parseScalar(field, name, field.repeated ? `${path}[${loc.values.length}]` : path);
        store(s.value, s.at);
      }
    }
    this.context = parentPath || undefined;
  }

  /** `[ a, b, ... ]` (possibly empty), calling `element` for each member. */
  private parseList(name: string, path: string, element: () => void): void {
    const open = this.next();
    if (isSymbol(this.peek(), ']')) {
      this.next();
      return;
    }
    for (;;) {
      element();
      const t = this.peek();
      if (isSymbol(t, ',')) {
        this.next();
        const after = this.peek();
        if (isSymbol(after, ']')) {
          this.fail(
            'syntax',
            pos(t),
            `a list cannot end with ',': remove the ',' before ']' in the list of '${name}'`,
            path,
          );
        }
        continue;
      }
      if (isSymbol(t, ']')) {
        this.next();
        return;
      }
      if (t.type === 'eof') {
        this.fail(
          'syntax',
          pos(open),
          `list of '${name}' is never closed: add ']' (reached the end of the file)`,
          path,
        );
      }
      this.fail('syntax', pos(t), `expected ',' or ']' in the list of '${name}', found ${describe(t)}`, path);
    }
  }

  private parseScalar(field: FieldSchema, name: string, path: string): ScalarValue {
    const first = this.next();
    const at = pos(first);
    let tok = first;
    let neg = false;
    if (isSymbol(first, '-')) {
      neg = true;
      tok = this.next();
      if (tok.type !== 'int' && tok.type !== 'float' && tok.type !== 'ident') {
        this.fail('syntax', pos(tok), `expected a number after '-', found ${describe(tok)}`, path);
      }
    }
    const shown =
      (neg ? '-' : '') + (tok.type === 'string' ? describe(tok) : tok.type === 'ident' ? tok.text : describe(tok));
    const wrongKind = (hint = ''): never =>
      this.fail(
        'type',
        at,
        `field '${name}' takes ${kindPhrase(field)}, found ${neg ? `'${shown}'` : describe(tok)}${hint}`,
        path,
      );

    switch (field.kind) {
      case 'string': {
        if (tok.type !== 'string' || neg) {
          wrongKind(tok.type === 'ident' && !neg ? `; write "${tok.text}"` : '');
        }
        let value = (tok as Token & { value: string }).value;
        while (this.peek().type === 'string') value += (this.next() as Token & { value: string }).value;
        return { value, at };
      }
      case 'bool': {
        if (!neg && tok.type === 'ident') {
          if (TRUE_NAMES.has(tok.text)) return { value: true, at };
          if (FALSE_NAMES.has(tok.text)) return { value: false, at };
        }
        if (!neg && tok.type === 'int' && (tok.value === 0n || tok.value === 1n))
          return { value: tok.value === 1n, at };
        return wrongKind(' (also accepted: True, False, t, f, 1, 0)');
      }
      case 'enum': {
        const names = Object.keys(field.enum.values);
        if (!neg && tok.type === 'ident') {
          if (Object.hasOwn(field.enum.values, tok.text)) return { value: tok.text, at };
          const hints = field.enum.hints;
          const hint = hints && Object.hasOwn(hints, tok.text) ? hints[tok.text] : closest(tok.text, names);
          this.fail(
            'type',
            at,
            `unknown value '${tok.text}' for field '${name}' of enum ${field.enum.name} (${
              hint ? `did you mean '${hint}'?` : `expected one of ${names.join(', ')}`
            })`,
            path,
          );
        }
        if (tok.type === 'int') {
          const n = Number(neg ? -tok.value : tok.value);
          const byNumber = names.find((k) => field.enum.values[k] === n);
          if (byNumber !== undefined) return { value: byNumber, at };
          this.fail(
            'type',
            at,
            `${shown} is not a value of enum ${field.enum.name} for field '${name}'; expected one of ${names.join(', ')}`,
            path,
          );
        }
        return wrongKind();
      }
      case 'int32':
      case 'int64':
      case 'uint32':
      case 'uint64': {
        if (tok.type !== 'int') {
          const unquoted = tok.type === 'string' && /^-?\d+$/.test((tok as Token & { value: string }).value);
          return wrongKind(unquoted ? '; remove the quotes' : '');
        }
        const v = neg ? -tok.value : tok.value;
        const [lo, hi] = INT_RANGES[field.kind];
        if (neg && field.kind.startsWith('u')) {
          this.fail('type', at, `field '${name}' is unsigned (${field.kind}), so '${shown}' is not allowed`, path);
        }
        if (v < lo || v > hi) {
          this.fail('type', at, `${shown} is out of range for field '${name}' (${field.kind}: ${lo} to ${hi})`, path);
        }
        if (v > MAX_SAFE || v < -MAX_SAFE) {
          this.fail(
            'type',
            at,
            `${shown} is too large for field '${name}': 64-bit values are read exactly only up to ${MAX_SAFE}`,
            path,
          );
        }
        return { value: Number(v), at };
      }
      case 'float':
      case 'double': {
        const sign = neg ? -1 : 1;
        if (tok.type === 'float') return { value: sign * tok.value, at };
        if (tok.type === 'int') {
          if (tok.radix !== 10) {
            this.fail(
              'type',
              at,
              `field '${name}' takes ${kindPhrase(field)}; octal and hex are not allowed, write ${Number(tok.value)}`,
              path,
            );
          }
          return { value: sign * Number(tok.value), at };
        }
        if (tok.type === 'ident') {
          const lower = tok.text.toLowerCase();
          if (lower === 'inf' || lower === 'infinity') return { value: sign * Number.POSITIVE_INFINITY, at };
          if (lower === 'nan') return { value: Number.NaN, at };
        }
        return wrongKind();
      }
      default:
        // Message and map fields never reach here.
        throw new Error(`parseScalar on ${field.kind satisfies 'message' | 'map'}`);
    }
  }
}
