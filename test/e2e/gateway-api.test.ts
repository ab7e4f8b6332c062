import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { deflateSync, gunzipSync, gzipSync } from 'node:zlib';
import { createPrng } from '@ge-mesh/onnx';
import { elementSize } from '@ge-mesh/protocol';
import { request } from 'undici';
import {
  DATATYPES_ROW,
  type GatewayRepository,
  LABELS,
  makeGatewayRepository,
  ORT_DATATYPES,
} from '../support/gateway-repository.js';
import { freePort, startTestMesh, type TestMesh } from '../support/mesh-harness.js';
import { Reference, toleranceRatio } from '../support/reference.js';

/**
 * The gateway's KServe v2 REST API through the running mesh (gateway,
 * batcher, worker on RabbitMQ and Redis), auth off: every endpoint with
 * Triton's bodies and status codes, the binary tensor extension, every
 * datatype onnxruntime runs through an Identity model, compression both
 * ways, limits, exact statistics, the metrics that match them, and the
 * repository index.
 */
const ATOL = 1e-5;
const RTOL = 1e-4;
const MAX_BODY = 1 << 20;
const MAX_ELEMENTS = 65_536;

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  text: string;
}

function xs(batch: number, seed: number): Float32Array {
  return createPrng(seed).floats(batch * 16, -1, 1);
}

/** A binary-extension body: the JSON header, then the blobs in input order. */
function binaryBody(doc: unknown, blobs: ArrayBufferView[]): { body: Buffer; headerLength: number } {
  const header = Buffer.from(JSON.stringify(doc));
  return {
    body: Buffer.concat([header, ...blobs.map((b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength))]),
    headerLength: header.length,
  };
}

function f32(b: Buffer): Float32Array {
  const copy = new Uint8Array(b.length);
  copy.set(b);
  return new Float32Array(copy.buffer);
}

describe('end to end: gateway REST API', { timeout: 300_000 }, () => {
  let mesh: TestMesh;
  let repo: GatewayRepository;
  let metricsUrl: string;
  const ref = new Reference();

  before(async () => {
    repo = await makeGatewayRepository({ datatypes: true, broken: true, labelled: true });
    const metricsPort = await freePort();
    metricsUrl = `http://127.0.0.1:${metricsPort}`;
    mesh = await startTestMesh({
      modelRepository: repo.dir,
      models: repo.models,
      // The gateway's own port (the flag): GEMESH_METRICS_PORT would give every service the same one.
      flags: {
        gateway: [
          '--metrics-port',
          String(metricsPort),
          '--max-body-bytes',
          String(MAX_BODY),
          '--max-tensor-elements',
          String(MAX_ELEMENTS),
        ],
      },
    });
  });
  after(async () => {
    await ref.close();
    await mesh?.teardown();
    await repo?.remove();
  });

  async function call(
    method: string,
    path: string,
    opts: { body?: string | Buffer; headers?: Record<string, string> } = {},
  ): Promise<Answer> {
    const res = await request(`${mesh.url}${path}`, {
      method: method as 'GET',
      headers: opts.headers ?? {},
      ...(opts.body !== undefined ? { body: opts.body } : {}),
    });
    const body = Buffer.from(await res.body.arrayBuffer());
    return { status: res.statusCode, headers: res.headers, body, text: body.toString('utf8') };
  }
  const json = (a: Answer) => JSON.parse(a.text) as Record<string, unknown>;
  const expectError = (a: Answer, status: number, error: string) => {
    assert.equal(a.status, status, a.text);
    assert.equal(a.text, JSON.stringify({ error }));
  };
  const infer = (path: string, doc: unknown, headers: Record<string, string> = {}) =>
    call('POST', path, { body: JSON.stringify(doc), headers: { 'content-type': 'application/json', ...headers } });
  const tinyRef = async (x: Float32Array, batch: number) =>
    (await ref.run('tiny', [{ name: 'x', dataType: 'FP32', dims: [batch, 16], data: x }])).y?.data as Float32Array;

  it('health, server metadata and routing answer as Triton does', async () => {
    assert.deepEqual(await call('GET', '/v2/health/live').then((a) => [a.status, a.text]), [200, '']);
    assert.deepEqual(await call('GET', '/v2/health/ready').then((a) => [a.status, a.text]), [200, '']);
    const meta = await call('GET', '/v2');
    assert.equal(meta.status, 200);
    assert.deepEqual(json(meta), {
      name: 'ge-mesh',
      version: '0.1.0',
      extensions: [
        'classification',
        'model_repository',
        'model_repository(unload_dependents)',
        'model_configuration',
        'binary_tensor_data',
        'parameters',
        'statistics',
        'trace',
        'logging',
      ],
    });
    expectError(await call('GET', '/v2/nothing'), 404, 'Not Found');
    expectError(await call('PUT', '/v2'), 405, 'Method Not Allowed');
    expectError(await call('POST', '/v2/models/tiny'), 405, 'Method Not Allowed');
    expectError(await call('GET', '/v2/models/tiny/infer'), 405, 'Method Not Allowed');
    expectError(await call('GET', '/v2/repository/index'), 405, 'Method Not Allowed');
    expectError(await call('GET', '/v2/models/tiny/versions/one'), 404, 'Not Found');
  });

  it('shared memory: no region is ever registered, with the answers gRPC gives', async () => {
    for (const kind of ['system', 'cuda']) {
      const base = `/v2/${kind}sharedmemory`;
      assert.deepEqual(await call('GET', `${base}/status`).then((a) => [a.status, a.text]), [200, '[]']);
      expectError(
        await call('GET', `${base}/region/r1/status`),
        404,
        `Unable to find ${kind} shared memory region: 'r1'`,
      );
      assert.deepEqual(await call('POST', `${base}/unregister`).then((a) => [a.status, a.text]), [200, '']);
      assert.deepEqual(await call('POST', `${base}/region/r1/unregister`).then((a) => [a.status, a.text]), [200, '']);
      expectError(await call('GET', `${base}/region/r1/register`), 405, 'Method Not Allowed');
    }
    const register = (kind: string, body: unknown) =>
      call('POST', `/v2/${kind}sharedmemory/region/r1/register`, {
        body: JSON.stringify(body),
        headers: { 'content-type': 'application/json' },
      });
    expectError(
      await register('system', { key: '/k', offset: 0, byte_size: 64 }),
      501,
      "failed to register shared memory region: 'r1', shared memory is not supported; send tensors in the request",
    );
    expectError(
      await register('cuda', { raw_handle: { b64: 'AAAA' }, device_id: 0, byte_size: 64 }),
      400,
      "failed to register CUDA shared memory region: 'r1', GPUs not supported",
    );
  });

  it('model metadata, readiness and config, with the errors for unknown models and versions', async () => {
    const tiny = {
      name: 'tiny',
      versions: ['1'],
      platform: 'onnxruntime_onnx',
      inputs: [{ name: 'x', datatype: 'FP32', shape: [-1, 16] }],
      outputs: [{ name: 'y', datatype: 'FP32', shape: [-1, 4] }],
    };
    assert.deepEqual(json(await call('GET', '/v2/models/tiny')), tiny);
    assert.deepEqual(json(await call('GET', '/v2/models/tiny/versions/1')), tiny);
    const dt = json(await call('GET', '/v2/models/datatypes')) as {
      inputs: Array<{ datatype: string; shape: number[] }>;
    };
    assert.deepEqual(
      dt.inputs.map((i) => [i.datatype, i.shape]),
      ORT_DATATYPES.map((d) => [d, [-1, DATATYPES_ROW]]),
    );
    expectError(await call('GET', '/v2/models/nope'), 404, "Request for unknown model: 'nope' is not found");
    expectError(await call('GET', '/v2/models/broken'), 404, "Request for unknown model: 'broken' is not found");
    expectError(
      await call('GET', '/v2/models/tiny/versions/2'),
      404,
      "Request for unknown model: 'tiny' version 2 is not found",
    );

    for (const path of [
      '/v2/models/tiny/ready',
      '/v2/models/tiny/versions/1/ready',
      '/v2/models/tiny/versions/01/ready',
    ]) {
      assert.deepEqual(await call('GET', path).then((a) => [a.status, a.text]), [200, ''], path);
    }
    expectError(await call('GET', '/v2/models/nope/ready'), 404, "Request for unknown model: 'nope' is not found");
    expectError(
      await call('GET', '/v2/models/tiny/versions/3/ready'),
      404,
      "Request for unknown model: 'tiny' version 3 is not found",
    );

    const config = json(await call('GET', '/v2/models/tiny/config'));
    assert.equal(config.name, 'tiny');
    assert.equal(config.max_batch_size, 8);
    assert.deepEqual(config.input, [
      {
        name: 'x',
        data_type: 'TYPE_FP32',
        format: 'FORMAT_NONE',
        dims: [16],
        is_shape_tensor: false,
        allow_ragged_batch: false,
        optional: false,
        is_non_linear_format_io: false,
      },
    ]);
    assert.deepEqual(config.version_policy, { latest: { num_versions: 1 } });
    assert.deepEqual(json(await call('GET', '/v2/models/tiny/versions/1/config')), config);
    const dtConfig = json(await call('GET', '/v2/models/datatypes/config')) as { output: Array<{ data_type: string }> };
    assert.deepEqual(
      dtConfig.output.map((o) => o.data_type),
      ORT_DATATYPES.map((d) => (d === 'BOOL' ? 'TYPE_BOOL' : `TYPE_${d}`)),
    );
    expectError(await call('GET', '/v2/models/nope/config'), 404, "Request for unknown model: 'nope' is not found");
  });

  it('infers with JSON, the binary extension, raw bodies and classification; outputs match onnxruntime', async () => {
    const x = xs(2, 11);
    const want = await tinyRef(x, 2);
    const close = (got: ArrayLike<number>) =>
      assert.ok(toleranceRatio(got, want, ATOL, RTOL) <= 1, `${Array.from(got)} vs ${Array.from(want)}`);

    // JSON in, JSON out, id echoed, version as a string.
    const a = await infer('/v2/models/tiny/infer', {
      id: 'j1',
      inputs: [{ name: 'x', shape: [2, 16], datatype: 'FP32', data: Array.from(x) }],
    });
    assert.equal(a.status, 200, a.text);
    assert.match(String(a.headers['content-type']), /^application\/json/);
    const aj = json(a) as {
      id: string;
      model_name: string;
      model_version: string;
      outputs: Array<{ name: string; datatype: string; shape: number[]; data: number[] }>;
    };
    assert.deepEqual([aj.id, aj.model_name, aj.model_version], ['j1', 'tiny', '1']);
    assert.deepEqual([aj.outputs[0]?.name, aj.outputs[0]?.datatype, aj.outputs[0]?.shape], ['y', 'FP32', [2, 4]]);
    close(aj.outputs[0]?.data ?? []);

    // Binary input, no outputs listed + binary_data_output: what tritonclient sends by default.
    const b = binaryBody(
      {
        parameters: { binary_data_output: true },
        inputs: [{ name: 'x', shape: [2, 16], datatype: 'FP32', parameters: { binary_data_size: x.byteLength } }],
      },
      [x],
    );
    const r2 = await call('POST', '/v2/models/tiny/versions/1/infer', {
      body: b.body,
      headers: {
        'inference-header-content-length': String(b.headerLength),
        'content-type': 'application/octet-stream',
      },
    });
    assert.equal(r2.status, 200, r2.text);
    assert.equal(r2.headers['content-type'], 'application/octet-stream');
    const hl = Number(r2.headers['inference-header-content-length']);
    const head = JSON.parse(r2.body.subarray(0, hl).toString()) as { outputs: unknown[] };
    assert.deepEqual(head.outputs, [
      { name: 'y', datatype: 'FP32', shape: [2, 4], parameters: { binary_data_size: 32 } },
    ]);
    assert.equal(r2.body.length, hl + 32);
    close(f32(r2.body.subarray(hl)));

    // JSON input, one output asked as binary.
    const r3 = await infer('/v2/models/tiny/infer', {
      inputs: [{ name: 'x', shape: [2, 16], datatype: 'FP32', data: Array.from(x) }],
      outputs: [{ name: 'y', parameters: { binary_data: true } }],
    });
    const hl3 = Number(r3.headers['inference-header-content-length']);
    close(f32(r3.body.subarray(hl3)));

    // Raw body (header length 0): the bytes of the single input, batch 1, outputs binary.
    const x1 = x.subarray(0, 16);
    const r4 = await call('POST', '/v2/models/tiny/infer', {
      body: Buffer.from(x1.buffer, x1.byteOffset, x1.byteLength),
      headers: { 'inference-header-content-length': '0' },
    });
    assert.equal(r4.status, 200, r4.text);
    const hl4 = Number(r4.headers['inference-header-content-length']);
    assert.deepEqual(
      (JSON.parse(r4.body.subarray(0, hl4).toString()) as { outputs: Array<{ shape: number[] }> }).outputs[0]?.shape,
      [1, 4],
    );
    assert.ok(toleranceRatio(f32(r4.body.subarray(hl4)), want.subarray(0, 4), ATOL, RTOL) <= 1);

    // Classification: the top 2 of each row as "value:index", highest first.
    const r5 = await infer('/v2/models/tiny/infer', {
      inputs: [{ name: 'x', shape: [2, 16], datatype: 'FP32', data: Array.from(x) }],
      outputs: [{ name: 'y', parameters: { classification: 2 } }],
    });
    const c = json(r5) as { outputs: Array<{ datatype: string; shape: number[]; data: string[] }> };
    assert.deepEqual([c.outputs[0]?.datatype, c.outputs[0]?.shape], ['BYTES', [2, 2]]);
    const top = (row: number) =>
      [0, 1, 2, 3]
        .sort((i, j) => (want[row * 4 + j] as number) - (want[row * 4 + i] as number))
        .slice(0, 2)
        .map(String);
    assert.deepEqual(
      c.outputs[0]?.data.map((s) => s.split(':')[1]),
      [...top(0), ...top(1)],
    );
    // With the output's label_filename, each entry names its class: "value:index:label".
    const r6 = await infer('/v2/models/labelled/infer', {
      inputs: [{ name: 'x', shape: [2, 16], datatype: 'FP32', data: Array.from(x) }],
      outputs: [{ name: 'y', parameters: { classification: 2 } }],
    });
    const labelled = (json(r6) as { outputs: Array<{ data: string[] }> }).outputs[0]?.data ?? [];
    assert.deepEqual(
      labelled.map((s) => s.split(':').slice(1)),
      [...top(0), ...top(1)].map((i) => [i, LABELS[Number(i)]]),
    );

    // Header length that lies about the body; binary size with no header.
    expectError(
      await call('POST', '/v2/models/tiny/infer', {
        body: b.body,
        headers: { 'inference-header-content-length': String(b.body.length + 5) },
      }),
      400,
      `inference header size should be in range (0, ${b.body.length}), got: ${b.body.length + 5}`,
    );
    expectError(
      await call('POST', '/v2/models/tiny/infer', {
        body: b.body,
        headers: { 'inference-header-content-length': 'x1' },
      }),
      400,
      'Unable to parse Inference-Header-Content-Length, got: x1',
    );
  });

  it('round-trips every datatype onnxruntime runs, binary and JSON, through an Identity model', async () => {
    for (const batch of [1, 2]) {
      const blobs = ORT_DATATYPES.map((dt, k) => {
        const n = batch * DATATYPES_ROW * elementSize(dt);
        const b = new Uint8Array(n);
        for (let i = 0; i < n; i++) b[i] = dt === 'BOOL' ? (i + k) % 2 : (i * 53 + k * 7 + 1) & 0xff;
        // FP16 NaN payloads may be canonicalised: keep the exponent below all-ones.
        if (dt === 'FP16') for (let i = 1; i < n; i += 2) b[i] = (b[i] as number) & 0x7b;
        return b;
      });
      const doc = {
        parameters: { binary_data_output: true },
        inputs: ORT_DATATYPES.map((dt, k) => ({
          name: `in_${dt}`,
          shape: [batch, DATATYPES_ROW],
          datatype: dt,
          parameters: { binary_data_size: blobs[k]?.length },
        })),
      };
      const { body, headerLength } = binaryBody(doc, blobs);
      const r = await call('POST', '/v2/models/datatypes/infer', {
        body,
        headers: { 'inference-header-content-length': String(headerLength) },
      });
      assert.equal(r.status, 200, r.text);
      const hl = Number(r.headers['inference-header-content-length']);
      const head = JSON.parse(r.body.subarray(0, hl).toString()) as {
        outputs: Array<{ name: string; datatype: string; shape: number[]; parameters: { binary_data_size: number } }>;
      };
      let at = hl;
      const got = new Map<string, Buffer>();
      for (const o of head.outputs) {
        got.set(o.name, r.body.subarray(at, at + o.parameters.binary_data_size));
        at += o.parameters.binary_data_size;
        assert.deepEqual(o.shape, [batch, DATATYPES_ROW]);
        assert.equal(o.datatype, o.name.slice(4));
      }
      assert.equal(at, r.body.length);
      ORT_DATATYPES.forEach((dt, k) => {
        assert.deepEqual(got.get(`out_${dt}`), Buffer.from(blobs[k] as Uint8Array), `${dt} batch ${batch}`);
      });
    }

    // JSON for the types that have a JSON form: values come back as sent.
    const values: Record<string, unknown[]> = {
      BOOL: [true, false, true],
      UINT8: [0, 200, 255],
      UINT16: [1, 60000, 65535],
      UINT32: [0, 1, 4294967295],
      UINT64: [0, 9007199254740991, 3],
      INT8: [-128, 0, 127],
      INT16: [-32768, 5, 32767],
      INT32: [-2147483648, -1, 2147483647],
      INT64: [-9007199254740991, 0, 9007199254740991],
      FP32: [0.5, -2.25, 1024],
      FP64: [0.1, -1e300, 5e-324],
    };
    const jsonTypes = Object.keys(values);
    const r = await infer('/v2/models/datatypes/infer', {
      inputs: ORT_DATATYPES.map((dt) => ({
        name: `in_${dt}`,
        shape: [1, DATATYPES_ROW],
        datatype: dt,
        ...(dt === 'FP16' ? { parameters: { binary_data_size: 0 } } : { data: values[dt] }),
      })),
      outputs: jsonTypes.map((dt) => ({ name: `out_${dt}` })),
    });
    // FP16 cannot be JSON: its input is sent empty and rejected by size, as Triton does.
    expectError(r, 400, "input byte size mismatch for input 'in_FP16' for model 'datatypes'. Expected 6, got 0");
    const fp16 = new Uint8Array(6).fill(0x3c);
    const b = binaryBody(
      {
        inputs: ORT_DATATYPES.map((dt) => ({
          name: `in_${dt}`,
          shape: [1, DATATYPES_ROW],
          datatype: dt,
          ...(dt === 'FP16' ? { parameters: { binary_data_size: 6 } } : { data: values[dt] }),
        })),
        outputs: jsonTypes.map((dt) => ({ name: `out_${dt}` })),
      },
      [fp16],
    );
    const r2 = await call('POST', '/v2/models/datatypes/infer', {
      body: b.body,
      headers: { 'inference-header-content-length': String(b.headerLength) },
    });
    assert.equal(r2.status, 200, r2.text);
    const out = json(r2) as { outputs: Array<{ name: string; data: unknown[] }> };
    for (const o of out.outputs) assert.deepEqual(o.data, values[o.name.slice(4)], o.name);
    expectError(
      await infer('/v2/models/datatypes/infer', {
        inputs: [{ name: 'in_FP16', shape: [1, 3], datatype: 'FP16', data: [1, 2, 3] }],
      }),
      400,
      'receiving FP16 data via JSON is not supported. Please use the binary data format for input in_FP16',
    );
  });

  it('gzip and deflate both ways; other encodings 415; limits on body, inflated size and tensor elements', async () => {
    const x = xs(1, 5);
    const want = await tinyRef(x, 1);
    const doc = Buffer.from(
      JSON.stringify({ inputs: [{ name: 'x', shape: [1, 16], datatype: 'FP32', data: Array.from(x) }] }),
    );
    for (const [enc, z] of [
      ['gzip', gzipSync],
      ['deflate', deflateSync],
    ] as const) {
      const r = await call('POST', '/v2/models/tiny/infer', {
        body: z(doc),
        headers: { 'content-encoding': enc, 'accept-encoding': 'gzip;q=0.5, deflate;q=0.1' },
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.headers['content-encoding'], 'gzip');
      const out = JSON.parse(gunzipSync(r.body).toString()) as { outputs: Array<{ data: number[] }> };
      assert.ok(toleranceRatio(out.outputs[0]?.data ?? [], want, ATOL, RTOL) <= 1);
    }
    const plain = await call('POST', '/v2/models/tiny/infer', { body: doc });
    assert.equal(plain.headers['content-encoding'], undefined);

    const br = await call('POST', '/v2/models/tiny/infer', { body: doc, headers: { 'content-encoding': 'br' } });
    expectError(br, 415, 'Unsupported compression type');
    assert.equal(br.headers['accept-encoding'], 'gzip, deflate');
    expectError(
      await call('POST', '/v2/models/tiny/infer', {
        body: gzipSync(Buffer.alloc(4 * MAX_BODY, 32)),
        headers: { 'content-encoding': 'gzip' },
      }),
      413,
      `Decompressed data size exceeds the maximum allowed value of ${MAX_BODY} bytes.`,
    );
    expectError(
      await call('POST', '/v2/models/tiny/infer', { body: Buffer.alloc(MAX_BODY + 1, 32) }),
      413,
      `request body is larger than the limit of ${MAX_BODY} bytes`,
    );
    expectError(
      await infer('/v2/models/tiny/infer', { inputs: [{ name: 'x', shape: [8, 16384], datatype: 'FP32', data: [] }] }),
      400,
      `input 'x' has shape [8,16384] with 131072 elements, more than the limit of ${MAX_ELEMENTS} elements per tensor`,
    );
    expectError(
      await infer('/v2/models/tiny/infer', {
        inputs: [{ name: 'x', shape: [9, 16], datatype: 'FP32', data: Array(144).fill(0) }],
      }),
      400,
      "inference request batch-size must be <= 8 for 'tiny'",
    );
  });

  it('statistics are exact, per request and per execution, and the metrics agree with them', async () => {
    type Leaf = { count: number; ns: number };
    type Stats = {
      name: string;
      version: string;
      last_inference: number;
      inference_count: number;
      execution_count: number;
      inference_stats: Record<string, Leaf>;
      batch_stats: Array<{ batch_size: number; compute_input: Leaf; compute_infer: Leaf; compute_output: Leaf }>;
    };
    const read = async (): Promise<Stats> => {
      const a = await call('GET', '/v2/models/tiny/stats');
      assert.equal(a.status, 200, a.text);
      const s = (json(a) as { model_stats: Stats[] }).model_stats;
      assert.equal(s.length, 1);
      return s[0] as Stats;
    };
    const batchCounts = (s: Stats) => new Map(s.batch_stats.map((b) => [b.batch_size, b]));
    const send = (batch: number, seed: number) =>
      infer('/v2/models/tiny/infer', {
        inputs: [{ name: 'x', shape: [batch, 16], datatype: 'FP32', data: Array.from(xs(batch, seed)) }],
      }).then((a) => assert.equal(a.status, 200, a.text));

    // One at a time: each request is an execution of its own size.
    const t0 = Date.now();
    const s0 = await read();
    const sizes = [1, 2, 3, 1, 2];
    for (const [i, b] of sizes.entries()) await send(b, 100 + i);
    const s1 = await read();
    assert.equal(s1.inference_stats.success?.count, (s0.inference_stats.success?.count ?? 0) + 5);
    assert.equal(s1.inference_stats.queue?.count, s1.inference_stats.success?.count);
    // Queue time is measured across processes to the microsecond, not in whole milliseconds: five
    // queue times that each came out whole would sum to a multiple of 1 ms.
    const queueNs = (s1.inference_stats.queue?.ns ?? 0) - (s0.inference_stats.queue?.ns ?? 0);
    assert.ok(Number.isInteger(queueNs) && queueNs > 0 && queueNs % 1_000_000 !== 0, `queue ns ${queueNs}`);
    assert.equal(s1.inference_count - s0.inference_count, 9);
    assert.equal(s1.execution_count - s0.execution_count, 5);
    assert.ok(s1.last_inference >= t0 - 5);
    const b0 = batchCounts(s0);
    const b1 = batchCounts(s1);
    const delta = (size: number, f: 'compute_input' | 'compute_infer' | 'compute_output' = 'compute_infer') => ({
      count: (b1.get(size)?.[f].count ?? 0) - (b0.get(size)?.[f].count ?? 0),
      ns: (b1.get(size)?.[f].ns ?? 0) - (b0.get(size)?.[f].ns ?? 0),
    });
    assert.deepEqual(
      [1, 2, 3].map((n) => delta(n).count),
      [2, 2, 1],
    );
    // Each request is charged its whole batch: alone in its batch, it is charged exactly the execution.
    for (const f of ['compute_input', 'compute_infer', 'compute_output'] as const) {
      const perRequest = (s1.inference_stats[f]?.ns ?? 0) - (s0.inference_stats[f]?.ns ?? 0);
      assert.equal(
        perRequest,
        [1, 2, 3].reduce((n, size) => n + delta(size, f).ns, 0),
        f,
      );
    }

    // Concurrently: batches form, and the counts still add up exactly.
    const conc = [1, 2, 1, 3, 1, 1, 2, 1, 4, 1, 1, 2, 1, 1, 3, 1, 2, 1, 1, 1];
    await Promise.all(conc.map((b, i) => send(b, 200 + i)));
    const s2 = await read();
    const rows = conc.reduce((a, b) => a + b, 0);
    assert.equal(s2.inference_stats.success?.count, (s1.inference_stats.success?.count ?? 0) + conc.length);
    assert.equal(s2.inference_count - s1.inference_count, rows);
    const executions = s2.execution_count - s1.execution_count;
    assert.ok(executions >= 1 && executions <= conc.length, String(executions));
    const before = batchCounts(s1);
    let execs = 0;
    let executedRows = 0;
    for (const b of s2.batch_stats) {
      const n = b.compute_infer.count - (before.get(b.batch_size)?.compute_infer.count ?? 0);
      execs += n;
      executedRows += n * b.batch_size;
    }
    assert.equal(execs, executions);
    assert.equal(executedRows, rows);

    // Other stats routes.
    const all = json(await call('GET', '/v2/models/stats')) as { model_stats: Stats[] };
    assert.deepEqual(
      all.model_stats.map((s) => [s.name, s.version]),
      [
        ['datatypes', '1'],
        ['labelled', '1'],
        ['tiny', '1'],
      ],
    );
    const v1 = json(await call('GET', '/v2/models/tiny/versions/1/stats')) as { model_stats: Stats[] };
    assert.equal(v1.model_stats[0]?.inference_count, s2.inference_count);
    expectError(await call('GET', '/v2/models/nope/stats'), 400, "requested model 'nope' is not available");
    expectError(
      await call('GET', '/v2/models/tiny/versions/2/stats'),
      400,
      "requested model version is not available for model 'tiny'",
    );

    // Metrics: the same counts under Triton's names.
    const m = await request(`${metricsUrl}/metrics`);
    assert.equal(m.statusCode, 200);
    assert.match(String(m.headers['content-type']), /^text\/plain/);
    const text = await m.body.text();
    const metric = (name: string, labels = '{model="tiny",version="1"}') => {
      const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `));
      return line === undefined ? undefined : Number(line.split(' ')[1]);
    };
    assert.equal(metric('nv_inference_request_success'), s2.inference_stats.success?.count);
    assert.equal(metric('nv_inference_count'), s2.inference_count);
    assert.equal(metric('nv_inference_exec_count'), s2.execution_count);
    assert.equal(metric('nv_inference_pending_request_count'), 0);
    assert.equal(metric('nv_inference_request_failure', '{model="tiny",version="1",reason="BACKEND"}'), 0);
    assert.equal(metric('gemesh_inference_request_duration_seconds_count'), s2.inference_stats.success?.count);
    const us = metric('nv_inference_compute_infer_duration_us') ?? -1;
    const ns = s2.inference_stats.compute_infer?.ns ?? 0;
    // Triton truncates each request's ns to whole µs before adding.
    assert.ok(us <= ns / 1000 && us > ns / 1000 - (s2.inference_stats.success?.count ?? 0), `${us} µs vs ${ns} ns`);
    assert.equal((await request(`${metricsUrl}/metrics/`)).statusCode, 200);
    assert.equal((await request(`${metricsUrl}/other`)).statusCode, 404);
  });

  it('repository index: every folder with its state, ready filter, Triton errors', async () => {
    const index = await call('POST', '/v2/repository/index');
    assert.equal(index.status, 200, index.text);
    const rows = JSON.parse(index.text) as Array<{ name: string; version?: string; state: string; reason?: string }>;
    assert.deepEqual(
      rows.map((r) => [r.name, r.version, r.state]),
      [
        ['broken', undefined, 'UNAVAILABLE'],
        ['datatypes', '1', 'READY'],
        ['labelled', '1', 'READY'],
        ['tiny', '1', 'READY'],
      ],
    );
    assert.match(rows[0]?.reason ?? '', /^broken\/config\.pbtxt:2:1: .*max_batch_sise/);
    assert.ok(!index.text.includes(repo.dir), 'no server path in the index');
    const ready = await call('POST', '/v2/repository/index', { body: '{"ready":true}' });
    assert.deepEqual(
      (JSON.parse(ready.text) as Array<{ name: string }>).map((r) => r.name),
      ['datatypes', 'labelled', 'tiny'],
    );
    assert.equal((await call('POST', '/v2/repository/any/index', { body: '{"ready":false}' })).text, index.text);
    expectError(
      await call('POST', '/v2/repository/index', { body: '{"ready":1}' }),
      400,
      "Invalid value for 'ready': expected a boolean",
    );
    const bad = await call('POST', '/v2/repository/index', { body: '{"ready":' });
    assert.equal(bad.status, 400);
    assert.match(json(bad).error as string, /^failed to parse the request JSON buffer: /);
  });
});
