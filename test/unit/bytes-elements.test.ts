import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { topology } from '@ge-mesh/broker';
import { bytesOf, stringsOf, tensor } from '@ge-mesh/client';
import { checkBytesLayout, decodeBytesElements, packBytesElements, splitBytesElements } from '@ge-mesh/protocol';

/** The layout written out by hand: u32 LE length, then the bytes, per element. */
function reference(elements: readonly number[][]): Buffer {
  const parts: number[] = [];
  for (const e of elements)
    parts.push(e.length & 0xff, (e.length >> 8) & 0xff, (e.length >> 16) & 0xff, e.length >>> 24, ...e);
  return Buffer.from(parts);
}

describe('BYTES elements', () => {
  it('packs strings as UTF-8 and byte arrays as they are, each after its length', () => {
    // 'é' is two bytes and '€' three in UTF-8: the length counts bytes, not characters.
    const packed = packBytesElements(['a', '', 'é€', Uint8Array.from([0, 255, 7])]);
    assert.deepEqual(packed, reference([[0x61], [], [0xc3, 0xa9, 0xe2, 0x82, 0xac], [0, 255, 7]]));
  });

  it('packs nothing into an empty buffer, and an element of 300 bytes with a two-byte length', () => {
    assert.equal(packBytesElements([]).length, 0);
    const long = new Uint8Array(300).fill(9);
    assert.deepEqual(packBytesElements([long]), reference([Array.from(long)]));
  });

  it('writes a lone surrogate as U+FFFD, its length the three bytes written', () => {
    assert.deepEqual(packBytesElements(['\ud800']), reference([[0xef, 0xbf, 0xbd]]));
  });

  it('splits what it packed into views of the same bytes, and leaves out a truncated last element', () => {
    const packed = packBytesElements(['xy', Uint8Array.from([1, 2, 3])]);
    const parts = splitBytesElements(packed);
    assert.deepEqual(
      parts.map((p) => Array.from(p)),
      [
        [0x78, 0x79],
        [1, 2, 3],
      ],
    );
    assert.equal(parts[1]?.buffer, packed.buffer);
    assert.deepEqual(
      splitBytesElements(packed.subarray(0, packed.length - 1)).map((p) => Array.from(p)),
      [[0x78, 0x79]],
    );
  });

  it('what is packed passes the layout check and decodes to the same strings', () => {
    const strings = ['first', 'zweite', 'третий'];
    const packed = packBytesElements(strings);
    assert.equal(checkBytesLayout(packed, 3), null);
    assert.deepEqual(checkBytesLayout(packed, 2), { kind: 'too-many', checked: 3 });
    assert.deepEqual(decodeBytesElements(packed, 3), strings);
  });

  it("the AMQP client's BYTES tensor and its reader use the same layout", () => {
    const t = tensor('text', 'BYTES', [2], ['hello', 'wörld']);
    assert.deepEqual(Buffer.from(t.data), reference([[...Buffer.from('hello')], [...Buffer.from('wörld')]]));
    const out = { name: 'text', datatype: 'BYTES' as const, shape: [2], data: t.data };
    assert.deepEqual(stringsOf(out), ['hello', 'wörld']);
    assert.equal(bytesOf(out).length, 2);
  });
});

describe('broker names', () => {
  it('the topology carries the public ingress names of the AMQP contract', () => {
    assert.deepEqual(topology('gemesh').ingress, { exchange: 'gemesh.infer', queue: 'gemesh.infer.requests' });
    assert.deepEqual(topology('ns', 'durable').ingress, { exchange: 'ns.infer', queue: 'ns.infer.requests' });
  });
});
