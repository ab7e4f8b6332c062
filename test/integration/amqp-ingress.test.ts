import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import {
  DIRECT_REPLY_TO,
  decodeMessage,
  encodeMessage,
  type IngressReply,
  type IngressReplyError,
  ingressNames,
  MeshClient,
  MeshClientError,
  stringsOf,
  tensor,
  valuesOf,
} from '@ge-mesh/client';
import { ROOT } from '@ge-mesh/launcher';
import { createPrng } from '@ge-mesh/onnx';
import amqp, { type Channel, type ChannelModel } from 'amqplib';
import { type GatewayRepository, makeGatewayRepository } from '../support/gateway-repository.js';
import { freePort, RABBITMQ_URL, startTestMesh, type TestMesh } from '../support/mesh-harness.js';
import { Reference, toleranceRatio } from '../support/reference.js';

/**
 * Producers over AMQP: the typed client with RabbitMQ's direct reply-to and
 * with its own reply queue, concurrent calls, the same validation answers as
 * REST, messages that cannot be answered, a fuzz of malformed messages, and
 * the runnable example.
 */
const ATOL = 1e-5;
const RTOL = 1e-4;
const MAX_BODY = 64 * 1024;

const xs = (batch: number, seed: number) => createPrng(seed).floats(batch * 16, -1, 1);

describe('AMQP ingress: producers get the same API as REST', { timeout: 300_000 }, () => {
  let mesh: TestMesh;
  let repo: GatewayRepository;
  let metricsUrl: string;
  let conn: ChannelModel;
  const ref = new Reference();
  const tinyRef = async (x: Float32Array, batch: number) =>
    (await ref.run('tiny', [{ name: 'x', dataType: 'FP32', dims: [batch, 16], data: x }])).y?.data as Float32Array;

  before(async () => {
    repo = await makeGatewayRepository();
    const port = await freePort();
    metricsUrl = `http://127.0.0.1:${port}/metrics`;
    mesh = await startTestMesh({
      modelRepository: repo.dir,
      models: repo.models,
      // The gateway's own port (the flag): GEMESH_METRICS_PORT would give every service the same one.
      flags: { gateway: ['--metrics-port', String(port), '--max-body-bytes', String(MAX_BODY)] },
    });
    conn = await amqp.connect(RABBITMQ_URL, { noDelay: true });
  });
  after(async () => {
    await conn?.close().catch(() => undefined);
    await ref.close();
    await mesh?.teardown();
    await repo?.remove();
  });

  const connect = (replies: 'direct' | 'queue') =>
    MeshClient.connect({ url: RABBITMQ_URL, namespace: mesh.namespace, replies, timeoutMs: 30_000 });

  for (const replies of ['direct', 'queue'] as const) {
    it(`infers through the client with replies on ${replies === 'direct' ? 'direct reply-to' : 'its own queue'}`, async () => {
      const client = await connect(replies);
      try {
        const x = xs(2, 7);
        const res = await client.infer({
          model: 'tiny',
          id: `r-${replies}`,
          inputs: [tensor('x', 'FP32', [2, 16], x)],
        });
        assert.deepEqual([res.model_name, res.model_version, res.id], ['tiny', '1', `r-${replies}`]);
        assert.deepEqual(
          res.outputs.map((o) => [o.name, o.datatype, o.shape]),
          [['y', 'FP32', [2, 4]]],
        );
        const got = valuesOf(res.outputs[0] as never) as Float32Array;
        assert.ok(toleranceRatio(got, await tinyRef(x, 2), ATOL, RTOL) <= 1);
      } finally {
        await client.close();
      }
    });
  }

  it('answers 40 concurrent calls on one direct reply-to channel, each with its own outputs', async () => {
    const client = await connect('direct');
    try {
      const sizes = Array.from({ length: 40 }, (_, i) => 1 + (i % 3));
      const inputs = sizes.map((b, i) => xs(b, 1000 + i));
      const results = await Promise.all(
        inputs.map((x, i) =>
          client.infer({ model: 'tiny', id: String(i), inputs: [tensor('x', 'FP32', [sizes[i] as number, 16], x)] }),
        ),
      );
      for (const [i, res] of results.entries()) {
        assert.equal(res.id, String(i));
        const want = await tinyRef(inputs[i] as Float32Array, sizes[i] as number);
        assert.ok(toleranceRatio(valuesOf(res.outputs[0] as never) as Float32Array, want, ATOL, RTOL) <= 1, String(i));
      }
      assert.equal(client.pending, 0);
    } finally {
      await client.close();
    }
  });

  it('returns classification outputs as BYTES, as REST does', async () => {
    const client = await connect('direct');
    try {
      const x = xs(1, 3);
      const want = await tinyRef(x, 1);
      const res = await client.infer({
        model: 'tiny',
        inputs: [tensor('x', 'FP32', [1, 16], x)],
        outputs: [{ name: 'y', parameters: { classification: 1 } }],
      });
      const best = [0, 1, 2, 3].reduce((b, i) => ((want[i] as number) > (want[b] as number) ? i : b), 0);
      assert.equal(res.outputs[0]?.datatype, 'BYTES');
      assert.equal(stringsOf(res.outputs[0] as never)[0]?.split(':')[1], String(best));
    } finally {
      await client.close();
    }
  });

  it('refuses bad requests with the code, status and text REST gives', async () => {
    const client = await connect('direct');
    const restError = async (path: string, doc: unknown) => {
      const r = await fetch(`${mesh.url}${path}`, { method: 'POST', body: JSON.stringify(doc) });
      return { status: r.status, error: ((await r.json()) as { error: string }).error };
    };
    const amqpError = async (req: Parameters<MeshClient['infer']>[0]) => {
      try {
        await client.infer(req);
      } catch (err) {
        assert.ok(err instanceof MeshClientError, String(err));
        return { status: err.status, error: err.message, code: err.code };
      }
      assert.fail('expected an error reply');
    };
    const x16 = Array.from(xs(1, 1));
    const cases: Array<[string, string, unknown, Parameters<MeshClient['infer']>[0], string]> = [
      [
        'unknown model',
        '/v2/models/nope/infer',
        { inputs: [{ name: 'x', shape: [1, 16], datatype: 'FP32', data: x16 }] },
        { model: 'nope', inputs: [tensor('x', 'FP32', [1, 16], xs(1, 1))] },
        'MODEL_NOT_FOUND',
      ],
      [
        'unknown version',
        '/v2/models/tiny/versions/4/infer',
        { inputs: [{ name: 'x', shape: [1, 16], datatype: 'FP32', data: x16 }] },
        { model: 'tiny', version: '4', inputs: [tensor('x', 'FP32', [1, 16], xs(1, 1))] },
        'MODEL_VERSION_NOT_FOUND',
      ],
      [
        'wrong shape',
        '/v2/models/tiny/infer',
        { inputs: [{ name: 'x', shape: [2, 8], datatype: 'FP32', data: x16 }] },
        { model: 'tiny', inputs: [tensor('x', 'FP32', [2, 8], xs(1, 1))] },
        'SHAPE_MISMATCH',
      ],
      [
        'batch too large',
        '/v2/models/tiny/infer',
        { inputs: [{ name: 'x', shape: [9, 16], datatype: 'FP32', data: Array(144).fill(0) }] },
        { model: 'tiny', inputs: [tensor('x', 'FP32', [9, 16], new Float32Array(144))] },
        'BATCH_TOO_LARGE',
      ],
      [
        'unknown input',
        '/v2/models/tiny/infer',
        { id: 'q', inputs: [{ name: 'z', shape: [1, 16], datatype: 'FP32', data: x16 }] },
        { model: 'tiny', id: 'q', inputs: [tensor('z', 'FP32', [1, 16], xs(1, 1))] },
        'UNKNOWN_INPUT',
      ],
      [
        'reserved parameter',
        '/v2/models/tiny/infer',
        { parameters: { triton_x: true }, inputs: [{ name: 'x', shape: [1, 16], datatype: 'FP32', data: x16 }] },
        { model: 'tiny', parameters: { triton_x: true }, inputs: [tensor('x', 'FP32', [1, 16], xs(1, 1))] },
        'INVALID_ARGUMENT',
      ],
    ];
    try {
      for (const [name, path, doc, req, code] of cases) {
        const rest = await restError(path, doc);
        const viaAmqp = await amqpError(req);
        assert.deepEqual({ status: viaAmqp.status, error: viaAmqp.error }, rest, name);
        assert.equal(viaAmqp.code, code, name);
      }
    } finally {
      await client.close();
    }
  });

  /** A raw channel consuming direct reply-to, for messages the client would never send. */
  async function rawProducer(): Promise<{
    ch: Channel;
    send: (body: Buffer, props?: Record<string, unknown>) => Promise<IngressReply>;
    close: () => Promise<void>;
  }> {
    const ch = await conn.createChannel();
    const waiting = new Map<string, (r: IngressReply) => void>();
    await ch.consume(
      DIRECT_REPLY_TO,
      (msg) => {
        const id = msg?.properties.correlationId as string | undefined;
        if (msg && id) waiting.get(id)?.(decodeMessage(msg.content) as IngressReply);
      },
      { noAck: true },
    );
    const queue = ingressNames(mesh.namespace).queue;
    return {
      ch,
      send: (body, props = {}) =>
        new Promise((resolve) => {
          const correlationId = randomUUID();
          waiting.set(correlationId, resolve);
          ch.sendToQueue(queue, body, { replyTo: DIRECT_REPLY_TO, correlationId, ...props });
        }),
      close: () => ch.close(),
    };
  }

  const errorsCounted = async (code: string) => {
    const text = await (await fetch(metricsUrl)).text();
    const line = text
      .split('\n')
      .find((l) => l.startsWith(`gemesh_request_errors_total{code="${code}",ingress="amqp"} `));
    return line ? Number(line.split(' ')[1]) : 0;
  };

  it('answers undecodable, unaddressed and oversized messages; drops what it cannot answer', async () => {
    const p = await rawProducer();
    try {
      assert.deepEqual(await p.send(Buffer.from('{"not":"msgpack"')), {
        error: 'the request body is not msgpack',
        code: 'INVALID_ARGUMENT',
        status: 400,
      });
      assert.deepEqual(await p.send(encodeMessage([1, 2, 3] as never)), {
        error: "the request needs 'model', the model's name as a string",
        code: 'INVALID_ARGUMENT',
        status: 400,
      });
      const big = encodeMessage({ model: 'tiny', inputs: [tensor('x', 'FP32', [1, 16384], new Float32Array(16384))] });
      assert.deepEqual(await p.send(big), {
        error: `request body is larger than the limit of ${MAX_BODY} bytes`,
        code: 'PAYLOAD_TOO_LARGE',
        status: 413,
      });

      // No reply_to, or a reply_to inside the mesh: acked, counted, never answered (nor looped).
      const before = await errorsCounted('NO_REPLY_TO');
      const queue = ingressNames(mesh.namespace).queue;
      const valid = encodeMessage({ model: 'tiny', inputs: [tensor('x', 'FP32', [1, 16], xs(1, 2))] });
      p.ch.sendToQueue(queue, valid, { correlationId: 'none' });
      p.ch.sendToQueue(queue, valid, { replyTo: queue, correlationId: 'loop' });
      p.ch.sendToQueue(queue, valid, { replyTo: `${mesh.namespace}.requests.tiny`, correlationId: 'internal' });
      const until = Date.now() + 10_000;
      while ((await errorsCounted('NO_REPLY_TO')) < before + 3 && Date.now() < until)
        await new Promise((r) => setTimeout(r, 50));
      assert.equal(await errorsCounted('NO_REPLY_TO'), before + 3);

      // A message id stands in for a missing correlation id.
      const c = await conn.createChannel();
      const viaMessageId = await new Promise<string | undefined>((resolve) => {
        void c
          .consume(DIRECT_REPLY_TO, (m) => resolve(m?.properties.correlationId as string | undefined), { noAck: true })
          .then(() => c.sendToQueue(queue, valid, { replyTo: DIRECT_REPLY_TO, messageId: 'm-42' }));
      });
      await c.close();
      assert.equal(viaMessageId, 'm-42');
    } finally {
      await p.close().catch(() => undefined);
    }
  });

  it('survives 600 malformed messages: every answer a 4xx error, and valid requests still answered', async () => {
    const p = await rawProducer();
    const prng = createPrng(0xa11ce);
    const valid = { model: 'tiny', id: 'v', inputs: [tensor('x', 'FP32', [1, 16], xs(1, 9))] };
    const validBytes = encodeMessage(valid);
    const junk = (n: number) => Buffer.from(Array.from({ length: n }, () => prng.int(0, 256)));
    const makers: Array<() => Buffer> = [
      () => junk(prng.int(1, 200)),
      () => validBytes.subarray(0, prng.int(1, validBytes.length - 1)),
      () => encodeMessage({ ...valid, inputs: [{ ...valid.inputs[0], shape: [prng.int(0, 1e9), 1e6] }] } as never),
      () => encodeMessage({ ...valid, inputs: [{ ...valid.inputs[0], datatype: 'FP99' }] } as never),
      // Anything but the 64 bytes [1, 16] FP32 needs.
      () => encodeMessage({ ...valid, inputs: [{ ...valid.inputs[0], data: junk(prng.int(0, 60)) }] } as never),
      () =>
        encodeMessage({
          ...valid,
          inputs: [{ ...valid.inputs[0], datatype: 'BYTES', data: junk(prng.int(0, 40)) }],
        } as never),
      () =>
        encodeMessage({ ...valid, model: prng.int(0, 2) ? 'tiny' : 'nope', version: junk(3).toString('hex') } as never),
      () => encodeMessage({ ...valid, inputs: 'x', outputs: [{ name: 5 }] } as never),
      () => encodeMessage({ ...valid, parameters: { priority: -1, timeout: 'soon' } } as never),
      () => encodeMessage({ ...valid, inputs: [{ ...valid.inputs[0], shape: [1, -16] }] } as never),
      () => encodeMessage(JSON.parse('{"__proto__":{"polluted":true},"model":"tiny","inputs":[]}')),
    ];
    try {
      const replies = await Promise.all(
        Array.from({ length: 600 }, (_, i) => p.send((makers[i % makers.length] as () => Buffer)())),
      );
      const statuses = new Map<number, number>();
      for (const r of replies) {
        assert.ok('error' in r, JSON.stringify(r).slice(0, 200));
        const e = r as IngressReplyError;
        assert.ok(e.status >= 400 && e.status < 500, `${e.status} ${e.code} ${e.error}`);
        statuses.set(e.status, (statuses.get(e.status) ?? 0) + 1);
      }
      assert.equal(replies.length, 600);
      const ok = await p.send(validBytes);
      assert.ok(!('error' in ok), JSON.stringify(ok));
      assert.equal(({} as { polluted?: boolean }).polluted, undefined);
    } finally {
      await p.close().catch(() => undefined);
    }
  });

  it('runs the example producer (packages/client/examples/infer-tiny.ts)', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'packages/client/examples/infer-tiny.ts'], {
      cwd: ROOT,
      env: { ...process.env, GEMESH_RABBITMQ_URL: RABBITMQ_URL, GEMESH_NAMESPACE: mesh.namespace },
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      err += c.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    assert.equal(code, 0, err);
    const m = /^tiny v1 y \[1,4\] (\[.*\])$/m.exec(out);
    assert.ok(m, out);
    const got = JSON.parse(m[1] as string) as number[];
    const want = await tinyRef(
      Float32Array.from({ length: 16 }, (_, i) => i / 16),
      1,
    );
    assert.ok(toleranceRatio(got, want, 1e-5, 1e-4) <= 1, `${got} vs ${Array.from(want)}`);
  });
});
