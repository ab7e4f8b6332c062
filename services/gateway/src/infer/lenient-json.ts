import { MeshError } from '@ge-mesh/protocol';
import { overflowOffset } from './json-syntax-error.js';
import { MSG } from './messages.js';

/**
 * JSON as Triton's parser reads it: JSON.parse, plus the bare `NaN`,
 * `Infinity` and `-Infinity` tokens that rapidjson accepts with
 * kParseNanAndInfFlag (and Python's json.dumps writes for float tensors),
 * minus the number literals too large for a double, which rapidjson refuses
 * and JSON.parse reads as ±Infinity. The common case costs one JSON.parse; the
 * rewrite and the scan for such literals run only when that fails and a token
 * is present, or when a reader met a non-finite number.
 */

/** What a bare `NaN` token becomes; float tensors and parameters read it as NaN. */
const NAN_SENTINEL = '\u0000NaN';
const NAN_SENTINEL_JSON = JSON.stringify(NAN_SENTINEL);

/**
 * What a document's non-finite numbers mean:
 * - `text`: plain JSON text, which has no NaN or Infinity: a non-finite number
 *   is a literal too large for a double, and the reader throws `NumberTooBig`;
 * - `text-tokens`: JSON text with bare tokens: the non-finite numbers and
 *   `NAN_SENTINEL` are theirs;
 * - `decoded`: a decoded msgpack map, whose doubles are what was sent.
 */
export type NumberSource = 'text' | 'text-tokens' | 'decoded';

/** Whether `v` is a bare `NaN` token; without tokens, the same characters are a client's string. */
export function isNanToken(v: unknown, numbers: NumberSource): boolean {
  return v === NAN_SENTINEL && numbers === 'text-tokens';
}

export interface LenientJson {
  readonly value: unknown;
  readonly numbers: Exclude<NumberSource, 'decoded'>;
}

/** rapidjson's kParseErrorNumberTooBig, at the literal's byte offset when it is known. */
export class NumberTooBig extends MeshError {
  constructor(offset?: number) {
    super('BAD_JSON', MSG.badJson(MSG.numberTooBig(offset)));
  }
}

/** Throws JSON.parse's SyntaxError for text that is not JSON, `NumberTooBig` beside tokens. */
export function parseLenientJson(text: string): LenientJson {
  try {
    return { value: JSON.parse(text), numbers: 'text' };
  } catch (err) {
    if (!/NaN|Infinity/.test(text)) throw err;
    const rewritten = rewriteNonFinite(text);
    if (rewritten === text) throw err;
    let value: unknown;
    try {
      value = JSON.parse(rewritten);
    } catch {
      throw err;
    }
    // Here an Infinity may be a token, so a literal's overflow is found in the text.
    const at = overflowOffset(Buffer.from(text, 'utf8'));
    if (at >= 0) throw new NumberTooBig(at);
    return { value, numbers: 'text-tokens' };
  }
}

// Replaces the tokens outside strings: Infinity → 1e999 (JSON.parse gives
// ±Infinity for it exactly), NaN → a sentinel string.
function rewriteNonFinite(text: string): string {
  const parts: string[] = [];
  let from = 0;
  eachOutsideStrings(text, (i, c) => {
    if (c === 0x4e /* N */ && text.startsWith('NaN', i)) {
      parts.push(text.slice(from, i), NAN_SENTINEL_JSON);
      from = i + 3;
      return from;
    }
    if (c === 0x49 /* I */ && text.startsWith('Infinity', i)) {
      parts.push(text.slice(from, i), '1e999');
      from = i + 8;
      return from;
    }
    return i + 1;
  });
  if (parts.length === 0) return text;
  parts.push(text.slice(from));
  return parts.join('');
}

/** Calls `visit` at each character outside JSON strings; it returns the index to go on from. */
function eachOutsideStrings(text: string, visit: (i: number, c: number) => number): void {
  let i = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c !== 0x22 /* " */) {
      i = visit(i, c);
      continue;
    }
    // Past the string, its escapes included.
    for (i++; i < text.length; i++) {
      const s = text.charCodeAt(i);
      if (s === 0x5c /* \ */) i++;
      else if (s === 0x22) break;
    }
    i++;
  }
}
