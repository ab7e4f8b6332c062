/**
 * Tokenizer for protobuf text format (the language of config.pbtxt), following
 * the text-format language spec: `#` comments, identifiers, single- or
 * double-quoted strings with C escapes, decimal/octal/hex integers, floats with
 * an optional `f` suffix, and one-character symbols. Written by hand because no
 * maintained JS library parses text-format protobuf against a schema with
 * located, fixable errors.
 */
import type { SourcePosition } from '../config-error.js';

export type Token =
  | (SourcePosition & { readonly type: 'ident'; readonly text: string })
  /** `value` is the decoded string; `text` the literal as written. */
  | (SourcePosition & { readonly type: 'string'; readonly text: string; readonly value: string })
  | (SourcePosition & {
      readonly type: 'int';
      readonly text: string;
      readonly value: bigint;
      readonly radix: 8 | 10 | 16;
    })
  | (SourcePosition & { readonly type: 'float'; readonly text: string; readonly value: number })
  | (SourcePosition & { readonly type: 'symbol'; readonly text: string })
  | (SourcePosition & { readonly type: 'eof'; readonly text: '' });

/** A lexical error; the parser turns it into a ConfigError. */
export class LexError extends Error {
  constructor(
    readonly position: SourcePosition,
    readonly detail: string,
  ) {
    super(detail);
  }
}

const SYMBOLS = new Set([':', ';', ',', '{', '}', '<', '>', '[', ']', '-']);
const isLetter = (c: string) => (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c === '_';
const isDigit = (c: string) => c >= '0' && c <= '9';
const isHex = (c: string) => isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
const isOctal = (c: string) => c >= '0' && c <= '7';

const SIMPLE_ESCAPES: Record<string, number> = {
  a: 7,
  b: 8,
  f: 12,
  n: 10,
  r: 13,
  t: 9,
  v: 11,
  '?': 63,
  '\\': 92,
  "'": 39,
  '"': 34,
};

const utf8 = new TextEncoder();
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

export class Lexer {
  private pos = 0;
  private line = 1;
  private lineStart = 0;
  private peeked: Token | undefined;

  constructor(private readonly text: string) {}

  peek(): Token {
    this.peeked ??= this.scan();
    return this.peeked;
  }

  next(): Token {
    const t = this.peek();
    this.peeked = undefined;
    return t;
  }

  private here(): SourcePosition {
    return { line: this.line, column: this.pos - this.lineStart + 1 };
  }

  private at(offset: number): SourcePosition {
    return { line: this.line, column: offset - this.lineStart + 1 };
  }

  private skipSpaceAndComments(): void {
    const s = this.text;
    while (this.pos < s.length) {
      const c = s[this.pos] as string;
      if (c === '\n') {
        this.pos++;
        this.line++;
        this.lineStart = this.pos;
      } else if (c === ' ' || c === '\t' || c === '\r' || c === '\v' || c === '\f' || c === '\uFEFF') {
        this.pos++;
      } else if (c === '#') {
        while (this.pos < s.length && s[this.pos] !== '\n') this.pos++;
      } else {
        return;
      }
    }
  }

  private scan(): Token {
    this.skipSpaceAndComments();
    const s = this.text;
    const start = this.here();
    if (this.pos >= s.length) return { type: 'eof', text: '', ...start };
    const c = s[this.pos] as string;
    if (isLetter(c)) {
      const from = this.pos;
      while (this.pos < s.length && (isLetter(s[this.pos] as string) || isDigit(s[this.pos] as string))) this.pos++;
      return { type: 'ident', text: s.slice(from, this.pos), ...start };
    }
    if (isDigit(c) || (c === '.' && isDigit(s[this.pos + 1] ?? ''))) return this.scanNumber(start);
    if (c === '"' || c === "'") return this.scanString(start, c);
    if (SYMBOLS.has(c)) {
      this.pos++;
      return { type: 'symbol', text: c, ...start };
    }
    if (c === '/' && s[this.pos + 1] === '/') {
      throw new LexError(start, "'//' does not start a comment in text format; use '#'");
    }
    const cp = String.fromCodePoint(s.codePointAt(this.pos) as number);
    throw new LexError(start, `unexpected character '${cp}'`);
  }

  private scanNumber(start: SourcePosition): Token {
    const s = this.text;
    const from = this.pos;
    const digits = () => {
      const d = this.pos;
      while (this.pos < s.length && isDigit(s[this.pos] as string)) this.pos++;
      return this.pos - d;
    };
    let token: Token;
    if (s[from] === '0' && (s[from + 1] === 'x' || s[from + 1] === 'X')) {
      this.pos += 2;
      while (this.pos < s.length && isHex(s[this.pos] as string)) this.pos++;
      const text = s.slice(from, this.pos);
      if (text.length === 2) throw new LexError(start, `invalid number '${text}': 0x needs hex digits after it`);
      token = { type: 'int', text, value: BigInt(text), radix: 16, ...start };
    } else {
      const intDigits = digits();
      let isFloat = false;
      if (s[this.pos] === '.') {
        isFloat = true;
        this.pos++;
        digits();
      }
      const e = s[this.pos];
      if (e === 'e' || e === 'E') {
        const sign = s[this.pos + 1] === '+' || s[this.pos + 1] === '-' ? 1 : 0;
        if (isDigit(s[this.pos + 1 + sign] ?? '')) {
          isFloat = true;
          this.pos += 1 + sign;
          digits();
        }
      }
      let suffix = false;
      if (s[this.pos] === 'f' || s[this.pos] === 'F') {
        suffix = true;
        this.pos++;
      }
      const text = s.slice(from, this.pos);
      const body = suffix ? text.slice(0, -1) : text;
      const leadingZero = intDigits > 1 && s[from] === '0';
      if (leadingZero && (isFloat || suffix)) {
        throw new LexError(start, `invalid number '${text}': a decimal number cannot start with 0`);
      }
      if (isFloat || suffix) {
        token = { type: 'float', text, value: Number(body), ...start };
      } else if (leadingZero) {
        const bad = [...body].find((d) => !isOctal(d));
        if (bad !== undefined) {
          throw new LexError(
            start,
            `invalid number '${text}': a leading 0 makes it octal, which has no digit '${bad}'; drop the leading 0`,
          );
        }
        token = { type: 'int', text, value: BigInt(`0o${body.slice(1)}`), radix: 8, ...start };
      } else {
        token = { type: 'int', text, value: BigInt(body), radix: 10, ...start };
      }
    }
    const after = s[this.pos] ?? '';
    if (isLetter(after) || isDigit(after) || after === '.') {
      let end = this.pos;
      while (end < s.length && (isLetter(s[end] as string) || isDigit(s[end] as string) || s[end] === '.')) end++;
      throw new LexError(
        start,
        `number '${token.text}' runs into '${s.slice(this.pos, end)}'; separate them with a space or ','`,
      );
    }
    return token;
  }

  private scanString(start: SourcePosition, quote: string): Token {
    const s = this.text;
    const from = this.pos;
    this.pos++;
    const bytes: number[] = [];
    let runStart = this.pos;
    const flushRun = () => {
      if (this.pos > runStart) bytes.push(...utf8.encode(s.slice(runStart, this.pos)));
    };
    for (;;) {
      if (this.pos >= s.length || s[this.pos] === '\n') {
        throw new LexError(
          start,
          `unterminated string: add the closing ${quote} on the same line (a string cannot span lines; join adjacent "..." "..." literals instead)`,
        );
      }
      const c = s[this.pos] as string;
      if (c === quote) {
        flushRun();
        this.pos++;
        break;
      }
      if (c !== '\\') {
        this.pos++;
        continue;
      }
      flushRun();
      this.readEscape(bytes);
      runStart = this.pos;
    }
    let value: string;
    try {
      value = strictUtf8.decode(new Uint8Array(bytes));
    } catch {
      throw new LexError(start, 'string escapes do not form valid UTF-8; use \\u escapes for non-ASCII characters');
    }
    return { type: 'string', text: s.slice(from, this.pos), value, ...start };
  }

  /** Reads one escape at `this.pos` (a backslash) and appends its bytes. */
  private readEscape(bytes: number[]): void {
    const s = this.text;
    const escPos = this.at(this.pos);
    const c = s[this.pos + 1] ?? '';
    if (c in SIMPLE_ESCAPES) {
      bytes.push(SIMPLE_ESCAPES[c] as number);
      this.pos += 2;
      return;
    }
    if (isOctal(c)) {
      let end = this.pos + 1;
      while (end < this.pos + 4 && isOctal(s[end] ?? '')) end++;
      const value = Number.parseInt(s.slice(this.pos + 1, end), 8);
      if (value > 0xff) {
        throw new LexError(escPos, `octal escape '${s.slice(this.pos, end)}' is above \\377 (one byte)`);
      }
      bytes.push(value);
      this.pos = end;
      return;
    }
    if (c === 'x' || c === 'X') {
      let end = this.pos + 2;
      while (end < this.pos + 4 && isHex(s[end] ?? '')) end++;
      if (end === this.pos + 2) throw new LexError(escPos, "escape '\\x' needs one or two hex digits after it");
      bytes.push(Number.parseInt(s.slice(this.pos + 2, end), 16));
      this.pos = end;
      return;
    }
    if (c === 'u' || c === 'U') {
      const n = c === 'u' ? 4 : 8;
      const hex = s.slice(this.pos + 2, this.pos + 2 + n);
      if (hex.length !== n || ![...hex].every(isHex)) {
        throw new LexError(escPos, `escape '\\${c}' needs exactly ${n} hex digits after it`);
      }
      let cp = Number.parseInt(hex, 16);
      this.pos += 2 + n;
      if (cp >= 0xd800 && cp <= 0xdbff && s[this.pos] === '\\' && s[this.pos + 1] === 'u') {
        const low = Number.parseInt(s.slice(this.pos + 2, this.pos + 6), 16);
        if (low >= 0xdc00 && low <= 0xdfff) {
          cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
          this.pos += 6;
        }
      }
      if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
        throw new LexError(escPos, `escape '\\${c}${hex}' is not a Unicode code point`);
      }
      bytes.push(...utf8.encode(String.fromCodePoint(cp)));
      return;
    }
    if (c === '' || c === '\n') {
      throw new LexError(escPos, 'a string cannot end in a lone backslash; write \\\\ for a backslash');
    }
    throw new LexError(
      escPos,
      `invalid escape '\\${c}' in string; valid escapes are \\n \\t \\r \\a \\b \\f \\v \\\\ \\' \\" \\? \\ooo \\xHH \\uHHHH (write \\\\ for a backslash)`,
    );
  }
}
