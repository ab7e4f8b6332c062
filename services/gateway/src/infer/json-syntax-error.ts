import { MeshError } from '@ge-mesh/protocol';
import { MSG } from './messages.js';

/**
 * Why and where JSON text is malformed, in the words and at the byte offset
 * Triton's parser gives: rapidjson's iterative reader with NaN and Infinity
 * allowed (TritonJson::Parse), "<reason> at <offset>". Run only once JSON.parse
 * has refused the text, so the valid path pays nothing. Written by hand: no
 * JSON library reports rapidjson's errors; this follows its reader's states.
 */

const REASON = {
  documentEmpty: 'The document is empty.',
  rootNotSingular: 'The document root must not be followed by other values.',
  valueInvalid: 'Invalid value.',
  objectMissName: 'Missing a name for object member.',
  objectMissColon: 'Missing a colon after a name of object member.',
  objectMissCommaOrCurly: "Missing a comma or '}' after an object member.",
  arrayMissCommaOrSquare: "Missing a comma or ']' after an array element.",
  unicodeEscapeInvalidHex: 'Incorrect hex digit after \\u escape in string.',
  surrogateInvalid: 'The surrogate pair in string is invalid.',
  escapeInvalid: 'Invalid escape character in string.',
  missQuotationMark: 'Missing a closing quotation mark in string.',
  invalidEncoding: 'Invalid encoding in string.',
  numberTooBig: MSG.numberTooBig(),
  numberMissFraction: 'Miss fraction part in number.',
  numberMissExponent: 'Miss exponent in number.',
} as const;

type State =
  | 'start'
  | 'finish'
  | 'objectInitial'
  | 'memberKey'
  | 'keyValueDelimiter'
  | 'memberValue'
  | 'memberDelimiter'
  | 'arrayInitial'
  | 'element'
  | 'elementDelimiter';

/** What the reader reports when a state meets a token it has no move for (rapidjson's HandleError). */
const STUCK: Record<State, string> = {
  start: REASON.documentEmpty,
  finish: REASON.rootNotSingular,
  objectInitial: REASON.objectMissName,
  memberDelimiter: REASON.objectMissName,
  memberKey: REASON.objectMissColon,
  memberValue: REASON.objectMissCommaOrCurly,
  keyValueDelimiter: REASON.valueInvalid,
  arrayInitial: REASON.valueInvalid,
  elementDelimiter: REASON.valueInvalid,
  element: REASON.arrayMissCommaOrSquare,
};

/** Thrown inside the scan: the first error ends it, as in rapidjson. */
class Found {
  constructor(
    readonly reason: string,
    readonly offset: number,
  ) {}
}

const ESCAPES = new Set([0x22, 0x2f, 0x5c, 0x62, 0x66, 0x6e, 0x72, 0x74]); // " / \ b f n r t
const isDigit = (c: number) => c >= 0x30 && c <= 0x39;

/** rapidjson's first error in the text, or undefined when it would read it whole. */
function firstError(bytes: Uint8Array): Found | undefined {
  try {
    new Scan(bytes).document();
    return undefined;
  } catch (err) {
    if (err instanceof Found) return err;
    throw err;
  }
}

/** `"<reason> at <offset>"` for text JSON.parse refused, or undefined when rapidjson would read it. */
export function jsonSyntaxError(bytes: Uint8Array): string | undefined {
  const found = firstError(bytes);
  return found && `${found.reason} at ${found.offset}`;
}

/**
 * The byte offset of the number literal a double cannot hold, where rapidjson stops at it, or -1:
 * for text JSON.parse read, taking such a literal as ±Infinity.
 */
export function overflowOffset(bytes: Uint8Array): number {
  const found = firstError(bytes);
  return found?.reason === REASON.numberTooBig ? found.offset : -1;
}

class Scan {
  private pos = 0;
  private readonly stack: State[] = [];

  constructor(private readonly b: Uint8Array) {}

  // rapidjson reads a NUL byte as the end of the text.
  private peek(): number {
    return this.pos < this.b.length ? (this.b[this.pos] as number) : 0;
  }

  private consume(c: number): boolean {
    if (this.peek() !== c) return false;
    this.pos++;
    return true;
  }

  private skipWhitespace(): void {
    for (let c = this.peek(); c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09; c = this.peek()) this.pos++;
  }

  document(): void {
    let state: State = 'start';
    this.skipWhitespace();
    while (this.peek() !== 0) {
      state = this.step(state, this.peek());
      this.skipWhitespace();
    }
    if (state !== 'finish') throw new Found(STUCK[state], this.pos);
  }

  /** One move of rapidjson's iterative reader: its Predict and Transit for the token at `pos`. */
  private step(state: State, c: number): State {
    // Strings, literals and numbers all start with a byte that is not structural.
    const value = !isStructural(c);
    const stuck = () => new Found(STUCK[state], this.pos);
    switch (state) {
      case 'finish':
        throw stuck();
      case 'start':
      case 'keyValueDelimiter':
      case 'arrayInitial':
      case 'elementDelimiter': {
        const within: State = state === 'start' ? 'start' : state === 'keyValueDelimiter' ? 'memberValue' : 'element';
        if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
          this.stack.push(within);
          this.pos++;
          return c === 0x5b ? 'arrayInitial' : 'objectInitial';
        }
        if (c === 0x5d /* ] */ && (state === 'arrayInitial' || state === 'elementDelimiter')) {
          // A trailing comma: rapidjson reports the value it expected.
          if (state === 'elementDelimiter') throw new Found(REASON.valueInvalid, this.pos);
          return this.close();
        }
        if (!value) throw stuck();
        this.value();
        return within === 'start' ? 'finish' : within;
      }
      case 'objectInitial':
      case 'memberDelimiter':
        if (c === 0x7d /* } */) {
          if (state === 'memberDelimiter') throw new Found(REASON.objectMissName, this.pos);
          return this.close();
        }
        if (c !== 0x22) throw stuck();
        this.string();
        return 'memberKey';
      case 'memberKey':
        if (c !== 0x3a /* : */) throw stuck();
        this.pos++;
        return 'keyValueDelimiter';
      case 'memberValue':
        if (c === 0x7d) return this.close();
        if (c !== 0x2c /* , */) throw stuck();
        this.pos++;
        return 'memberDelimiter';
      case 'element':
        if (c === 0x5d) return this.close();
        if (c !== 0x2c) throw stuck();
        this.pos++;
        return 'elementDelimiter';
    }
  }

  /** `]` or `}`: back to the state around the container. */
  private close(): State {
    this.pos++;
    const outer = this.stack.pop() ?? 'start';
    return outer === 'start' ? 'finish' : outer;
  }

  private value(): void {
    const c = this.peek();
    if (c === 0x6e) this.literal('null');
    else if (c === 0x74) this.literal('true');
    else if (c === 0x66) this.literal('false');
    else if (c === 0x22) this.string();
    else this.number();
  }

  private literal(word: string): void {
    this.pos++;
    for (let i = 1; i < word.length; i++) {
      if (!this.consume(word.charCodeAt(i))) throw new Found(REASON.valueInvalid, this.pos);
    }
  }

  private string(): void {
    this.pos++;
    for (;;) {
      const c = this.peek();
      if (c === 0x5c /* \ */) {
        const escapeAt = this.pos;
        this.pos++;
        const e = this.peek();
        if (ESCAPES.has(e)) {
          this.pos++;
        } else if (e === 0x75 /* u */) {
          this.pos++;
          const unit = this.hex4(escapeAt);
          if (unit >= 0xd800 && unit <= 0xdbff) {
            if (!this.consume(0x5c) || !this.consume(0x75)) throw new Found(REASON.surrogateInvalid, escapeAt);
            const low = this.hex4(escapeAt);
            if (low < 0xdc00 || low > 0xdfff) throw new Found(REASON.surrogateInvalid, escapeAt);
          } else if (unit >= 0xdc00 && unit <= 0xdfff) {
            throw new Found(REASON.surrogateInvalid, escapeAt);
          }
        } else {
          throw new Found(REASON.escapeInvalid, escapeAt);
        }
      } else if (c === 0x22) {
        this.pos++;
        return;
      } else if (c < 0x20) {
        throw new Found(c === 0 ? REASON.missQuotationMark : REASON.invalidEncoding, this.pos);
      } else {
        this.pos++;
      }
    }
  }

  private hex4(escapeAt: number): number {
    let unit = 0;
    for (let i = 0; i < 4; i++) {
      const d = Number.parseInt(String.fromCharCode(this.peek()), 16);
      if (Number.isNaN(d)) throw new Found(REASON.unicodeEscapeInvalidHex, escapeAt);
      unit = unit * 16 + d;
      this.pos++;
    }
    return unit;
  }

  private number(): void {
    const start = this.pos;
    this.consume(0x2d); // -
    const c = this.peek();
    if (c === 0x30) {
      this.pos++;
    } else if (c >= 0x31 && c <= 0x39) {
      while (isDigit(this.peek())) this.pos++;
    } else if (c === 0x4e /* N */ || c === 0x49 /* I */) {
      // NaN, Inf and Infinity (Triton reads them, as Python's json.dumps writes them).
      let ok: boolean;
      if (this.consume(0x4e)) ok = this.consume(0x61) && this.consume(0x4e);
      else {
        this.pos++;
        ok = this.consume(0x6e) && this.consume(0x66);
        if (ok && this.peek() === 0x69 && ![0x69, 0x6e, 0x69, 0x74, 0x79].every((ch) => this.consume(ch)))
          throw new Found(REASON.valueInvalid, this.pos);
      }
      if (!ok) throw new Found(REASON.valueInvalid, this.pos);
      return;
    } else {
      throw new Found(REASON.valueInvalid, this.pos);
    }
    if (this.consume(0x2e /* . */)) {
      if (!isDigit(this.peek())) throw new Found(REASON.numberMissFraction, this.pos);
      while (isDigit(this.peek())) this.pos++;
    }
    if (this.consume(0x65) || this.consume(0x45) /* e E */) {
      if (!this.consume(0x2b)) this.consume(0x2d); // + -
      if (!isDigit(this.peek())) throw new Found(REASON.numberMissExponent, this.pos);
      while (isDigit(this.peek())) this.pos++;
    }
    const literal = Buffer.from(this.b.buffer, this.b.byteOffset + start, this.pos - start).toString('latin1');
    if (!Number.isFinite(Number(literal))) throw new Found(REASON.numberTooBig, start);
  }
}

/** The bytes rapidjson's tokenizer gives a token of their own besides values' first bytes. */
function isStructural(c: number): boolean {
  return c === 0x5b || c === 0x5d || c === 0x7b || c === 0x7d || c === 0x2c || c === 0x3a;
}

/** The 400 for text JSON.parse refused: rapidjson's reason and offset, or JSON.parse's where rapidjson would read it. */
export function badJson(bytes: Uint8Array, err: unknown): MeshError {
  return new MeshError('BAD_JSON', MSG.badJson(jsonSyntaxError(bytes) ?? (err as Error).message));
}

/** A request body that must be plain JSON (repository, trace and logging requests). */
export function parseJsonBody(body: Uint8Array): unknown {
  try {
    return JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8'));
  } catch (err) {
    throw badJson(body, err);
  }
}
