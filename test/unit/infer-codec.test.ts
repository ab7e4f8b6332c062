import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { TensorConfig } from '@ge-mesh/model-repository';
import { createPrng } from '@ge-mesh/onnx/prng';
import { type DataType, ERRORS, type ErrorCode, MeshError, type WireTensor } from '@ge-mesh/protocol';
import {
  encodeInferResponse,
  formatCFixed6,
  formatJsonDouble,
  parseInferBody,
  type RequestedOutput,
  validateInfer,
} from '../../services/gateway/src/infer/index.js';
import { modelConfig, tensorConfig } from '../support/model-config-fixtures.js';
import { errorBody, errorStatus } from '../support/triton-error-body.js';

// ---------- helpers ----------

const json = (obj: unknown) => Buffer.from(JSON.stringify(obj), 'utf8');

/** JSON header + blobs, as a tritonclient sends them. */
function withBlobs(header: unknown, blobs: Uint8Array[]): { body: Buffer; headerLength: number } {
  const head = json(header);
  return { body: Buffer.concat([head, ...blobs]), headerLength: head.length };
}

function bytesOf(data: Uint8Array): Buffer {
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

function throwsMesh(fn: () => unknown, code: ErrorCode, message: string | RegExp): void {
  let err: unknown;
  try {
    fn();
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof MeshError, `expected a MeshError, got ${String(err)}`);
  assert.equal(err.code, code, err.message);
  if (typeof message === 'string') assert.equal(err.message, message);
  else assert.match(err.message, message);
  assert.equal(err.status, ERRORS[code].status);
}

/** The little-endian bytes of `values`, built with typed arrays / Buffer only. */
function refBytes(dt: DataType, values: readonly unknown[]): Buffer {
  const nums = values as number[];
  switch (dt) {
    case 'BOOL':
      return Buffer.from(values.map((v) => (v ? 1 : 0)));
    case 'UINT8':
      return Buffer.from(Uint8Array.from(nums).buffer);
    case 'INT8':
      return Buffer.from(Int8Array.from(nums).buffer);
    case 'UINT16':
      return Buffer.from(Uint16Array.from(nums).buffer);
    case 'INT16':
      return Buffer.from(Int16Array.from(nums).buffer);
    case 'UINT32':
      return Buffer.from(Uint32Array.from(nums).buffer);
    case 'INT32':
      return Buffer.from(Int32Array.from(nums).buffer);
    case 'UINT64':
      return Buffer.from(BigUint64Array.from(values.map((v) => BigInt(v as number | bigint))).buffer);
    case 'INT64':
      return Buffer.from(BigInt64Array.from(values.map((v) => BigInt(v as number | bigint))).buffer);
    case 'FP32':
      return Buffer.from(Float32Array.from(nums).buffer);
    case 'FP64':
      return Buffer.from(Float64Array.from(nums).buffer);
    case 'FP16':
    case 'BF16':
      // Raw 16-bit patterns.
      return Buffer.from(Uint16Array.from(nums).buffer);
    case 'BYTES':
      return Buffer.concat(
        values.flatMap((s) => {
          const b = Buffer.from(s as string, 'utf8');
          const len = Buffer.alloc(4);
          len.writeUInt32LE(b.length, 0);
          return [len, b];
        }),
      );
  }
}

/** Row-major nesting of a flat list into `shape`. */
function nest(values: readonly unknown[], shape: readonly number[]): unknown[] {
  if (shape.length <= 1) return [...values];
  const [, ...rest] = shape;
  const inner = rest.reduce((a, b) => a * b, 1);
  const out: unknown[] = [];
  for (let i = 0; i < (shape[0] as number); i++) out.push(nest(values.slice(i * inner, (i + 1) * inner), rest));
  return out;
}

interface DecodedOutput {
  name: string;
  datatype: string;
  shape: number[];
  data?: unknown[];
  blob?: Buffer;
}

/** Splits a response into its JSON and the blobs of its binary outputs. */
function decodeResponse(r: { body: Buffer; headerLength?: number }): {
  head: Record<string, unknown>;
  outputs: DecodedOutput[];
} {
  const headLen = r.headerLength ?? r.body.length;
  const head = JSON.parse(r.body.subarray(0, headLen).toString('utf8')) as Record<string, unknown>;
  let at = headLen;
  const outputs = (head.outputs as Record<string, unknown>[]).map((o) => {
    const out: DecodedOutput = { name: o.name as string, datatype: o.datatype as string, shape: o.shape as number[] };
    const size = (o.parameters as { binary_data_size?: number } | undefined)?.binary_data_size;
    if (size !== undefined) {
      out.blob = r.body.subarray(at, at + size);
      at += size;
    } else {
      out.data = o.data as unknown[];
    }
    return out;
  });
  assert.equal(at, r.body.length, 'every blob byte belongs to an output');
  return { head, outputs };
}

// Six values per datatype, at the edges of each range.
const SAMPLES: Record<Exclude<DataType, 'FP16' | 'BF16'>, unknown[]> = {
  BOOL: [true, false, true, true, false, false],
  UINT8: [0, 1, 127, 128, 254, 255],
  INT8: [-128, -1, 0, 1, 126, 127],
  UINT16: [0, 1, 256, 32768, 65534, 65535],
  INT16: [-32768, -1, 0, 1, 300, 32767],
  UINT32: [0, 1, 65536, 2147483648, 4294967294, 4294967295],
  INT32: [-2147483648, -1, 0, 1, 65536, 2147483647],
  UINT64: [0, 1, 4294967295, 4294967296, 2 ** 52 + 3, Number.MAX_SAFE_INTEGER],
  INT64: [-Number.MAX_SAFE_INTEGER, -4294967296, -1, 0, 4294967297, Number.MAX_SAFE_INTEGER],
  FP32: [0, -1e-3, 1.5, -2.25, 3.4028234663852886e38, 0.1],
  FP64: [0, -123.456, 0.1, -1e308, 5e-324, Math.PI],
  BYTES: ['', 'a', 'héllo', '日本', '\u0000x', 'emoji 😀'],
};
const JSON_TYPES = Object.keys(SAMPLES) as (keyof typeof SAMPLES)[];

// ---------- request body: JSON data ----------

describe('parseInferBody: JSON data', () => {
  for (const dt of JSON_TYPES) {
    const values = SAMPLES[dt];
    for (const form of ['flat', 'nested'] as const) {
      it(`${dt} ${form} → exact little-endian bytes`, () => {
        const data = form === 'flat' ? values : nest(values, [2, 3]);
        const p = parseInferBody(json({ inputs: [{ name: 'x', datatype: dt, shape: [2, 3], data }] }));
        assert.equal(p.inputs.length, 1);
        const t = p.inputs[0] as WireTensor;
        assert.deepEqual([t.name, t.datatype, t.shape], ['x', dt, [2, 3]]);
        assert.deepEqual(bytesOf(t.data), refBytes(dt, values));
      });
    }
  }

  it('nesting need not follow the shape; only the element count must', () => {
    const p = parseInferBody(
      json({
        inputs: [
          {
            name: 'x',
            datatype: 'INT32',
            shape: [2, 3],
            data: [
              [1, 2],
              [3, [4, 5, 6]],
            ],
          },
        ],
      }),
    );
    assert.deepEqual(bytesOf((p.inputs[0] as WireTensor).data), refBytes('INT32', [1, 2, 3, 4, 5, 6]));
  });

  it('a 150,528-element FP32 image round-trips exactly', () => {
    const n = 3 * 224 * 224;
    const values = Array.from({ length: n }, (_, i) => Math.sin(i) * 100);
    const p = parseInferBody(
      json({ inputs: [{ name: 'img', datatype: 'FP32', shape: [1, 3, 224, 224], data: values }] }),
    );
    assert.deepEqual(bytesOf((p.inputs[0] as WireTensor).data), refBytes('FP32', values));
  });

  it('FP32 data reads bare NaN, Infinity and -Infinity (as Triton and Python clients write them)', () => {
    const body = Buffer.from(
      '{"inputs":[{"name":"x","datatype":"FP32","shape":[5],"data":[NaN, Infinity, -Infinity, 1, "NaN in a string"]}]}',
    );
    // A string stays an error; the bare tokens are numbers.
    throwsMesh(
      () => parseInferBody(body),
      'BAD_JSON',
      "Unable to parse 'data': attempt to access JSON non-number as double",
    );
    const ok = Buffer.from('{"inputs":[{"name":"x","datatype":"FP64","shape":[4],"data":[NaN,Infinity,-Infinity,2]}]}');
    const t = parseInferBody(ok).inputs[0] as WireTensor;
    assert.deepEqual(bytesOf(t.data), refBytes('FP64', [Number.NaN, Infinity, -Infinity, 2]));
  });

  it('a negative zero keeps its sign bit', () => {
    const t = parseInferBody(Buffer.from('{"inputs":[{"name":"x","datatype":"FP32","shape":[2],"data":[-0.0,-0]}]}'))
      .inputs[0] as WireTensor;
    assert.deepEqual(bytesOf(t.data), refBytes('FP32', [-0, -0]));
    assert.deepEqual(bytesOf(t.data), Buffer.from([0, 0, 0, 0x80, 0, 0, 0, 0x80]));
  });

  it('NaN and Infinity are refused for integer types', () => {
    const body = (v: string) => Buffer.from(`{"inputs":[{"name":"x","datatype":"INT32","shape":[1],"data":[${v}]}]}`);
    for (const v of ['NaN', 'Infinity', '-Infinity']) {
      throwsMesh(
        () => parseInferBody(body(v)),
        'BAD_JSON',
        "Unable to parse 'data': attempt to access JSON non-signed-integer as signed-integer",
      );
    }
  });

  describe('number literals too large for a double are refused where they stand, as rapidjson does', () => {
    const tooBig = (text: string, literal: string) =>
      `failed to parse the request JSON buffer: Number too big to be stored in double. at ${Buffer.byteLength(
        text.slice(0, text.indexOf(literal)),
      )}`;
    const dataBody = (dt: string, values: string, id = 'r') =>
      `{"id":"${id}","inputs":[{"name":"x","datatype":"${dt}","shape":[2],"data":[0.5,${values}]}]}`;

    it('in float data: whatever their form, at their byte offset', () => {
      const digits = `1${'0'.repeat(400)}`;
      for (const literal of ['1e400', '-1e400', '2e308', '1.8e308', digits, '0.01e311']) {
        for (const dt of ['FP32', 'FP64']) {
          const text = dataBody(dt, literal);
          throwsMesh(() => parseInferBody(Buffer.from(text)), 'BAD_JSON', tooBig(text, literal));
        }
      }
      // Multi-byte characters before the literal: the offset counts UTF-8 bytes.
      const text = dataBody('FP32', '1e400', 'édition→');
      throwsMesh(() => parseInferBody(Buffer.from(text)), 'BAD_JSON', tooBig(text, '1e400'));
      assert.equal(tooBig(text, '1e400').endsWith(` at ${text.indexOf('1e400') + 3}`), true);
    });

    it('the largest double and the float overflow of a finite double still read', () => {
      const t = parseInferBody(Buffer.from(dataBody('FP64', '1.7976931348623157e308'))).inputs[0] as WireTensor;
      assert.deepEqual(bytesOf(t.data), refBytes('FP64', [0.5, Number.MAX_VALUE]));
      // 1e39 is a double; as FP32 it is +Infinity, as Triton's cast makes it.
      const f = parseInferBody(Buffer.from(dataBody('FP32', '1e39'))).inputs[0] as WireTensor;
      assert.deepEqual(bytesOf(f.data), refBytes('FP32', [0.5, Infinity]));
    });

    it('beside bare NaN / Infinity tokens too', () => {
      const text = dataBody('FP32', 'NaN], "x": [Infinity, 1e999');
      throwsMesh(() => parseInferBody(Buffer.from(text)), 'BAD_JSON', tooBig(text, '1e999'));
      const ok = parseInferBody(Buffer.from(dataBody('FP32', 'Infinity'))).inputs[0] as WireTensor;
      assert.deepEqual(bytesOf(ok.data), refBytes('FP32', [0.5, Infinity]));
    });

    it('in any field, before the field is read', () => {
      const cases = [
        ['{"inputs":[{"name":"x","datatype":"INT32","shape":[1],"data":[1e999]}]}', '1e999'],
        ['{"inputs":[{"name":"x","datatype":"BOOL","shape":[1],"data":[-1e999]}]}', '-1e999'],
        ['{"inputs":[{"name":"x","datatype":"BYTES","shape":[1],"data":[1e999]}]}', '1e999'],
        ['{"inputs":[{"name":"x","datatype":"FP32","shape":[1e400],"data":[1]}]}', '1e400'],
        ['{"parameters":{"priority":1e400},"inputs":[]}', '1e400'],
        ['{"parameters":{"scale":1e400},"inputs":[]}', '1e400'],
      ] as const;
      for (const [text, literal] of cases) {
        throwsMesh(() => parseInferBody(Buffer.from(text)), 'BAD_JSON', tooBig(text, literal));
      }
      // Inside a string it is text.
      const p = parseInferBody(Buffer.from('{"parameters":{"note":"1e400"},"inputs":[]}'));
      assert.equal(p.parameters.note, '1e400');
    });
  });

  it('a bare NaN is a number in parameters and never a string; an escaped look-alike stays a string', () => {
    const p = parseInferBody(Buffer.from('{"parameters":{"scale":NaN,"top":Infinity},"inputs":[]}'));
    assert.ok(Number.isNaN(p.parameters.scale));
    assert.equal(p.parameters.top, Infinity);
    throwsMesh(
      () => parseInferBody(Buffer.from('{"inputs":[{"name":"x","datatype":"BYTES","shape":[2],"data":["a",NaN]}]}')),
      'BAD_JSON',
      'Unable to parse JSON bytes array: attempt to access JSON non-string as string',
    );
    // Without tokens, "\u0000NaN" is what the client wrote: a string.
    const lookAlike = '"\\u0000NaN"';
    const b = parseInferBody(
      Buffer.from(
        `{"parameters":{"s":${lookAlike}},"inputs":[{"name":"x","datatype":"BYTES","shape":[1],"data":[${lookAlike}]}]}`,
      ),
    );
    assert.equal(b.parameters.s, '\u0000NaN');
    assert.deepEqual(bytesOf((b.inputs[0] as WireTensor).data), refBytes('BYTES', ['\u0000NaN']));
    throwsMesh(
      () =>
        parseInferBody(Buffer.from(`{"inputs":[{"name":"x","datatype":"FP32","shape":[1],"data":[${lookAlike}]}]}`)),
      'BAD_JSON',
      "Unable to parse 'data': attempt to access JSON non-number as double",
    );
  });

  it('a NaN-looking text inside a string does not turn bad JSON into good', () => {
    throwsMesh(
      () => parseInferBody(Buffer.from('{"id":"NaN","inputs":[}')),
      'BAD_JSON',
      /^failed to parse the request JSON buffer: /,
    );
  });

  it('element count must match the shape (Triton texts)', () => {
    const body = (data: unknown[]) => json({ inputs: [{ name: 'x', datatype: 'FP32', shape: [2, 2], data }] });
    throwsMesh(
      () => parseInferBody(body([1, 2, 3, 4, 5])),
      'DATA_SIZE_MISMATCH',
      "Unable to parse 'data': Shape does not match true shape of 'data' field",
    );
    throwsMesh(
      () => parseInferBody(body([1, 2, 3])),
      'DATA_SIZE_MISMATCH',
      "Failed to parse 'data' field: shape does not match true shape",
    );
    throwsMesh(
      () => parseInferBody(json({ inputs: [{ name: 'x', datatype: 'INT64', shape: [3], data: [[1], [2, 3, 4]] }] })),
      'DATA_SIZE_MISMATCH',
      "Unable to parse 'data': Shape does not match true shape of 'data' field",
    );
  });

  it('a huge shape with little data fails on the count without allocating for the shape', () => {
    const body = json({
      inputs: [{ name: 'x', datatype: 'FP64', shape: [1_000_000_000, 1_000_000_000], data: [1, 2] }],
    });
    throwsMesh(
      () => parseInferBody(body),
      'DATA_SIZE_MISMATCH',
      "Failed to parse 'data' field: shape does not match true shape",
    );
    const tooBig = json({ inputs: [{ name: 'x', datatype: 'FP64', shape: [1e10, 1e10], data: [1] }] });
    throwsMesh(
      () => parseInferBody(tooBig),
      'INVALID_ARGUMENT',
      "invalid shape for input 'x': shape [10000000000,10000000000] causes total element count to exceed maximum size of 9223372036854775807",
    );
  });

  it('an empty tensor reads no data', () => {
    const p = parseInferBody(json({ inputs: [{ name: 'x', datatype: 'FP32', shape: [0, 3], data: 'ignored' }] }));
    assert.equal((p.inputs[0] as WireTensor).data.length, 0);
  });

  it('values of the wrong JSON type get TritonJson texts', () => {
    const one = (datatype: string, data: unknown[]) =>
      parseInferBody(json({ inputs: [{ name: 'x', datatype, shape: [data.length], data }] }));
    throwsMesh(
      () => one('FP32', [1, '2']),
      'BAD_JSON',
      "Unable to parse 'data': attempt to access JSON non-number as double",
    );
    throwsMesh(
      () => one('FP64', [true]),
      'BAD_JSON',
      "Unable to parse 'data': attempt to access JSON non-number as double",
    );
    throwsMesh(
      () => one('FP32', [{ a: 1 }]),
      'BAD_JSON',
      "Unable to parse 'data': attempt to access JSON non-number as double",
    );
    throwsMesh(
      () => one('INT32', [1.5]),
      'BAD_JSON',
      "Unable to parse 'data': attempt to access JSON non-signed-integer as signed-integer",
    );
    throwsMesh(
      () => one('INT8', ['1']),
      'BAD_JSON',
      "Unable to parse 'data': attempt to access JSON non-signed-integer as signed-integer",
    );
    throwsMesh(
      () => one('UINT8', [-1]),
      'BAD_JSON',
      "Unable to parse 'data': attempt to access JSON non-unsigned-integer as unsigned-integer",
    );
    throwsMesh(
      () => one('UINT64', [-5]),
      'BAD_JSON',
      "Unable to parse 'data': attempt to access JSON non-unsigned-integer as unsigned-integer",
    );
    throwsMesh(
      () => one('UINT32', [null]),
      'BAD_JSON',
      "Unable to parse 'data': attempt to access JSON non-unsigned-integer as unsigned-integer",
    );
    throwsMesh(
      () => one('BOOL', [1]),
      'BAD_JSON',
      "Unable to parse 'data': attempt to access JSON non-boolean as boolean",
    );
    throwsMesh(
      () => one('BYTES', ['a', 2]),
      'BAD_JSON',
      'Unable to parse JSON bytes array: attempt to access JSON non-string as string',
    );
  });

  it('integers outside the datatype are refused (Triton would truncate them)', () => {
    const one = (datatype: string, v: number) =>
      parseInferBody(json({ inputs: [{ name: 'x', datatype, shape: [1], data: [v] }] }));
    throwsMesh(
      () => one('UINT8', 256),
      'INVALID_ARGUMENT',
      "Unable to parse 'data': value 256 is out of range for UINT8 input 'x'",
    );
    throwsMesh(
      () => one('INT8', -129),
      'INVALID_ARGUMENT',
      "Unable to parse 'data': value -129 is out of range for INT8 input 'x'",
    );
    throwsMesh(
      () => one('INT16', 32768),
      'INVALID_ARGUMENT',
      "Unable to parse 'data': value 32768 is out of range for INT16 input 'x'",
    );
    throwsMesh(
      () => one('UINT16', 65536),
      'INVALID_ARGUMENT',
      "Unable to parse 'data': value 65536 is out of range for UINT16 input 'x'",
    );
    throwsMesh(
      () => one('INT32', 2147483648),
      'INVALID_ARGUMENT',
      "Unable to parse 'data': value 2147483648 is out of range for INT32 input 'x'",
    );
    throwsMesh(
      () => one('UINT32', 4294967296),
      'INVALID_ARGUMENT',
      "Unable to parse 'data': value 4294967296 is out of range for UINT32 input 'x'",
    );
  });

  it('INT64/UINT64 beyond ±(2^53-1) are refused rather than rounded', () => {
    const body = (datatype: string, v: string) =>
      Buffer.from(`{"inputs":[{"name":"x","datatype":"${datatype}","shape":[1],"data":[${v}]}]}`);
    throwsMesh(
      () => parseInferBody(body('INT64', '9007199254740993')),
      'INVALID_ARGUMENT',
      "Unable to parse 'data': value 9007199254740992 of INT64 input 'x' is beyond ±(2^53-1) and cannot be read exactly from JSON; send it as binary data",
    );
    throwsMesh(
      () => parseInferBody(body('UINT64', '18446744073709551615')),
      'INVALID_ARGUMENT',
      /UINT64 input 'x' is beyond/,
    );
    throwsMesh(
      () => parseInferBody(body('INT64', '-9007199254740992')),
      'INVALID_ARGUMENT',
      /INT64 input 'x' is beyond/,
    );
    const edge = parseInferBody(body('INT64', '-9007199254740991')).inputs[0] as WireTensor;
    assert.deepEqual(bytesOf(edge.data), refBytes('INT64', [-9007199254740991n]));
  });

  it('FP16 and BF16 cannot travel as JSON', () => {
    for (const dt of ['FP16', 'BF16']) {
      throwsMesh(
        () => parseInferBody(json({ inputs: [{ name: 'half', datatype: dt, shape: [1], data: [1] }] })),
        'INVALID_ARGUMENT',
        `receiving ${dt} data via JSON is not supported. Please use the binary data format for input half`,
      );
    }
  });

  it('nesting deeper than Triton allows is refused', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100; i++) deep = [deep];
    throwsMesh(
      () => parseInferBody(json({ inputs: [{ name: 'x', datatype: 'FP32', shape: [1], data: deep }] })),
      'BAD_JSON',
      "Unable to parse 'data': JSON nesting depth exceeds maximum allowed limit (100)",
    );
    let ok: unknown = 1;
    for (let i = 0; i < 99; i++) ok = [ok];
    const t = parseInferBody(json({ inputs: [{ name: 'x', datatype: 'FP32', shape: [1], data: ok }] })).inputs[0];
    assert.deepEqual(bytesOf((t as WireTensor).data), refBytes('FP32', [1]));
  });
});

// ---------- request body: structure, parameters, outputs ----------

describe('parseInferBody: request fields', () => {
  const x = { name: 'x', datatype: 'FP32', shape: [1], data: [1] };

  it('bad JSON and non-object bodies', () => {
    throwsMesh(
      () => parseInferBody(Buffer.from('{"inputs": [')),
      'BAD_JSON',
      /^failed to parse the request JSON buffer: .+/,
    );
    throwsMesh(() => parseInferBody(Buffer.alloc(0)), 'BAD_JSON', /^failed to parse the request JSON buffer: /);
    throwsMesh(
      () => parseInferBody(json([x])),
      'BAD_JSON',
      'failed to parse the request JSON buffer: the request is not a JSON object',
    );
  });

  it('missing or malformed fields get Triton texts', () => {
    throwsMesh(
      () => parseInferBody(json({})),
      'BAD_JSON',
      "Unable to parse 'inputs': attempt to access non-existing object member 'inputs'",
    );
    throwsMesh(
      () => parseInferBody(json({ inputs: {} })),
      'BAD_JSON',
      "Unable to parse 'inputs': attempt to access JSON non-array as array",
    );
    throwsMesh(
      () => parseInferBody(json({ id: 5, inputs: [] })),
      'BAD_JSON',
      "Unable to parse 'id': attempt to access JSON non-string as string",
    );
    const input = (o: Record<string, unknown>) => json({ inputs: [{ ...x, ...o }] });
    const { name: _n, ...noName } = x;
    throwsMesh(
      () => parseInferBody(json({ inputs: [noName] })),
      'BAD_JSON',
      "Unable to parse 'name': attempt to access non-existing object member 'name'",
    );
    throwsMesh(
      () => parseInferBody(input({ datatype: 3 })),
      'BAD_JSON',
      "Unable to parse 'datatype': attempt to access JSON non-string as string",
    );
    throwsMesh(
      () => parseInferBody(input({ shape: 1 })),
      'BAD_JSON',
      "Unable to parse 'shape': attempt to access JSON non-array as array",
    );
    throwsMesh(
      () => parseInferBody(input({ shape: [1.5] })),
      'BAD_JSON',
      "Unable to parse 'shape': attempt to access JSON non-unsigned-integer as unsigned-integer",
    );
    throwsMesh(
      () => parseInferBody(input({ data: 1 })),
      'BAD_JSON',
      "Unable to parse 'data': attempt to access JSON non-array as array",
    );
    throwsMesh(
      () => parseInferBody(input({ datatype: 'FLOAT32' })),
      'DATATYPE_MISMATCH',
      'invalid datatype for input x',
    );
  });

  it('a -1 in a request shape is refused as Triton HTTP does', () => {
    throwsMesh(
      () => parseInferBody(json({ inputs: [{ ...x, shape: [1, -1] }] })),
      'SHAPE_MISMATCH',
      "Unable to parse 'shape': attempt to access JSON non-unsigned-integer as unsigned-integer",
    );
  });

  it('an input sets exactly one of data, binary_data_size, shared_memory_region', () => {
    throwsMesh(
      () => parseInferBody(json({ inputs: [{ name: 'x', datatype: 'FP32', shape: [1] }] })),
      'INVALID_ARGUMENT',
      "Input must set only one of the following fields: 'data', 'binary_data_size' in 'parameters', 'shared_memory_region' in 'parameters'. But no field is set",
    );
    throwsMesh(
      () => parseInferBody(json({ inputs: [{ ...x, parameters: { binary_data_size: 4 } }] })),
      'INVALID_ARGUMENT',
      "Input must set only one of the following fields: 'data', 'binary_data_size' in 'parameters', 'shared_memory_region' in 'parameters'. But set 'data' 'binary_data_size'",
    );
    throwsMesh(
      () =>
        parseInferBody(
          json({ inputs: [{ name: 'x', datatype: 'FP32', shape: [1], parameters: { shared_memory_region: 'r' } }] }),
        ),
      'UNSUPPORTED',
      "shared memory is not supported; send input 'x' as JSON data or binary data",
    );
  });

  it('duplicate inputs and outputs carry the request-id prefix only when there is an id', () => {
    throwsMesh(
      () => parseInferBody(json({ inputs: [x, x] })),
      'INVALID_ARGUMENT',
      "input 'x' already exists in request",
    );
    throwsMesh(
      () => parseInferBody(json({ id: 'r7', inputs: [x, x] })),
      'INVALID_ARGUMENT',
      "[request id: r7] input 'x' already exists in request",
    );
    throwsMesh(
      () => parseInferBody(json({ id: 'r7', inputs: [x], outputs: [{ name: 'y' }, { name: 'y' }] })),
      'INVALID_ARGUMENT',
      "[request id: r7] output 'y' already exists in request",
    );
  });

  it('id: echoed when non-empty, dropped when empty', () => {
    assert.equal(parseInferBody(json({ id: 'abc', inputs: [x] })).id, 'abc');
    assert.equal('id' in parseInferBody(json({ id: '', inputs: [x] })), false);
  });

  it('request parameters: reserved ones read, others kept, triton_ refused', () => {
    const p = parseInferBody(
      json({
        inputs: [x],
        parameters: {
          priority: 2,
          timeout: 1500,
          binary_data_output: true,
          sequence_id: 'seq-1',
          sequence_start: true,
          custom: 'v',
          n: 1.5,
          flag: false,
          ['__proto__']: 'kept',
        },
      }),
    );
    assert.equal(p.priority, 2);
    assert.equal(p.timeoutUs, 1500);
    assert.equal(p.binaryDataOutput, true);
    assert.deepEqual(Object.entries(p.parameters), [
      ['sequence_id', 'seq-1'],
      ['sequence_start', true],
      ['custom', 'v'],
      ['n', 1.5],
      ['flag', false],
      ['__proto__', 'kept'],
    ]);
    assert.equal(Object.getPrototypeOf(p.parameters), Object.prototype);

    const params = (parameters: unknown) => () => parseInferBody(json({ inputs: [x], parameters }));
    throwsMesh(
      params({ triton_enable_empty_final_response: true }),
      'INVALID_ARGUMENT',
      "parameter keys starting with 'triton_' are reserved for Triton usage and should not be specified.",
    );
    throwsMesh(
      params({ priority: 'high' }),
      'BAD_JSON',
      "Unable to parse 'priority': attempt to access JSON non-unsigned-integer as unsigned-integer",
    );
    throwsMesh(
      params({ priority: -1 }),
      'BAD_JSON',
      "Unable to parse 'priority': attempt to access JSON non-unsigned-integer as unsigned-integer",
    );
    throwsMesh(
      params({ timeout: 1.5 }),
      'BAD_JSON',
      "Unable to parse 'timeout': attempt to access JSON non-unsigned-integer as unsigned-integer",
    );
    throwsMesh(
      params({ binary_data_output: 1 }),
      'BAD_JSON',
      "Unable to parse 'binary_data_output': attempt to access JSON non-boolean as boolean",
    );
    throwsMesh(
      params({ sequence_end: 'yes' }),
      'BAD_JSON',
      "Unable to parse 'sequence_end': attempt to access JSON non-boolean as boolean",
    );
    throwsMesh(
      params({ sequence_id: 1.5 }),
      'BAD_JSON',
      "Unable to parse 'sequence_id': attempt to access JSON non-string as string",
    );
    throwsMesh(
      params({ extra: [1] }),
      'INVALID_ARGUMENT',
      "parameter 'extra' has invalid type. It should be either 'int', 'bool', or 'string'.",
    );
    throwsMesh(params([1]), 'BAD_JSON', 'failed to get request params.: attempt to get members for non-object');
  });

  it('outputs: binary_data and classification read, bad ones refused', () => {
    const p = parseInferBody(
      json({
        inputs: [x],
        outputs: [{ name: 'a' }, { name: 'b', parameters: { binary_data: true, classification: 3 } }],
      }),
    );
    assert.deepEqual(p.outputs, [
      { name: 'a', classification: 0 },
      { name: 'b', classification: 3, binary: true },
    ]);
    const out = (o: unknown) => () => parseInferBody(json({ inputs: [x], outputs: [o] }));
    throwsMesh(
      out({ name: 'a', parameters: { binary_data: 'yes' } }),
      'BAD_JSON',
      "Unable to parse 'binary_data': attempt to access JSON non-boolean as boolean",
    );
    throwsMesh(
      out({ name: 'a', parameters: { classification: -1 } }),
      'BAD_JSON',
      "Unable to set 'classification': attempt to access JSON non-unsigned-integer as unsigned-integer",
    );
    throwsMesh(
      out({ name: 'a', parameters: { shared_memory_region: 'r', classification: 2 } }),
      'INVALID_ARGUMENT',
      "Output can't set both 'shared_memory_region' and 'classification'",
    );
    throwsMesh(
      out({ name: 'a', parameters: { shared_memory_region: 'r', binary_data: true } }),
      'INVALID_ARGUMENT',
      "Output can't set both 'shared_memory_region' and 'binary_data'",
    );
    throwsMesh(
      out({ name: 'a', parameters: { shared_memory_region: 'r' } }),
      'UNSUPPORTED',
      /^shared memory is not supported; send output 'a'/,
    );
    throwsMesh(
      () => parseInferBody(json({ inputs: [x], outputs: {} })),
      'BAD_JSON',
      "Unable to parse 'outputs': attempt to access JSON non-array as array",
    );
  });
});

// ---------- request body: binary tensor extension ----------

describe('parseInferBody: binary tensor extension', () => {
  const fp16 = [0x3c00, 0xc000, 0x7c00, 0x0001, 0x7bff, 0x8000];
  const BINARY_VALUES: Record<DataType, unknown[]> = {
    ...SAMPLES,
    FP16: fp16,
    BF16: [0x3f80, 0xbf80, 0x7f80, 0x0001, 0x7f7f, 0x8000],
  };

  for (const dt of Object.keys(BINARY_VALUES) as DataType[]) {
    it(`${dt}: the blob is taken byte for byte`, () => {
      const blob = refBytes(dt, BINARY_VALUES[dt] as unknown[]);
      const { body, headerLength } = withBlobs(
        { inputs: [{ name: 'x', datatype: dt, shape: [2, 3], parameters: { binary_data_size: blob.length } }] },
        [blob],
      );
      const t = parseInferBody(body, headerLength).inputs[0] as WireTensor;
      assert.deepEqual(bytesOf(t.data), blob);
    });
  }

  it('INT64 beyond 2^53 travels exactly as binary', () => {
    const values = [-9223372036854775808n, 9223372036854775807n, 9007199254740993n];
    const blob = refBytes('INT64', values);
    const { body, headerLength } = withBlobs(
      { inputs: [{ name: 'x', datatype: 'INT64', shape: [3], parameters: { binary_data_size: 24 } }] },
      [blob],
    );
    const t = parseInferBody(body, headerLength).inputs[0] as WireTensor;
    assert.deepEqual(
      [...new BigInt64Array(bytesOf(t.data).buffer.slice(t.data.byteOffset, t.data.byteOffset + 24))],
      values,
    );
  });

  it('blobs follow the inputs that carry binary_data_size, in order; JSON inputs in between take none', () => {
    const a = refBytes('FP32', [1, 2]);
    const c = refBytes('INT8', [-1, 2, -3]);
    const { body, headerLength } = withBlobs(
      {
        inputs: [
          { name: 'a', datatype: 'FP32', shape: [2], parameters: { binary_data_size: 8 } },
          { name: 'b', datatype: 'INT32', shape: [1], data: [7] },
          { name: 'e', datatype: 'FP32', shape: [0], parameters: { binary_data_size: 0 } },
          { name: 'c', datatype: 'INT8', shape: [3], parameters: { binary_data_size: 3 } },
        ],
      },
      [a, c],
    );
    const p = parseInferBody(body, headerLength);
    assert.deepEqual(
      p.inputs.map((t) => [t.name, bytesOf(t.data)]),
      [
        ['a', a],
        ['b', refBytes('INT32', [7])],
        ['e', Buffer.alloc(0)],
        ['c', c],
      ],
    );
  });

  it('a truncated blob names the missing byte count', () => {
    const { body, headerLength } = withBlobs(
      { inputs: [{ name: 'x', datatype: 'FP32', shape: [3], parameters: { binary_data_size: 12 } }] },
      [Buffer.alloc(8)],
    );
    throwsMesh(
      () => parseInferBody(body, headerLength),
      'DATA_SIZE_MISMATCH',
      "unexpected size for input 'x', expecting 4 additional bytes",
    );
    throwsMesh(
      () => parseInferBody(body, headerLength, 'resnet'),
      'DATA_SIZE_MISMATCH',
      "unexpected size for input 'x', expecting 4 additional bytes for model 'resnet'",
    );
  });

  it('sizes that add up to less than the body are refused', () => {
    const { body, headerLength } = withBlobs(
      { inputs: [{ name: 'x', datatype: 'FP32', shape: [1], parameters: { binary_data_size: 4 } }] },
      [Buffer.alloc(8)],
    );
    throwsMesh(
      () => parseInferBody(body, headerLength, 'm'),
      'DATA_SIZE_MISMATCH',
      "unexpected additional input data for model 'm'",
    );
    const onlyJson = withBlobs({ inputs: [{ name: 'x', datatype: 'FP32', shape: [1], data: [1] }] }, [Buffer.alloc(3)]);
    throwsMesh(
      () => parseInferBody(onlyJson.body, onlyJson.headerLength),
      'DATA_SIZE_MISMATCH',
      'unexpected additional input data',
    );
  });

  it('a blob size that lies about the shape is caught against the model', () => {
    const { body, headerLength } = withBlobs(
      { inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 3], parameters: { binary_data_size: 8 } }] },
      [Buffer.alloc(8)],
    );
    const config = modelConfig(4, [tensorConfig('x', 'FP32', [3])], [tensorConfig('y', 'FP32', [3])]);
    throwsMesh(
      () => validateInfer(parseInferBody(body, headerLength), config),
      'DATA_SIZE_MISMATCH',
      "input byte size mismatch for input 'x' for model 'm'. Expected 12, got 8",
    );
  });

  it('header length outside the body, negative or not a number', () => {
    const body = json({ inputs: [] });
    for (const h of [body.length + 1, -1, Number.NaN, 2.5]) {
      throwsMesh(
        () => parseInferBody(body, h),
        'INVALID_ARGUMENT',
        `inference header size should be in range (0, ${body.length}), got: ${h}`,
      );
    }
  });

  it('a header length that cuts the JSON short is bad JSON', () => {
    const body = json({ inputs: [{ name: 'x', datatype: 'FP32', shape: [1], data: [1] }] });
    throwsMesh(() => parseInferBody(body, body.length - 3), 'BAD_JSON', /^failed to parse the request JSON buffer: /);
  });

  it('binary_data_size without a header length, and a malformed size', () => {
    const noHeader = json({
      inputs: [{ name: 'x', datatype: 'FP32', shape: [1], parameters: { binary_data_size: 4 } }],
    });
    throwsMesh(
      () => parseInferBody(noHeader),
      'INVALID_ARGUMENT',
      "must specify valid 'Infer-Header-Content-Length' in request header and 'binary_data_size' when passing inputs in binary data format",
    );
    const bad = withBlobs(
      { inputs: [{ name: 'x', datatype: 'FP32', shape: [1], parameters: { binary_data_size: '4' } }] },
      [Buffer.alloc(4)],
    );
    throwsMesh(
      () => parseInferBody(bad.body, bad.headerLength),
      'BAD_JSON',
      "Unable to parse 'binary_data_size': attempt to access JSON non-unsigned-integer as unsigned-integer",
    );
  });

  it('header length 0: the whole body is the raw bytes of the single input', () => {
    const raw = refBytes('FP32', [1, 2, 3]);
    const p = parseInferBody(raw, 0);
    assert.equal(p.raw, raw);
    assert.equal(p.binaryDataOutput, true);
    assert.deepEqual(p.inputs, []);
  });
});

// ---------- response ----------

describe('encodeInferResponse', () => {
  const tensor = (name: string, dt: DataType, shape: number[], values: readonly unknown[]): WireTensor => ({
    name,
    datatype: dt,
    shape,
    data: new Uint8Array(refBytes(dt, values)),
  });

  for (const dt of JSON_TYPES) {
    it(`${dt} as JSON: Triton's layout and values`, () => {
      const values = SAMPLES[dt];
      const r = encodeInferResponse(
        { model: 'm', version: '3', outputs: [tensor('y', dt, [2, 3], values)] },
        [],
        false,
      );
      assert.equal(r.contentType, 'application/json');
      assert.equal(r.headerLength, undefined);
      const { head, outputs } = decodeResponse(r);
      assert.deepEqual(Object.keys(head), ['model_name', 'model_version', 'outputs']);
      assert.equal(head.model_version, '3');
      const o = outputs[0] as DecodedOutput;
      assert.deepEqual([o.name, o.datatype, o.shape], ['y', dt, [2, 3]]);
      const expected = dt === 'FP32' ? (values as number[]).map((v) => Math.fround(v)) : values;
      assert.deepEqual(o.data, expected);
    });
  }

  it('INT64 and UINT64 are written exactly, even beyond 2^53', () => {
    const r = encodeInferResponse(
      {
        model: 'm',
        version: '1',
        outputs: [
          tensor('i', 'INT64', [3], [-9223372036854775808n, 9223372036854775807n, -1n]),
          tensor('u', 'UINT64', [2], [18446744073709551615n, 9007199254740993n]),
        ],
      },
      [],
      false,
    );
    const text = r.body.toString('utf8');
    assert.ok(text.includes('"data":[-9223372036854775808,9223372036854775807,-1]'), text);
    assert.ok(text.includes('"data":[18446744073709551615,9007199254740993]'), text);
  });

  it('doubles print as rapidjson does (".0", no "+" in exponents, NaN/Infinity tokens)', () => {
    assert.deepEqual([1, -0, 0, 1e21, 1.5e300, 1e-7, 0.5, 100, -2.5e-12].map(formatJsonDouble), [
      '1.0',
      '-0.0',
      '0.0',
      '1e21',
      '1.5e300',
      '1e-7',
      '0.5',
      '100.0',
      '-2.5e-12',
    ]);
    const r = encodeInferResponse(
      { model: 'm', version: '1', outputs: [tensor('y', 'FP32', [4], [Number.NaN, Infinity, -Infinity, 2])] },
      [],
      false,
    );
    assert.ok(r.body.toString().includes('"data":[NaN,Infinity,-Infinity,2.0]'));
  });

  it('the id is written first, and only when given; response parameters are passed', () => {
    const r = encodeInferResponse(
      { model: 'm', version: '1', id: 'req-9', parameters: { k: 'v' }, outputs: [tensor('y', 'INT32', [1], [5])] },
      [],
      false,
    );
    assert.equal(
      r.body.toString(),
      '{"id":"req-9","model_name":"m","model_version":"1","parameters":{"k":"v"},"outputs":[{"name":"y","datatype":"INT32","shape":[1],"data":[5]}]}',
    );
  });

  it('binary outputs: blobs after the JSON, sizes in parameters, header length set', () => {
    const y = tensor('y', 'FP32', [2], [1.5, -2]);
    const z = tensor('z', 'FP16', [3], [0x3c00, 0x4000, 0x7c00]);
    const w = tensor('w', 'INT32', [1], [42]);
    const requested: RequestedOutput[] = [
      { name: 'z', binary: true },
      { name: 'w', binary: false },
      { name: 'y', binary: true },
    ];
    const r = encodeInferResponse({ model: 'm', version: '1', outputs: [y, z, w] }, requested, false);
    assert.equal(r.contentType, 'application/octet-stream');
    const { outputs } = decodeResponse(r);
    assert.deepEqual(
      outputs.map((o) => [o.name, o.blob ?? o.data]),
      [
        ['z', refBytes('FP16', [0x3c00, 0x4000, 0x7c00])],
        ['w', [42]],
        ['y', refBytes('FP32', [1.5, -2])],
      ],
    );
    const head = r.body.subarray(0, r.headerLength).toString();
    assert.ok(head.includes('{"name":"z","datatype":"FP16","shape":[3],"parameters":{"binary_data_size":6}}'), head);
  });

  it('binaryByDefault applies when nothing was listed; empty binary outputs add no blob', () => {
    const all = encodeInferResponse(
      { model: 'm', version: '1', outputs: [tensor('y', 'UINT8', [2], [1, 2])] },
      [],
      true,
    );
    assert.equal(all.contentType, 'application/octet-stream');
    assert.deepEqual(decodeResponse(all).outputs[0]?.blob, Buffer.from([1, 2]));
    const empty = encodeInferResponse(
      { model: 'm', version: '1', outputs: [tensor('y', 'FP32', [0, 4], [])] },
      [],
      true,
    );
    assert.equal(empty.contentType, 'application/json');
    assert.equal(empty.headerLength, undefined);
    assert.ok(empty.body.toString().includes('"parameters":{"binary_data_size":0}'));
  });

  it('FP16/BF16 asked as JSON fail with Triton text; mismatched sizes and missing outputs are internal errors', () => {
    for (const dt of ['FP16', 'BF16'] as const) {
      throwsMesh(
        () => encodeInferResponse({ model: 'm', version: '1', outputs: [tensor('h', dt, [1], [0])] }, [], false),
        'INVALID_ARGUMENT',
        `sending ${dt} data via JSON is not supported. Please use the binary data format for output`,
      );
    }
    const short: WireTensor = { name: 'y', datatype: 'FP32', shape: [3], data: new Uint8Array(8) };
    throwsMesh(
      () => encodeInferResponse({ model: 'm', version: '1', outputs: [short] }, [], false),
      'INTERNAL',
      "Failed to write 'data' field: output tensor shape does not match size of output for 'y'",
    );
    throwsMesh(
      () => encodeInferResponse({ model: 'm', version: '1', outputs: [short] }, [], true),
      'INTERNAL',
      "output tensor shape does not match size of output for 'y'",
    );
    const badBytes: WireTensor = {
      name: 's',
      datatype: 'BYTES',
      shape: [2],
      data: new Uint8Array(refBytes('BYTES', ['a'])),
    };
    throwsMesh(
      () => encodeInferResponse({ model: 'm', version: '1', outputs: [badBytes] }, [], false),
      'INTERNAL',
      "output tensor shape does not match size of output for 's'",
    );
    throwsMesh(
      () => encodeInferResponse({ model: 'm', version: '1', outputs: [] }, [{ name: 'y', binary: false }], false),
      'INTERNAL',
      "model 'm' returned no output 'y'",
    );
  });

  it('reads tensors at unaligned offsets (as msgpack hands them over)', () => {
    // A Buffer too: its slice() is a view, so copying must not rely on it.
    for (const backing of [new Uint8Array(1 + 16), Buffer.alloc(1 + 16)]) {
      backing.set(refBytes('FP64', [0.25, -8]), 1);
      const t: WireTensor = { name: 'y', datatype: 'FP64', shape: [2], data: backing.subarray(1) };
      const { outputs } = decodeResponse(encodeInferResponse({ model: 'm', version: '1', outputs: [t] }, [], false));
      assert.deepEqual(outputs[0]?.data, [0.25, -8]);
    }
  });

  it('classification: top-K "value:index[:label]" per batch row, as BYTES', () => {
    const probs = tensor('p', 'FP32', [2, 3], [0.1, 0.7, 0.2, 0.5, 0.3, 0.9]);
    const r = encodeInferResponse(
      { model: 'm', version: '1', outputs: [probs], labels: new Map([['p', ['cat', 'dog', 'owl']]]) },
      [{ name: 'p', binary: false, classification: { count: 2, batched: true } }],
      false,
    );
    const o = decodeResponse(r).outputs[0] as DecodedOutput;
    assert.deepEqual([o.datatype, o.shape], ['BYTES', [2, 2]]);
    assert.deepEqual(o.data, ['0.700000:1:dog', '0.200000:2:owl', '0.900000:2:owl', '0.500000:0:cat']);

    const ints = tensor('c', 'INT32', [4], [3, -1, 3, 9]);
    const r2 = encodeInferResponse(
      { model: 'm', version: '1', outputs: [ints] },
      [{ name: 'c', binary: true, classification: { count: 10, batched: false } }],
      false,
    );
    const o2 = decodeResponse(r2).outputs[0] as DecodedOutput;
    assert.deepEqual(o2.shape, [4]);
    assert.deepEqual(o2.blob, refBytes('BYTES', ['9:3', '3:0', '3:2', '-1:1']));
  });

  it("classification values print as C's %f (checked against glibc)", () => {
    // Expected strings from std::to_string on glibc.
    const cases: [number, string][] = [
      [0.0078125, '0.007812'],
      [0.0234375, '0.023438'],
      [-1e-9, '-0.000000'],
      [1e20, '100000000000000000000.000000'],
      [0.1, '0.100000'],
      [-0, '-0.000000'],
      [1 / 3, '0.333333'],
      [123456.7890125, '123456.789012'],
      [5e-7, '0.000000'],
      [1.5e-6, '0.000002'],
      [0.0000025, '0.000003'],
      [-2.5e-6, '-0.000003'],
      [Math.fround(0.7), '0.700000'],
      [Infinity, 'inf'],
      [-Infinity, '-inf'],
    ];
    assert.deepEqual(
      cases.map(([v]) => formatCFixed6(v)),
      cases.map(([, s]) => s),
    );
  });
});

describe('errorBody / errorStatus', () => {
  it('writes {"error": message} and takes the status from ERRORS', () => {
    const err = new MeshError('BATCH_TOO_LARGE', "inference request batch-size must be <= 8 for 'm'");
    assert.equal(errorBody(err).toString(), '{"error":"inference request batch-size must be <= 8 for \'m\'"}');
    assert.equal(errorStatus(err), 400);
    assert.equal(errorStatus(new MeshError('QUEUE_FULL', 'Exceeds maximum queue size')), 503);
    assert.equal(errorBody(new Error('boom "x"')).toString(), '{"error":"boom \\"x\\""}');
    assert.equal(errorStatus(new Error('boom')), 500);
  });
});

// ---------- property-style round trips ----------

describe('random valid requests round-trip', () => {
  // Seeded, so failures reproduce.
  const rng = (seed: number) => createPrng(seed).next;

  const ALL: DataType[] = [...JSON_TYPES, 'FP16', 'BF16'];
  const INT_RANGE: Partial<Record<DataType, [number, number]>> = {
    UINT8: [0, 255],
    INT8: [-128, 127],
    UINT16: [0, 65535],
    INT16: [-32768, 32767],
    UINT32: [0, 4294967295],
    INT32: [-2147483648, 2147483647],
    UINT64: [0, Number.MAX_SAFE_INTEGER],
    INT64: [-Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  };

  function randomValues(r: () => number, dt: DataType, n: number): unknown[] {
    const out: unknown[] = [];
    for (let i = 0; i < n; i++) {
      const range = INT_RANGE[dt];
      if (range) out.push(range[0] + Math.floor(r() * (range[1] - range[0] + 1)));
      else if (dt === 'BOOL') out.push(r() < 0.5);
      else if (dt === 'FP32') out.push(Math.fround((r() - 0.5) * 10 ** Math.floor(r() * 20 - 10)));
      else if (dt === 'FP64') out.push((r() - 0.5) * 10 ** Math.floor(r() * 40 - 20));
      else if (dt === 'FP16' || dt === 'BF16') out.push(Math.floor(r() * 65536));
      else
        out.push(
          Array.from({ length: Math.floor(r() * 6) }, () => String.fromCodePoint(Math.floor(r() * 0x2000))).join(''),
        );
    }
    return out;
  }

  it('300 requests: parse → validate → encode keep every byte and value', () => {
    const r = rng(20240601);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;
    for (let iter = 0; iter < 300; iter++) {
      const maxBatchSize = pick([0, 8]);
      const batch = maxBatchSize > 0 ? 1 + Math.floor(r() * maxBatchSize) : 1;
      const nInputs = 1 + Math.floor(r() * 3);
      const inputs: Record<string, unknown>[] = [];
      const blobs: Buffer[] = [];
      const expected: { name: string; dt: DataType; shape: number[]; values: unknown[]; bytes: Buffer }[] = [];
      const inCfg: TensorConfig[] = [];
      const outCfg: TensorConfig[] = [];
      for (let k = 0; k < nInputs; k++) {
        const dt = pick(ALL);
        const rank = 1 + Math.floor(r() * 3);
        const dims = Array.from({ length: rank }, () => Math.floor(r() * 4));
        const cfgDims = dims.map((d) => (r() < 0.3 ? -1 : d));
        const shape = maxBatchSize > 0 ? [batch, ...dims] : dims;
        const count = shape.reduce((a, b) => a * b, 1);
        const values = randomValues(r, dt, count);
        const bytes = refBytes(dt, values);
        const name = `in${k}`;
        const form = dt === 'FP16' || dt === 'BF16' ? 'binary' : pick(['flat', 'nested', 'binary'] as const);
        if (form === 'binary') {
          inputs.push({ name, datatype: dt, shape, parameters: { binary_data_size: bytes.length } });
          blobs.push(bytes);
        } else {
          inputs.push({ name, datatype: dt, shape, data: form === 'flat' ? values : nest(values, shape) });
        }
        expected.push({ name, dt, shape, values, bytes });
        inCfg.push(tensorConfig(name, dt, cfgDims));
        outCfg.push(tensorConfig(`out${k}`, dt, cfgDims));
      }
      const listed = r() < 0.5;
      const binaryAll = r() < 0.5 || expected.some((e) => e.dt === 'FP16' || e.dt === 'BF16');
      const outBinary = expected.map((e) => e.dt === 'FP16' || e.dt === 'BF16' || r() < 0.5);
      const header: Record<string, unknown> = { id: `r${iter}`, inputs };
      if (listed) {
        header.outputs = expected
          .map((_, k) => ({ name: `out${k}`, parameters: { binary_data: outBinary[k] } }))
          .reverse();
      } else {
        header.parameters = { binary_data_output: binaryAll };
      }
      const useHeader = blobs.length > 0 || r() < 0.5;
      const { body, headerLength } = useHeader
        ? withBlobs(header, blobs)
        : { body: json(header), headerLength: undefined };

      const ctx = `iteration ${iter}`;
      const config = modelConfig(maxBatchSize, inCfg, outCfg);
      const v = validateInfer(parseInferBody(body, headerLength), config);
      assert.equal(v.batch, batch, ctx);
      assert.equal(v.clientId, `r${iter}`, ctx);
      assert.equal(v.allOutputs, !listed, ctx);
      assert.deepEqual(
        v.inputs.map((t) => [t.name, t.datatype, t.shape, bytesOf(t.data)]),
        expected.map((e) => [e.name, e.dt, e.shape, e.bytes]),
        ctx,
      );

      // The worker echoes each input as its output.
      const produced = v.inputs.map((t, k) => ({ ...t, name: `out${k}` }));
      const res = encodeInferResponse(
        { model: 'm', version: '1', id: v.clientId, outputs: produced },
        v.outputs,
        v.binaryDataOutput,
      );
      const decoded = decodeResponse(res);
      assert.equal(decoded.head.id, `r${iter}`, ctx);
      const order = listed ? expected.map((_, k) => k).reverse() : expected.map((_, k) => k);
      assert.deepEqual(
        decoded.outputs.map((o) => o.name),
        order.map((k) => `out${k}`),
        ctx,
      );
      decoded.outputs.forEach((o, j) => {
        const k = order[j] as number;
        const e = expected[k] as (typeof expected)[number];
        assert.deepEqual([o.datatype, o.shape], [e.dt, e.shape], ctx);
        const binary = listed ? outBinary[k] : binaryAll;
        if (binary) {
          assert.deepEqual(o.blob, e.bytes, ctx);
        } else {
          assert.deepEqual(o.data, e.values, ctx);
          // And the JSON data read back as a request gives the same bytes.
          const again = parseInferBody(json({ inputs: [{ name: 'z', datatype: e.dt, shape: e.shape, data: o.data }] }));
          assert.deepEqual(bytesOf((again.inputs[0] as WireTensor).data), e.bytes, ctx);
        }
      });
    }
  });
});
