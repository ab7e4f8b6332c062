import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { deflateSync, gzipSync } from 'node:zlib';
import { decodeMessage, encodeMessage } from '@ge-mesh/client';
import { type ModelConfig, parseModelConfig } from '@ge-mesh/model-repository';
import { configTypeOf, type DataType, MeshError, type WireTensor } from '@ge-mesh/protocol';
import {
  decodeBody,
  HttpError,
  parseHeaderLength,
  responseCompression,
} from '../../services/gateway/src/http/encoding.js';
import {
  encodeInferResponse,
  type ParsedInfer,
  parseInferBody,
  parseInferObject,
  validateInfer,
} from '../../services/gateway/src/infer/index.js';

/**
 * The gateway's body handling: Content-Encoding and Accept-Encoding as
 * Triton's front end does them, Inference-Header-Content-Length, a binary
 * round trip for every datatype through the codec (the mesh test covers the
 * ones onnxruntime can run), and the AMQP form giving the same errors as REST.
 */
async function rejectsWith(p: Promise<unknown>, code: string, message: string): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof MeshError, String(err));
    assert.equal(err.code, code);
    assert.equal(err.message, message);
    return true;
  });
}

function caught(fn: () => unknown): MeshError {
  try {
    fn();
  } catch (err) {
    if (err instanceof MeshError) return err;
    throw err;
  }
  assert.fail('expected a MeshError');
}

describe('gateway body encodings', () => {
  const body = Buffer.from(JSON.stringify({ inputs: [] }));

  it('inflates gzip and deflate bodies, and refuses other encodings with 415 and Accept-Encoding', async () => {
    assert.deepEqual(await decodeBody(gzipSync(body), 'gzip', 1024), body);
    assert.deepEqual(await decodeBody(deflateSync(body), 'deflate', 1024), body);
    assert.equal(await decodeBody(body, undefined, 1024), body);
    assert.equal(await decodeBody(body, 'identity', 1024), body);
    await assert.rejects(decodeBody(body, 'br', 1024), (err: unknown) => {
      assert.ok(err instanceof HttpError);
      assert.equal(err.code, 'UNSUPPORTED_ENCODING');
      assert.equal(err.status, 415);
      assert.equal(err.message, 'Unsupported compression type');
      assert.deepEqual(err.headers, { 'accept-encoding': 'gzip, deflate' });
      return true;
    });
  });

  it('bounds the inflated size by the body limit (a 10 MiB bomb against 1 MiB) and reports corrupt data', async () => {
    const bomb = gzipSync(Buffer.alloc(10 * 1024 * 1024));
    assert.ok(bomb.length < 20_000);
    await rejectsWith(
      decodeBody(bomb, 'gzip', 1024 * 1024),
      'PAYLOAD_TOO_LARGE',
      'Decompressed data size exceeds the maximum allowed value of 1048576 bytes.',
    );
    await rejectsWith(
      decodeBody(Buffer.from('not gzip at all'), 'gzip', 1024),
      'INVALID_ARGUMENT',
      'failed to decompress the request body as gzip',
    );
  });

  it("chooses the response encoding as Triton's CompressionTypeUsed does", () => {
    const cases: Array<[string | undefined, string | undefined]> = [
      [undefined, undefined],
      ['', undefined],
      ['gzip', 'gzip'],
      ['deflate', 'deflate'],
      ['gzip, deflate', 'gzip'],
      ['gzip;q=0.5, deflate', 'deflate'],
      ['identity;q=1, gzip;q=0.9', undefined],
      ['br', undefined],
      ['br, deflate;q=0.2', 'deflate'],
      ['deflate;q=abc, gzip;q=0.1', 'gzip'],
    ];
    for (const [accept, want] of cases) assert.equal(responseCompression(accept), want, String(accept));
  });

  it('reads Inference-Header-Content-Length as std::stoi does', () => {
    assert.equal(parseHeaderLength(undefined), undefined);
    assert.equal(parseHeaderLength('12'), 12);
    assert.equal(parseHeaderLength(' 12abc'), 12);
    assert.equal(parseHeaderLength('-3'), -3);
    assert.equal(
      caught(() => parseHeaderLength('abc')).message,
      'Unable to parse Inference-Header-Content-Length, got: abc',
    );
    assert.equal(
      caught(() => parseHeaderLength('99999999999')).message,
      'Unable to parse Inference-Header-Content-Length, value is out of range [ -2147483648, 2147483647 ], got: 99999999999',
    );
  });
});

const ALL: DataType[] = [
  'BOOL',
  'UINT8',
  'UINT16',
  'UINT32',
  'UINT64',
  'INT8',
  'INT16',
  'INT32',
  'INT64',
  'FP16',
  'BF16',
  'FP32',
  'FP64',
  'BYTES',
];

function identityConfig(dt: DataType): ModelConfig {
  return parseModelConfig(
    `backend: "onnxruntime"\nmax_batch_size: 4\ninput [{ name: "in" data_type: ${configTypeOf(dt)} dims: [ 3 ] }]\noutput [{ name: "out" data_type: ${configTypeOf(dt)} dims: [ 3 ] }]\n`,
    { file: 'config.pbtxt', modelName: 'identity' },
  );
}

/** Two rows of three elements of `dt`, as little-endian bytes (BYTES: length-prefixed strings). */
function sampleBytes(dt: DataType): Uint8Array {
  if (dt === 'BYTES') {
    const parts = ['a', '', 'héllo', 'x y', '\u0000bin', 'z'].map((s) => Buffer.from(s, 'utf8'));
    return Buffer.concat(parts.flatMap((p) => [Buffer.from(Uint32Array.of(p.length).buffer), p]));
  }
  const sizes: Record<string, number> = { BOOL: 1, UINT8: 1, INT8: 1, UINT16: 2, INT16: 2, FP16: 2, BF16: 2 };
  const size = sizes[dt] ?? (dt.endsWith('64') ? 8 : 4);
  const out = new Uint8Array(6 * size);
  for (let i = 0; i < out.length; i++) out[i] = dt === 'BOOL' ? i % 2 : (i * 37 + 11) & 0xff;
  return out;
}

/** A KServe binary request: JSON header then one blob. */
function binaryRequest(dt: DataType, data: Uint8Array, outputsBinary: boolean): { body: Buffer; headerLength: number } {
  const header = Buffer.from(
    JSON.stringify({
      inputs: [{ name: 'in', shape: [2, 3], datatype: dt, parameters: { binary_data_size: data.length } }],
      outputs: [{ name: 'out', parameters: { binary_data: outputsBinary } }],
    }),
  );
  return { body: Buffer.concat([header, data]), headerLength: header.length };
}

describe('gateway codec: binary round trip for every datatype', () => {
  for (const dt of ALL) {
    it(`${dt}: binary in, binary out, bytes unchanged`, () => {
      const data = sampleBytes(dt);
      const { body, headerLength } = binaryRequest(dt, data, true);
      const v = validateInfer(parseInferBody(body, headerLength, 'identity'), identityConfig(dt));
      assert.equal(v.batch, 2);
      const input = v.inputs[0] as WireTensor;
      assert.deepEqual(Buffer.from(input.data), Buffer.from(data));
      // The model echoes its input, as an Identity graph does.
      const out = encodeInferResponse(
        { model: 'identity', version: '1', outputs: [{ ...input, name: 'out' }] },
        v.outputs,
        v.binaryDataOutput,
      );
      assert.equal(out.contentType, 'application/octet-stream');
      const json = JSON.parse(out.body.subarray(0, out.headerLength).toString()) as {
        outputs: Array<{ name: string; datatype: string; shape: number[]; parameters: { binary_data_size: number } }>;
      };
      assert.deepEqual(json.outputs, [
        { name: 'out', datatype: dt, shape: [2, 3], parameters: { binary_data_size: data.length } },
      ]);
      assert.deepEqual(Buffer.from(out.body.subarray(out.headerLength)), Buffer.from(data));
    });
  }

  it('FP16 and BF16 travel only as binary: JSON input and JSON output are refused with Triton texts', () => {
    for (const dt of ['FP16', 'BF16'] as const) {
      const json = Buffer.from(
        JSON.stringify({ inputs: [{ name: 'in', shape: [1, 3], datatype: dt, data: [1, 2, 3] }] }),
      );
      assert.equal(
        caught(() => parseInferBody(json, undefined, 'identity')).message,
        `receiving ${dt} data via JSON is not supported. Please use the binary data format for input in`,
      );
      const { body, headerLength } = binaryRequest(dt, sampleBytes(dt), false);
      assert.equal(
        caught(() => validateInfer(parseInferBody(body, headerLength, 'identity'), identityConfig(dt))).message,
        `sending ${dt} data via JSON is not supported. Please use the binary data format for output`,
      );
    }
  });

  it('the JSON and binary forms of the same tensor give the same bytes (JSON-capable types)', () => {
    const values: Record<string, unknown[]> = {
      BOOL: [true, false, true, true, false, false],
      UINT8: [0, 1, 255, 7, 8, 9],
      UINT16: [0, 65535, 2, 3, 4, 5],
      UINT32: [0, 4294967295, 2, 3, 4, 5],
      UINT64: [0, 2 ** 53 - 1, 2, 3, 4, 5],
      INT8: [-128, 127, 0, -1, 1, 2],
      INT16: [-32768, 32767, 0, -1, 1, 2],
      INT32: [-2147483648, 2147483647, 0, -1, 1, 2],
      INT64: [-(2 ** 53 - 1), 2 ** 53 - 1, 0, -1, 1, 2],
      FP32: [0.5, -1.25, 3, 1e-3, 0.25, 65504],
      FP64: [0.1, -1e300, 3, 1e-300, 2.5, -7],
      BYTES: ['a', '', 'héllo', 'x y', '\u0000bin', 'z'],
    };
    for (const [dt, data] of Object.entries(values) as Array<[DataType, unknown[]]>) {
      const json = Buffer.from(JSON.stringify({ inputs: [{ name: 'in', shape: [2, 3], datatype: dt, data }] }));
      const fromJson = validateInfer(parseInferBody(json, undefined, 'identity'), identityConfig(dt));
      const input = fromJson.inputs[0] as WireTensor;
      const { body, headerLength } = binaryRequest(dt, input.data, false);
      const fromBinary = validateInfer(parseInferBody(body, headerLength, 'identity'), identityConfig(dt));
      assert.deepEqual(Buffer.from((fromBinary.inputs[0] as WireTensor).data), Buffer.from(input.data), dt);
      // And back to JSON: the same values.
      const out = encodeInferResponse(
        { model: 'identity', version: '1', outputs: [{ ...input, name: 'out' }] },
        fromJson.outputs,
        false,
      );
      const back = JSON.parse(out.body.toString()) as { outputs: Array<{ data: unknown[] }> };
      assert.deepEqual(back.outputs[0]?.data, dt === 'FP32' ? data.map((x) => Math.fround(x as number)) : data, dt);
    }
  });
});

describe('gateway AMQP form: same checks, same errors as REST', () => {
  const config = parseModelConfig(
    'backend: "onnxruntime"\nmax_batch_size: 4\ninput [{ name: "x" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "s" data_type: TYPE_STRING dims: [ 1 ] }]\noutput [{ name: "y" data_type: TYPE_FP16 dims: [ 4 ] }]\n',
    { file: 'config.pbtxt', modelName: 'm' },
  );
  const f32 = (n: number) => new Uint8Array(new Float32Array(n).fill(0.5).buffer);
  const str = (s: string) => {
    const b = Buffer.from(s);
    return Buffer.concat([Buffer.from(Uint32Array.of(b.length).buffer), b]);
  };
  /** The same request as a REST binary body and as an AMQP msgpack message. */
  const both = (
    inputs: Array<{ name: string; datatype: string; shape: number[]; data: Uint8Array }>,
    extra: Record<string, unknown> = {},
  ): { rest: () => ParsedInfer; amqp: () => ParsedInfer } => {
    const header = Buffer.from(
      JSON.stringify({
        ...extra,
        inputs: inputs.map((t) => ({
          name: t.name,
          shape: t.shape,
          datatype: t.datatype,
          parameters: { binary_data_size: t.data.length },
        })),
      }),
    );
    const body = Buffer.concat([header, ...inputs.map((t) => t.data)]);
    const message = encodeMessage({ model: 'm', ...extra, inputs } as never);
    return {
      rest: () => parseInferBody(body, header.length, 'm', { maxElements: 1000 }),
      amqp: () => parseInferObject(decodeMessage(message), message.length, 'm', { maxElements: 1000 }),
    };
  };
  const cases: Array<[string, ReturnType<typeof both>]> = [
    ['unknown input', both([{ name: 'q', datatype: 'FP32', shape: [1, 4], data: f32(4) }])],
    [
      'wrong datatype',
      both([
        { name: 'x', datatype: 'INT32', shape: [1, 4], data: f32(4) },
        { name: 's', datatype: 'BYTES', shape: [1, 1], data: str('a') },
      ]),
    ],
    [
      'wrong shape',
      both([
        { name: 'x', datatype: 'FP32', shape: [1, 5], data: f32(5) },
        { name: 's', datatype: 'BYTES', shape: [1, 1], data: str('a') },
      ]),
    ],
    [
      'batch too large',
      both([
        { name: 'x', datatype: 'FP32', shape: [5, 4], data: f32(20) },
        { name: 's', datatype: 'BYTES', shape: [5, 1], data: str('a') },
      ]),
    ],
    [
      'byte size',
      both([
        { name: 'x', datatype: 'FP32', shape: [1, 4], data: f32(3) },
        { name: 's', datatype: 'BYTES', shape: [1, 1], data: str('a') },
      ]),
    ],
    [
      'BYTES element past the data',
      both([
        { name: 'x', datatype: 'FP32', shape: [1, 4], data: f32(4) },
        { name: 's', datatype: 'BYTES', shape: [1, 1], data: str('abc').subarray(0, 5) },
      ]),
    ],
    ['huge shape', both([{ name: 'x', datatype: 'FP32', shape: [4, 100_000], data: f32(4) }])],
    ['reserved parameter', both([], { parameters: { triton_x: 1 } })],
    ['bad id', both([], { id: 5 })],
    ['classification not a number', both([], { outputs: [{ name: 'y', parameters: { classification: 'two' } }] })],
  ];
  for (const [name, c] of cases) {
    it(`${name}: same code and message`, () => {
      const run = (parse: () => ParsedInfer) => caught(() => validateInfer(parse(), config));
      const rest = run(c.rest);
      const amqp = run(c.amqp);
      assert.equal(amqp.code, rest.code);
      assert.equal(amqp.message, rest.message);
    });
  }

  it('names the tensor limit in its message (TENSOR_TOO_LARGE, 400)', () => {
    const err = caught(() => both([{ name: 'x', datatype: 'FP32', shape: [4, 100_000], data: f32(4) }]).amqp());
    assert.equal(err.code, 'TENSOR_TOO_LARGE');
    assert.equal(err.status, 400);
    assert.equal(
      err.message,
      "input 'x' has shape [4,100000] with 400000 elements, more than the limit of 1000 elements per tensor",
    );
  });

  it('takes the doubles msgpack carries as they are: Infinity and NaN are values there, not overflow', () => {
    const values = [Infinity, Number.NaN, -Infinity, 1.5];
    const message = encodeMessage({
      model: 'm',
      parameters: { scale: Infinity },
      inputs: [{ name: 'x', datatype: 'FP32', shape: [4], data: values }],
    } as never);
    const p = parseInferObject(decodeMessage(message), message.length, 'm');
    assert.equal(p.parameters.scale, Infinity);
    const t = p.inputs[0] as WireTensor;
    assert.deepEqual(Buffer.from(t.data), Buffer.from(Float32Array.from(values).buffer));
  });

  it('returns every AMQP output as bytes, FP16 included, and accepts data as bytes', () => {
    const c = both([
      { name: 'x', datatype: 'FP32', shape: [2, 4], data: f32(8) },
      { name: 's', datatype: 'BYTES', shape: [2, 1], data: Buffer.concat([str('a'), str('bc')]) },
    ]);
    const v = validateInfer(c.amqp(), config);
    assert.equal(v.batch, 2);
    assert.deepEqual(v.outputs, [{ name: 'y', binary: true }]);
  });
});
