/**
 * JSON.parse, plus the bare `NaN`, `Infinity` and `-Infinity` tokens that
 * Triton's parser accepts (rapidjson kParseNanAndInfFlag) and Python's
 * json.dumps writes for float tensors. The common case costs one JSON.parse;
 * the rewrite runs only when that fails and such a token is present.
 */

/** What a bare `NaN` token becomes; float tensors read it as NaN. */
export const NAN_SENTINEL = '\u0000NaN';

export function parseLenientJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    if (!/NaN|Infinity/.test(text)) throw err;
    const rewritten = rewriteNonFinite(text);
    if (rewritten === text) throw err;
    try {
      return JSON.parse(rewritten);
    } catch {
      throw err;
    }
  }
}

// Replaces the tokens outside strings: Infinity → 1e999 (JSON.parse gives
// ±Infinity for it exactly), NaN → a sentinel string.
function rewriteNonFinite(text: string): string {
  const parts: string[] = [];
  let from = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
      continue;
    }
    if (c === 0x22) {
      inString = true;
    } else if (c === 0x4e /* N */ && text.startsWith('NaN', i)) {
      parts.push(text.slice(from, i), '"\\u0000NaN"');
      i += 2;
      from = i + 1;
    } else if (c === 0x49 /* I */ && text.startsWith('Infinity', i)) {
      parts.push(text.slice(from, i), '1e999');
      i += 7;
      from = i + 1;
    }
  }
  if (parts.length === 0) return text;
  parts.push(text.slice(from));
  return parts.join('');
}
