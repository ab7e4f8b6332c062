import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MeshError } from '@ge-mesh/protocol';
import { parseInferBody } from '../../services/gateway/src/infer/index.js';
import { jsonSyntaxError } from '../../services/gateway/src/infer/json-syntax-error.js';

/**
 * Malformed JSON described as Triton's parser describes it: rapidjson's
 * iterative reader (TritonJson::Parse: kParseIterativeFlag | kParseNanAndInfFlag),
 * its reason and the byte offset where it stopped. Each expectation follows
 * that reader's states by hand (reader.h: Predict, Transit, HandleError).
 */
const at = (text: string) => jsonSyntaxError(Buffer.from(text, 'utf8'));

describe("malformed JSON in rapidjson's words", () => {
  it('empty documents and stray tokens at the root', () => {
    assert.equal(at(''), 'The document is empty. at 0');
    assert.equal(at('  \n\t'), 'The document is empty. at 4');
    assert.equal(at(']'), 'The document is empty. at 0');
    assert.equal(at('abc'), 'Invalid value. at 0');
    assert.equal(at('{"a":1} x'), 'The document root must not be followed by other values. at 8');
    assert.equal(at('01'), 'The document root must not be followed by other values. at 1');
  });

  it('objects', () => {
    assert.equal(at('{'), 'Missing a name for object member. at 1');
    assert.equal(at('{a:1}'), 'Missing a name for object member. at 1');
    assert.equal(at('{"a" 1}'), 'Missing a colon after a name of object member. at 5');
    assert.equal(at('{"a":1 "b":2}'), "Missing a comma or '}' after an object member. at 7");
    assert.equal(at('{"a":1,}'), 'Missing a name for object member. at 7');
    assert.equal(at('{"a":}'), 'Invalid value. at 5');
    assert.equal(at('{"a":1'), "Missing a comma or '}' after an object member. at 6");
  });

  it('arrays', () => {
    assert.equal(at('[1 2]'), "Missing a comma or ']' after an array element. at 3");
    assert.equal(at('[1,]'), 'Invalid value. at 3');
    assert.equal(at('[,1]'), 'Invalid value. at 1');
    assert.equal(at('{"a":[1,2'), "Missing a comma or ']' after an array element. at 9");
    assert.equal(at('[[1],{"b":[true,nul]}]'), 'Invalid value. at 19');
  });

  it('numbers, NaN and Infinity as Triton reads them', () => {
    assert.equal(at('[1.]'), 'Miss fraction part in number. at 3');
    assert.equal(at('[1e]'), 'Miss exponent in number. at 3');
    assert.equal(at('[1e+]'), 'Miss exponent in number. at 4');
    assert.equal(at('[-]'), 'Invalid value. at 2');
    assert.equal(at('[+1]'), 'Invalid value. at 1');
    assert.equal(at('[.5]'), 'Invalid value. at 1');
    assert.equal(at('[Nan]'), 'Invalid value. at 3');
    assert.equal(at('[Infinit]'), 'Invalid value. at 8');
    // rapidjson reads these, JSON.parse does not: no error of rapidjson's to report.
    assert.equal(at('[NaN, -Infinity, Inf]'), undefined);
    // The first error wins: an overflowed literal before a syntax error, at the literal's start.
    assert.equal(at('{"x": [1, 1e400, ]}'), 'Number too big to be stored in double. at 10');
  });

  it('strings, at the escape that failed and in bytes, not characters', () => {
    assert.equal(at('["ab'), 'Missing a closing quotation mark in string. at 4');
    assert.equal(at('["a\\qb"]'), 'Invalid escape character in string. at 3');
    assert.equal(at('["a\\u12G4"]'), 'Incorrect hex digit after \\u escape in string. at 3');
    assert.equal(at('["\\ud800x"]'), 'The surrogate pair in string is invalid. at 2');
    assert.equal(at('["\\udc00"]'), 'The surrogate pair in string is invalid. at 2');
    assert.equal(at('["a\tb"]'), 'Invalid encoding in string. at 3');
    // "é" and "雪" are 2 and 3 bytes in UTF-8: the offset counts bytes, as rapidjson's does.
    assert.equal(at('{"é雪": x}'), 'Invalid value. at 10');
  });

  it('valid JSON has nothing to report', () => {
    for (const ok of ['{}', '[]', '{"a":[1,-2.5e-3,true,false,null,"\\u00e9\\ud83d\\ude00"]}', ' 0 ']) {
      assert.equal(at(ok), undefined, ok);
    }
  });

  it('an inference request with malformed JSON gets the reason and offset in its 400', () => {
    const body = Buffer.from('{"inputs":[{"name":"x","shape":[1,2] "datatype":"FP32"}]}');
    assert.throws(
      () => parseInferBody(body),
      (err: unknown) =>
        err instanceof MeshError &&
        err.code === 'BAD_JSON' &&
        err.status === 400 &&
        err.message === "failed to parse the request JSON buffer: Missing a comma or '}' after an object member. at 37",
    );
  });
});
