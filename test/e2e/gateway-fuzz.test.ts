import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { createPrng, type Prng } from '@ge-mesh/onnx';
import { Pool } from 'undici';
import { type GatewayRepository, makeGatewayRepository } from '../support/gateway-repository.js';
import { startTestMesh, type TestMesh } from '../support/mesh-harness.js';
import { Reference, toleranceRatio } from '../support/reference.js';

/**
 * 10,000 malformed HTTP requests at high concurrency against one gateway of
 * the running mesh — random bytes, truncated binary frames, lying lengths,
 * wrong headers and encodings, huge shapes, bad and deeply nested JSON,
 * wrong types, unknown paths and methods, oversized and bomb bodies — with
 * valid requests interleaved: every malformed one gets a 4xx with a
 * `{"error": ...}` body, every valid one its correct outputs, and the
 * gateway neither dies nor logs an internal error. Then 300 raw-socket
 * requests with broken request lines and framing: any answer is a 4xx.
 */
const MALFORMED = 10_000;
const VALID_EVERY = 40;
const CONCURRENCY = 64;
const MAX_BODY = 256 * 1024;
const ATOL = 1e-5;
const RTOL = 1e-4;

interface Req {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
}

const valid = (x: Float32Array): Record<string, unknown> => ({
  id: 'v',
  inputs: [{ name: 'x', shape: [x.length / 16, 16], datatype: 'FP32', data: Array.from(x) }],
});

/** A valid binary-extension request for x. */
function binary(x: Float32Array): { body: Buffer; headerLength: number } {
  const header = Buffer.from(
    JSON.stringify({
      inputs: [
        { name: 'x', shape: [x.length / 16, 16], datatype: 'FP32', parameters: { binary_data_size: x.byteLength } },
      ],
    }),
  );
  return {
    body: Buffer.concat([header, Buffer.from(x.buffer, x.byteOffset, x.byteLength)]),
    headerLength: header.length,
  };
}

const INFER = '/v2/models/tiny/infer';

function malformed(p: Prng, i: number): Req {
  const junk = (n: number) => Buffer.from(Array.from({ length: n }, () => p.int(0, 256)));
  const pick = <T>(xs: readonly T[]): T => xs[p.int(0, xs.length)] as T;
  const x = p.floats(16, -1, 1);
  const json = (doc: unknown, headers: Record<string, string> = {}): Req => ({
    method: 'POST',
    path: INFER,
    headers: { 'content-type': 'application/json', ...headers },
    body: Buffer.from(typeof doc === 'string' ? doc : JSON.stringify(doc)),
  });
  const input = (over: Record<string, unknown>) => ({
    inputs: [{ name: 'x', shape: [1, 16], datatype: 'FP32', data: Array.from(x), ...over }],
  });
  switch (i % 16) {
    case 0:
      return {
        method: 'POST',
        path: INFER,
        headers: { 'content-type': pick(['application/json', 'application/octet-stream', 'text/plain']) },
        body: junk(p.int(0, 2000)),
      };
    case 1: {
      // A binary frame cut short, or with bytes left over.
      const b = binary(x);
      const body =
        p.next() < 0.5
          ? b.body.subarray(0, p.int(b.headerLength, b.body.length))
          : Buffer.concat([b.body, junk(p.int(1, 9))]);
      return {
        method: 'POST',
        path: INFER,
        headers: { 'inference-header-content-length': String(b.headerLength) },
        body,
      };
    }
    case 2: {
      // Header lengths that lie: past the body, negative, not a number, inside the JSON.
      const b = binary(x);
      const lie = pick([
        String(b.body.length + p.int(1, 1000)),
        String(-p.int(1, 100)),
        'abc',
        '99999999999',
        String(p.int(1, b.headerLength - 1)),
      ]);
      return { method: 'POST', path: INFER, headers: { 'inference-header-content-length': lie }, body: b.body };
    }
    case 3: {
      // Blob sizes that lie.
      const doc = {
        inputs: [
          {
            name: 'x',
            shape: [1, 16],
            datatype: 'FP32',
            parameters: { binary_data_size: pick([0, 1, 63, 65, 1e9, -4, 'x', 2 ** 60]) },
          },
        ],
      };
      const header = Buffer.from(JSON.stringify(doc));
      return {
        method: 'POST',
        path: INFER,
        headers: { 'inference-header-content-length': String(header.length) },
        body: Buffer.concat([header, junk(64)]),
      };
    }
    case 4:
      // Huge, negative, fractional and empty shapes.
      return json(
        input({
          shape: pick([[2 ** 40, 16], [1, 1e15], [-1, 16], [1.5, 16], [], [0, 16], [1, 16, 1], [9, 16], [1e300, 1]]),
        }),
      );
    case 5: {
      // Valid JSON cut anywhere.
      const text = JSON.stringify(valid(x));
      return json(text.slice(0, p.int(0, text.length - 1)));
    }
    case 6: {
      // Valid JSON with bytes flipped.
      const b = Buffer.from(JSON.stringify(valid(x)));
      for (let k = 0; k < 3; k++) b[p.int(0, b.length)] = pick([0x22, 0x7b, 0x5d, 0x2c, 0x3a, 0x00, 0xff, 0x5c]);
      return json(b.toString('latin1'));
    }
    case 7:
      // Nesting far past Triton's depth limit.
      return json(
        `{"inputs":[{"name":"x","shape":[1,16],"datatype":"FP32","data":${'['.repeat(p.int(100, 5000))}1${']'.repeat(10)}}]}`,
      );
    case 8:
      // Wrong types in every field.
      return json(
        pick([
          { inputs: 'x' },
          { inputs: [5] },
          input({ name: 7 }),
          input({ datatype: pick(['FP99', 'fp32', '', 3]) }),
          input({ data: pick(['abc', [true], [[1, 2], 'x'], null, {}]) }),
          input({ datatype: 'FP16' }),
          input({ datatype: 'BYTES', data: ['a'] }),
          {
            ...input({}),
            outputs: pick(['y', [{ name: 'q' }], [{ name: 'y', parameters: { classification: -1 } }], [{}]]),
          },
          {
            ...input({}),
            parameters: pick([
              { triton_x: 1 },
              { priority: -1 },
              { timeout: 'soon' },
              { binary_data_output: 'yes' },
              5,
            ]),
          },
          { ...input({}), id: pick([5, {}, []]) },
          [],
          null,
        ]),
      );
    case 9:
      // Both data and binary_data_size, or neither.
      return json(pick([input({ parameters: { binary_data_size: 64 } }), input({ data: undefined })]));
    case 10:
      // Wrong or unknown encodings.
      return {
        ...json(valid(x)),
        headers: { 'content-encoding': pick(['gzip', 'deflate', 'br', 'x-custom', 'gzip, gzip']) },
      };
    case 11:
      return {
        method: 'POST',
        path: `/v2/models/${pick(['nope', 'TINY', 'tiny%00', 't'.repeat(300)])}/infer`,
        headers: {},
        body: Buffer.from(JSON.stringify(valid(x))),
      };
    case 12:
      return {
        method: 'POST',
        path: `/v2/models/tiny/versions/${pick(['0', '2', 'abc', '-1', '1.0', '99999999999999999999'])}/infer`,
        headers: {},
        body: Buffer.from(JSON.stringify(valid(x))),
      };
    case 13: {
      // Known paths with a method they do not take.
      const [path, methods] = pick([
        [INFER, ['GET', 'PUT', 'DELETE']],
        ['/v2/repository/index', ['GET', 'PUT', 'DELETE']],
        ['/v2/models/stats', ['PUT', 'DELETE']],
        ['/v2/health/live', ['PUT', 'DELETE']],
        ['/v2/models/tiny/config', ['PUT', 'DELETE']],
      ] as const);
      return { method: pick(methods), path, headers: {} };
    }
    case 14:
      return {
        method: 'GET',
        path: pick([
          '/v2/x',
          '/v3',
          '/v2/models/tiny/versions',
          '/v2/models//infer',
          `/v2/${'a/'.repeat(50)}`,
          '/v2/models/tiny%zz/config',
        ]),
        headers: {},
      };
    default:
      // Oversized bodies, plain and as a gzip bomb; both rare, both 413.
      if (p.next() < 0.5)
        return { method: 'POST', path: INFER, headers: {}, body: Buffer.alloc(MAX_BODY + p.int(1, 1000), 0x20) };
      return { method: 'POST', path: INFER, headers: { 'content-encoding': 'gzip' }, body: BOMB };
  }
}

const BOMB = gzipSync(Buffer.alloc(4 * MAX_BODY, 0x20));

describe('end to end: the gateway survives 10,000 malformed requests', { timeout: 300_000 }, () => {
  let mesh: TestMesh;
  let repo: GatewayRepository;
  let pool: Pool;
  const ref = new Reference();

  before(async () => {
    repo = await makeGatewayRepository();
    mesh = await startTestMesh({
      modelRepository: repo.dir,
      models: repo.models,
      flags: { gateway: ['--max-body-bytes', String(MAX_BODY), '--max-tensor-elements', '65536'] },
    });
    pool = new Pool(mesh.url, { connections: CONCURRENCY });
  });
  after(async () => {
    await pool?.close();
    await ref.close();
    await mesh?.teardown();
    await repo?.remove();
  });

  it('answers every malformed request with a 4xx and every valid one correctly', async (t) => {
    const p = createPrng(0xf022);
    // Eight distinct valid inputs, their references computed here.
    const inputs = Array.from({ length: 8 }, (_, k) => createPrng(500 + k).floats(16 * (1 + (k % 3)), -1, 1));
    const wants = await Promise.all(
      inputs.map(
        async (x) =>
          (await ref.run('tiny', [{ name: 'x', dataType: 'FP32', dims: [x.length / 16, 16], data: x }])).y
            ?.data as Float32Array,
      ),
    );
    const total = MALFORMED + Math.floor(MALFORMED / (VALID_EVERY - 1));
    const statuses = new Map<number, number>();
    const failures: string[] = [];
    let next = 0;
    let malformedSent = 0;
    let validOk = 0;

    const one = async (i: number): Promise<void> => {
      if (i % VALID_EVERY === VALID_EVERY - 1) {
        const k = ((i / VALID_EVERY) % inputs.length) | 0;
        const x = inputs[k] as Float32Array;
        const useBinary = k % 2 === 0;
        const b = binary(x);
        const res = await pool.request({
          method: 'POST',
          path: INFER,
          headers: useBinary
            ? { 'inference-header-content-length': String(b.headerLength) }
            : { 'content-type': 'application/json' },
          body: useBinary ? b.body : JSON.stringify(valid(x)),
        });
        const text = await res.body.text();
        if (res.statusCode !== 200) {
          failures.push(`valid #${i}: ${res.statusCode} ${text}`);
          return;
        }
        const out = JSON.parse(text) as { outputs: Array<{ data: number[] }> };
        if (toleranceRatio(out.outputs[0]?.data ?? [], wants[k] as Float32Array, ATOL, RTOL) > 1)
          failures.push(`valid #${i}: wrong outputs`);
        else validOk++;
        return;
      }
      const req = malformed(p, malformedSent++);
      const res = await pool.request({
        method: req.method,
        path: req.path,
        headers: req.headers,
        ...(req.body ? { body: req.body } : {}),
      });
      const text = await res.body.text();
      statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
      if (res.statusCode < 400 || res.statusCode >= 500) {
        failures.push(
          `${req.method} ${req.path} ${JSON.stringify(req.headers)} ${req.body?.subarray(0, 120).toString('latin1')} → ${res.statusCode} ${text.slice(0, 200)}`,
        );
        return;
      }
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        body = undefined;
      }
      const keys = body && typeof body === 'object' ? Object.keys(body) : [];
      if (keys.length !== 1 || keys[0] !== 'error' || typeof (body as { error: unknown }).error !== 'string') {
        failures.push(`${req.method} ${req.path} → ${res.statusCode} body ${text.slice(0, 200)}`);
      }
    };
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < total && malformedSent < MALFORMED) await one(next++);
      }),
    );

    assert.deepEqual(failures.slice(0, 10), []);
    assert.equal(malformedSent, MALFORMED);
    assert.ok(validOk >= Math.floor(MALFORMED / VALID_EVERY) - 1, String(validOk));
    for (const status of statuses.keys()) assert.ok([400, 404, 405, 413, 415].includes(status), String(status));
    const gateway = mesh.services.find((s) => s.name === 'gateway');
    assert.equal(gateway?.child.exitCode, null, 'the gateway is still running');
    const errors = mesh.lines.filter((l) => l.startsWith('[gateway]') && /"level":(50|60)/.test(l));
    assert.deepEqual(errors, []);
    t.diagnostic(
      `statuses ${JSON.stringify(Object.fromEntries([...statuses].sort(([a], [b]) => a - b)))}, valid ${validOk}`,
    );
  });

  it('answers broken request lines and framing on raw sockets with a 4xx or not at all', async () => {
    const { hostname, port } = new URL(mesh.url);
    const p = createPrng(0x50c);
    const payloads = (i: number): Buffer => {
      const junk = (n: number) => Buffer.from(Array.from({ length: n }, () => p.int(0, 256)));
      switch (i % 6) {
        case 0:
          return junk(p.int(1, 300));
        case 1:
          return Buffer.from(
            `POST ${INFER} HTTP/1.1\r\nHost: x\r\nContent-Length: ${p.int(100, 10_000)}\r\n\r\n{"inputs":`,
          );
        case 2:
          return Buffer.from(`GET /v2\u0000/health HTTP/1.1\r\nHost: x\r\n\r\n`);
        case 3:
          return Buffer.from(
            `POST ${INFER} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n`,
          );
        case 4:
          return Buffer.from(
            `POST ${INFER} HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\nabcde`,
          );
        default:
          return Buffer.from(`${'A'.repeat(p.int(1, 20))} /v2 HTTP/9.9\r\n${'X-'.repeat(p.int(0, 200))}: y\r\n\r\n`);
      }
    };
    const statuses: string[] = [];
    const send = (payload: Buffer) =>
      new Promise<void>((resolve) => {
        const s = connect({ host: hostname, port: Number(port) });
        let got = '';
        s.setTimeout(5_000, () => s.destroy());
        s.on('data', (c: Buffer) => {
          got += c.toString('latin1');
        });
        s.on('error', () => undefined);
        s.on('close', () => {
          const m = /^HTTP\/1\.[01] (\d{3})/.exec(got);
          statuses.push(m ? (m[1] as string) : 'none');
          resolve();
        });
        s.end(payload);
      });
    for (let i = 0; i < 300; i += 30) await Promise.all(Array.from({ length: 30 }, (_, k) => send(payloads(i + k))));
    assert.equal(statuses.length, 300);
    const bad = statuses.filter((s) => s !== 'none' && !s.startsWith('4'));
    assert.deepEqual(bad, []);
    const res = await pool.request({ method: 'GET', path: '/v2/health/live' });
    await res.body.text();
    assert.equal(res.statusCode, 200);
  });
});
