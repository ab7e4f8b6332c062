import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decode, encode, encodeOwned, tensorBytes, withEncoded } from '@ge-mesh/protocol';

/** Large messages get buffers of their own size; small ones share msgpackr's; all round-trip. */
describe('message encoding', () => {
  const big = (seed: number, bytes: number) => {
    const data = new Uint8Array(bytes);
    for (let i = 0; i < bytes; i++) data[i] = (i * 31 + seed) & 0xff;
    return { id: `r${seed}`, inputs: [{ name: 'input', datatype: 'FP32', shape: [1, bytes / 4], data }] };
  };

  it('a large message is encoded into a buffer sized to it, and decodes to the same bytes', () => {
    const msg = big(1, 602_112);
    const b = encode(msg, tensorBytes(msg.inputs));
    assert.ok(b.buffer.byteLength < 602_112 + 32 * 1024, `buffer of ${b.buffer.byteLength} bytes`);
    const back = decode<typeof msg>(b);
    assert.equal(back.id, 'r1');
    assert.deepEqual(Buffer.from(back.inputs[0]?.data ?? []), Buffer.from(msg.inputs[0]?.data ?? []));
  });

  it('encodes after a large one neither reuse nor overwrite its buffer', () => {
    const m1 = big(2, 200_000);
    const b1 = encode(m1, tensorBytes(m1.inputs));
    const copy = Buffer.from(b1);
    const small = encode({ id: 'x', n: 1 });
    const m2 = big(3, 200_000);
    const b2 = encode(m2, tensorBytes(m2.inputs));
    assert.notEqual(small.buffer, b1.buffer);
    assert.notEqual(b2.buffer, b1.buffer);
    assert.deepEqual(b1, copy, 'the first message is intact');
    assert.deepEqual(decode(small), { id: 'x', n: 1 });
  });

  it('a hint below the real size still encodes correctly (the buffer grows)', () => {
    const msg = big(4, 300_000);
    const b = encode(msg, 70_000);
    assert.deepEqual(Buffer.from(decode<typeof msg>(b).inputs[0]?.data ?? []), Buffer.from(msg.inputs[0]?.data ?? []));
  });

  it('encodeOwned gives bytes that can be transferred without detaching a shared buffer', () => {
    for (const bytes of [64, 100_000]) {
      const msg = big(5, bytes);
      const shared = encode({ keep: 'me' });
      const owned = encodeOwned(msg, tensorBytes(msg.inputs));
      assert.notEqual(owned.buffer, shared.buffer);
      structuredClone(owned, { transfer: [owned.buffer as ArrayBuffer] });
      assert.deepEqual(decode(shared), { keep: 'me' }, `after transferring ${bytes} bytes`);
    }
  });

  it('withEncoded packs large messages into one buffer kept between calls, and hands each its own bytes', () => {
    const m1 = big(6, 602_112);
    const m2 = big(7, 602_112);
    const seen: Array<{ buffer: ArrayBufferLike; copy: Buffer }> = [];
    for (const m of [m1, m2]) {
      const r = withEncoded(m, tensorBytes(m.inputs), (b) => {
        seen.push({ buffer: b.buffer, copy: Buffer.from(b) });
        return b.byteLength;
      });
      assert.equal(r, seen.at(-1)?.copy.byteLength, "use's result is returned");
    }
    assert.equal(seen[0]?.buffer, seen[1]?.buffer, "the second message reused the first one's buffer");
    assert.deepEqual(
      Buffer.from(decode<typeof m1>(seen[0]?.copy ?? Buffer.alloc(0)).inputs[0]?.data ?? []),
      Buffer.from(m1.inputs[0]?.data ?? []),
    );
    assert.deepEqual(
      Buffer.from(decode<typeof m2>(seen[1]?.copy ?? Buffer.alloc(0)).inputs[0]?.data ?? []),
      Buffer.from(m2.inputs[0]?.data ?? []),
    );
  });

  it('withEncoded inside withEncoded packs into another buffer: the outer bytes stay intact', () => {
    const outer = big(8, 300_000);
    const inner = big(9, 300_000);
    withEncoded(outer, tensorBytes(outer.inputs), (a) => {
      const before = Buffer.from(a);
      withEncoded(inner, tensorBytes(inner.inputs), (b) => {
        assert.notEqual(b.buffer, a.buffer);
        assert.equal(decode<typeof inner>(b).id, 'r9');
      });
      assert.deepEqual(a, before);
    });
  });

  it('withEncoded encodes a small message as encode does, and a small one after a large one intact', () => {
    const big1 = big(10, 100_000);
    const small = withEncoded({ id: 's', n: 2 }, 0, (b) => decode(b));
    assert.deepEqual(small, { id: 's', n: 2 });
    let kept: Buffer | undefined;
    withEncoded(big1, tensorBytes(big1.inputs), () => {
      kept = encode({ id: 'after', n: 3 });
    });
    withEncoded(big1, tensorBytes(big1.inputs), () => undefined);
    assert.deepEqual(
      decode(kept ?? Buffer.alloc(0)),
      { id: 'after', n: 3 },
      'not overwritten by the next large message',
    );
  });
});
