import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { demoModel, sampleInputs } from '@ge-mesh/demo-models';
import { createPrng } from '@ge-mesh/onnx';
import { GRPC_STATUS as S } from '@ge-mesh/protocol';
import { credentials, Client as GrpcClient, type ServiceError } from '@grpc/grpc-js';
import { request } from 'undici';
import { TRITON_CLIENT_GOLDEN } from '../fixtures/grpc-golden.js';
import { bytesElements, f32Bytes, f32Of, GrpcTestClient } from '../support/grpc-client.js';
import { freePort, startTestMesh, type TestMesh } from '../support/mesh-harness.js';
import { jsonInferBody, Reference, toleranceRatio } from '../support/reference.js';

/**
 * The gateway's gRPC API (inference.GRPCInferenceService and
 * grpc.health.v1.Health) through the running mesh, with a grpc-js client
 * built from the project's .proto files: every RPC, outputs equal to an
 * independent onnxruntime run for raw and typed contents, classification,
 * streaming with ids matched, Triton's gRPC status codes and messages, API
 * keys in metadata, deadlines and the `timeout` parameter.
 */
const ADMIN = 'admin-key-0123456789abcdef';
const TINY_ONLY = 'tiny-only-key-0123456789ab';
const ATOL = 1e-5;
const RTOL = 1e-4;

type Msg = Record<string, unknown>;
interface InferResponse {
  model_name: string;
  model_version: string;
  id: string;
  outputs: Array<{ name: string; datatype: string; shape: number[] }>;
  raw_output_contents: Buffer[];
}

function xs(batch: number, seed: number): Float32Array {
  return createPrng(seed).floats(batch * 16, -1, 1);
}

function tinyRaw(x: Float32Array, batch: number, extra: Msg = {}): Msg {
  return {
    model_name: 'tiny',
    inputs: [{ name: 'x', datatype: 'FP32', shape: [batch, 16] }],
    raw_input_contents: [f32Bytes(x)],
    ...extra,
  };
}

describe('end to end: gateway gRPC API', { timeout: 300_000 }, () => {
  let mesh: TestMesh;
  let client: GrpcTestClient;
  const ref = new Reference();

  before(async () => {
    const grpcPort = await freePort();
    mesh = await startTestMesh({
      grpcPort,
      flags: { gateway: ['--api-keys', `${ADMIN} admin;${TINY_ONLY} models=tiny`] },
    });
    client = new GrpcTestClient(`127.0.0.1:${grpcPort}`, ADMIN);
  });
  after(async () => {
    client?.close();
    await ref.close();
    await mesh?.teardown();
  });

  const tinyRef = async (x: Float32Array, batch: number) =>
    (await ref.run('tiny', [{ name: 'x', dataType: 'FP32', dims: [batch, 16], data: x }])).y?.data as Float32Array;

  it('health: Check and Watch say SERVING; an unknown service is NOT_FOUND', async () => {
    assert.deepEqual(await client.call('Check', { service: '' }, { service: 'health', key: null }), {
      status: 'SERVING',
    });
    assert.deepEqual(
      await client.call('Check', { service: 'inference.GRPCInferenceService' }, { service: 'health', key: null }),
      { status: 'SERVING' },
    );
    const [code] = await client.error('Check', { service: 'nope' }, { service: 'health', key: null });
    assert.equal(code, S.NOT_FOUND);
    const first = await new Promise<Msg>((resolve, reject) => {
      const watch = (client.health.Watch as (r: Msg) => NodeJS.EventEmitter & { cancel(): void })({ service: '' });
      watch.on('data', (m: Msg) => {
        resolve(m);
        watch.cancel();
      });
      watch.on('error', (err: { code: number }) => {
        if (err.code !== S.CANCELLED) reject(err);
      });
    });
    assert.deepEqual(first, { status: 'SERVING' });
  });

  it('server and model metadata, readiness and config', async () => {
    assert.deepEqual(await client.call('ServerLive', {}, { key: null }), { live: true });
    assert.deepEqual(await client.call('ServerReady', {}, { key: null }), { ready: true });
    const meta = await client.call('ServerMetadata', {});
    assert.equal(meta.name, 'ge-mesh');
    assert.ok((meta.extensions as string[]).includes('model_repository'));
    assert.deepEqual(await client.call('ModelReady', { name: 'tiny', version: '' }), { ready: true });
    assert.deepEqual(await client.call('ModelReady', { name: 'tiny', version: '1' }), { ready: true });
    assert.deepEqual(await client.call('ModelReady', { name: 'nope', version: '' }), { ready: false });
    // A version that is not a number is refused before any model is looked up, as Triton's std::stol refuses it.
    const notANumber =
      "failed to get model version from specified version string 'x' (details: stol), version should be an integral value > 0";
    for (const rpc of ['ModelReady', 'ModelStatistics'])
      assert.deepEqual(await client.error(rpc, { name: 'tiny', version: 'x' }), [S.INVALID_ARGUMENT, notANumber], rpc);
    assert.deepEqual(await client.call('ModelMetadata', { name: 'tiny', version: '' }), {
      name: 'tiny',
      versions: ['1'],
      platform: 'onnxruntime_onnx',
      inputs: [{ name: 'x', datatype: 'FP32', shape: [-1, 16] }],
      outputs: [{ name: 'y', datatype: 'FP32', shape: [-1, 4] }],
    });
    assert.deepEqual(await client.error('ModelMetadata', { name: 'nope', version: '' }), [
      S.NOT_FOUND,
      "Request for unknown model: 'nope' is not found",
    ]);
    assert.deepEqual(await client.error('ModelMetadata', { name: 'tiny', version: '7' }), [
      S.NOT_FOUND,
      "Request for unknown model: 'tiny' version 7 is not found",
    ]);
    assert.deepEqual(await client.error('ModelMetadata', { name: 'tiny', version: 'x' }), [
      S.INVALID_ARGUMENT,
      notANumber,
    ]);

    // ModelConfig: the same content as REST's /config.
    const { config } = (await client.call('ModelConfig', { name: 'resnet18', version: '' })) as { config: Msg };
    const rest = (await (
      await request(`${mesh.url}/v2/models/resnet18/config`, { headers: { authorization: `Bearer ${ADMIN}` } })
    ).body.json()) as Msg;
    assert.equal(config.name, rest.name);
    assert.equal(config.platform, rest.platform);
    assert.equal(config.backend, rest.backend);
    assert.equal(config.max_batch_size, rest.max_batch_size);
    const tensors = (c: Msg, k: string) =>
      (c[k] as Msg[]).map((t) => [t.name, t.data_type, (t.dims as unknown[]).map(Number)]);
    assert.deepEqual(tensors(config, 'input'), tensors(rest, 'input'));
    assert.deepEqual(tensors(config, 'output'), tensors(rest, 'output'));
    const db = (c: Msg) => c.dynamic_batching as Msg;
    assert.deepEqual(db(config).preferred_batch_size, db(rest).preferred_batch_size);
    assert.equal(Number(db(config).max_queue_delay_microseconds), Number(db(rest).max_queue_delay_microseconds));
    assert.deepEqual(
      (config.instance_group as Msg[]).map((g) => [g.name, g.kind, g.count]),
      (rest.instance_group as Msg[]).map((g) => [g.name, g.kind, g.count]),
    );
    assert.deepEqual((config.version_policy as Msg).latest, (rest.version_policy as Msg).latest);
  });

  it('ModelInfer: raw and typed contents equal the reference; requested outputs and classification', async () => {
    const x = xs(3, 1);
    const want = await tinyRef(x, 3);
    const res = await client.call<InferResponse>('ModelInfer', tinyRaw(x, 3, { id: 'r1' }));
    assert.equal(res.model_name, 'tiny');
    assert.equal(res.model_version, '1');
    assert.equal(res.id, 'r1');
    assert.deepEqual(res.outputs, [{ name: 'y', datatype: 'FP32', shape: [3, 4], parameters: {}, contents: null }]);
    assert.ok(toleranceRatio(f32Of(res.raw_output_contents[0] as Buffer), want, ATOL, RTOL) <= 1);

    const typed = await client.call<InferResponse>('ModelInfer', {
      model_name: 'tiny',
      model_version: '1',
      inputs: [{ name: 'x', datatype: 'FP32', shape: [3, 16], contents: { fp32_contents: Array.from(x) } }],
      outputs: [{ name: 'y' }],
    });
    assert.ok(toleranceRatio(f32Of(typed.raw_output_contents[0] as Buffer), want, ATOL, RTOL) <= 1);

    // Top-2 classes per row, "value:index" as Triton prints them.
    const cls = await client.call<InferResponse>(
      'ModelInfer',
      tinyRaw(x, 3, { outputs: [{ name: 'y', parameters: { classification: { int64_param: 2 } } }] }),
    );
    assert.deepEqual(cls.outputs[0]?.datatype, 'BYTES');
    assert.deepEqual(cls.outputs[0]?.shape, [3, 2]);
    const got = bytesElements(cls.raw_output_contents[0] as Buffer);
    for (let row = 0; row < 3; row++) {
      const values = Array.from(want.subarray(row * 4, row * 4 + 4));
      const order = values.map((_, i) => i).sort((a, b) => (values[b] as number) - (values[a] as number));
      assert.deepEqual(
        got.slice(row * 2, row * 2 + 2).map((s) => Number(s.split(':')[1])),
        order.slice(0, 2),
      );
    }

    // INT64 typed contents (text_encoder) against the reference.
    const te = sampleInputs(demoModel('text_encoder'), 2, 7);
    const teRef = await ref.run('text_encoder', te);
    const teRes = await client.call<InferResponse>('ModelInfer', {
      model_name: 'text_encoder',
      inputs: te.map((t) => ({
        name: t.name,
        datatype: t.dataType,
        shape: [...t.dims],
        contents: { int64_contents: Array.from(t.data as BigInt64Array, Number) },
      })),
      outputs: [{ name: 'pooled' }],
    });
    assert.deepEqual(teRes.outputs[0]?.shape, [2, 64]);
    assert.ok(
      toleranceRatio(f32Of(teRes.raw_output_contents[0] as Buffer), teRef.pooled?.data as Float32Array, ATOL, RTOL) <=
        1,
    );
  });

  it('every demo model: raw and typed contents give the outputs REST gives, and the reference', async () => {
    for (const [i, name] of ['ocr_cls', 'resnet18', 'text_encoder', 'tiny'].entries()) {
      const inputs = sampleInputs(demoModel(name), 2, 40 + i);
      const want = await ref.run(name, inputs);
      const rest = (await (
        await request(`${mesh.url}/v2/models/${name}/infer`, {
          method: 'POST',
          headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
          body: jsonInferBody(inputs),
        })
      ).body.json()) as { outputs: Array<{ name: string; datatype: string; shape: number[]; data: number[] }> };
      const bytesOf = (t: (typeof inputs)[number]) => Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
      const raw = await client.call<InferResponse>('ModelInfer', {
        model_name: name,
        inputs: inputs.map((t) => ({ name: t.name, datatype: t.dataType, shape: t.dims })),
        raw_input_contents: inputs.map(bytesOf),
      });
      const typed = await client.call<InferResponse>('ModelInfer', {
        model_name: name,
        inputs: inputs.map((t) => ({
          name: t.name,
          datatype: t.dataType,
          shape: t.dims,
          contents:
            t.data instanceof BigInt64Array
              ? { int64_contents: Array.from(t.data, Number) }
              : { fp32_contents: Array.from(t.data) },
        })),
      });
      assert.deepEqual(
        raw.outputs.map((o) => [o.name, o.datatype, o.shape]),
        rest.outputs.map((o) => [o.name, o.datatype, o.shape]),
        `${name}: the same outputs as REST`,
      );
      rest.outputs.forEach((o, k) => {
        assert.equal(o.datatype, 'FP32');
        const reference = want[o.name]?.data as Float32Array;
        for (const [how, res] of [
          ['raw', raw],
          ['typed', typed],
        ] as const) {
          const got = f32Of(res.raw_output_contents[k] as Buffer);
          assert.ok(toleranceRatio(got, o.data, ATOL, RTOL) <= 1, `${name} ${o.name} ${how}: equal to REST`);
          assert.ok(
            toleranceRatio(got, reference, ATOL, RTOL) <= 1,
            `${name} ${o.name} ${how}: equal to the reference`,
          );
        }
      });
    }
  });

  it('10,000 malformed messages (truncated, wrong wire types, huge sizes, noise): each answered as bad input or as the request it still is, the server serves on', async () => {
    const valid = Buffer.from(TRITON_CLIENT_GOLDEN.modelInferRequest, 'hex');
    const prng = createPrng(2026);
    const int = (n: number) => Math.floor(prng.next() * n);
    const varint = (v: number) => {
      const out: number[] = [];
      while (v > 0x7f) {
        out.push((v & 0x7f) | 0x80);
        v = Math.floor(v / 128);
      }
      out.push(v);
      return Buffer.from(out);
    };
    const kinds = ['truncated', 'wrong wire type', 'huge declared size', 'noise', 'bytes flipped'] as const;
    const frame = (kind: (typeof kinds)[number]): Buffer => {
      switch (kind) {
        case 'truncated':
          return valid.subarray(0, 1 + int(valid.length - 1));
        case 'wrong wire type': {
          // The tag of the first field (model_name, wire type 2) rewritten to each other wire type.
          const b = Buffer.from(valid);
          b[0] = ((b[0] as number) & ~7) | ([0, 1, 3, 4, 5][int(5)] as number);
          return b;
        }
        case 'huge declared size':
          // raw_input_contents (field 7, length-delimited) claiming up to 4 GiB with a few bytes behind.
          return Buffer.concat([
            valid.subarray(0, 20),
            Buffer.from([0x3a]),
            varint(2 ** 20 + int(2 ** 32 - 2 ** 20)),
            Buffer.alloc(int(64)),
          ]);
        case 'noise':
          return Buffer.from(Array.from({ length: 1 + int(200) }, () => int(256)));
        case 'bytes flipped': {
          const b = Buffer.from(valid);
          for (let n = 0; n < 1 + int(4); n++) b[int(b.length)] = int(256);
          return b;
        }
      }
    };
    const raw = new GrpcClient(client.address, credentials.createInsecure());
    const outcomes = new Map<string, number>();
    const total = 10_000;
    let next = 0;
    const one = async (): Promise<void> => {
      while (next < total) {
        const kind = kinds[next++ % kinds.length] as (typeof kinds)[number];
        const code = await new Promise<string>((resolve) => {
          raw.makeUnaryRequest(
            '/inference.GRPCInferenceService/ModelInfer',
            (b: Buffer) => b,
            (b: Buffer) => b,
            frame(kind),
            client.metadata(),
            (err: ServiceError | null) => resolve(err ? `${err.code} ${err.details.split(':')[0]}` : `${S.OK}`),
          );
        });
        const key = `${kind}: ${code}`;
        outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
      }
    };
    await Promise.all(Array.from({ length: 32 }, one));
    raw.close();
    process.stderr.write(`fuzz outcomes (kind: gRPC status): ${JSON.stringify(Object.fromEntries(outcomes))}\n`);
    let answered = 0;
    for (const [key, n] of outcomes) {
      const [code] = (key.split(': ')[1] ?? '').split(' ');
      // Undecodable: INVALID_ARGUMENT. Still a request (protobuf skips what it does not know, and
      // flipped tensor bytes are still tensor bytes): answered as such, with its result, a bad
      // request (INVALID_ARGUMENT) or an unknown model (NOT_FOUND).
      const ok = ([S.OK, S.INVALID_ARGUMENT, S.NOT_FOUND] as number[]).includes(Number(code));
      assert.ok(ok, `${n} × ${key}`);
      answered += n;
    }
    assert.equal(answered, total);
    // The server and the mesh behind it serve on.
    const x = xs(1, 9);
    const res = await client.call<InferResponse>('ModelInfer', tinyRaw(x, 1));
    assert.ok(toleranceRatio(f32Of(res.raw_output_contents[0] as Buffer), await tinyRef(x, 1), ATOL, RTOL) <= 1);
    for (const svc of mesh.services) assert.equal(svc.child.exitCode, null, `${svc.name} alive`);
  });

  it("errors: Triton's gRPC status and message", async () => {
    const x = xs(1, 2);
    assert.deepEqual(
      await client.error('ModelInfer', {
        model_name: 'tiny',
        inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 8] }],
        raw_input_contents: [f32Bytes(x.subarray(0, 8))],
      }),
      [
        S.INVALID_ARGUMENT,
        "unexpected shape for input 'x' for model 'tiny'. Expected [-1,16], got [1,8]. NOTE: Setting a non-zero max_batch_size in the model config requires a batch dimension to be prepended to each input shape. If you want to specify the full shape including the batch dim in your input dims config, try setting max_batch_size to zero. See the model configuration docs for more info on max_batch_size.",
      ],
    );
    assert.deepEqual(await client.error('ModelInfer', tinyRaw(xs(9, 3), 9)), [
      S.INVALID_ARGUMENT,
      "inference request batch-size must be <= 8 for 'tiny'",
    ]);
    assert.deepEqual(await client.error('ModelInfer', { ...tinyRaw(x, 1), model_name: 'nope' }), [
      S.NOT_FOUND,
      "Request for unknown model: 'nope' is not found",
    ]);
    assert.deepEqual(
      await client.error('ModelInfer', tinyRaw(x, 1, { raw_input_contents: [f32Bytes(x), f32Bytes(x)] })),
      [S.INVALID_ARGUMENT, 'expected 1 inputs but got 2 raw input contents'],
    );
    assert.deepEqual(
      await client.error('ModelInfer', tinyRaw(x, 1, { parameters: { triton_x: { bool_param: true } } })),
      [
        S.INVALID_ARGUMENT,
        "parameter keys starting with 'triton_' are reserved for Triton usage. Only the following keys starting with 'triton_' are allowed: triton_enable_empty_final_response",
      ],
    );
    // API keys in metadata.
    const [code401, msg401] = await client.error('ModelInfer', tinyRaw(x, 1), { key: null });
    assert.equal(code401, S.UNAUTHENTICATED);
    assert.match(msg401, /a valid API key is required/);
    assert.deepEqual(await client.error('ModelMetadata', { name: 'resnet18', version: '' }, { key: TINY_ONLY }), [
      S.PERMISSION_DENIED,
      "this API key may not use model 'resnet18'",
    ]);
    assert.deepEqual(await client.error('RepositoryModelUnload', { model_name: 'tiny' }, { key: TINY_ONLY }), [
      S.PERMISSION_DENIED,
      'this API key may not change the repository',
    ]);
    await client.call('ModelInfer', tinyRaw(x, 1), { key: TINY_ONLY });
    // The `timeout` parameter belongs to the queue policy, as over REST and in Triton: tiny has none,
    // so a request whose 1 µs has passed before any hop runs it is still answered.
    const timed = await client.call<InferResponse>(
      'ModelInfer',
      tinyRaw(x, 1, { parameters: { timeout: { int64_param: 1 } } }),
    );
    assert.ok(toleranceRatio(f32Of(timed.raw_output_contents[0] as Buffer), await tinyRef(x, 1), ATOL, RTOL) <= 1);
    // A deadline the call cannot meet ends it with the client's DEADLINE_EXCEEDED.
    const [late] = await client.error('ModelInfer', tinyRaw(x, 1), { deadline: new Date(Date.now() + 1) });
    assert.equal(late, S.DEADLINE_EXCEEDED);
    // Features the mesh does not have, with Triton's status and text.
    assert.deepEqual(await client.error('CudaSharedMemoryRegister', { name: 'r', byte_size: 4 }), [
      S.INVALID_ARGUMENT,
      "failed to register CUDA shared memory region: 'r', GPUs not supported",
    ]);
    assert.equal(
      (await client.error('SystemSharedMemoryRegister', { name: 'r', key: '/k', byte_size: 4 }))[0],
      S.UNIMPLEMENTED,
    );
    assert.deepEqual(await client.call('SystemSharedMemoryStatus', {}), { regions: {} });
    assert.deepEqual(await client.call('CudaSharedMemoryUnregister', { name: '' }), {});
    assert.deepEqual(await client.error('SystemSharedMemoryStatus', { name: 'r' }), [
      S.NOT_FOUND,
      "Unable to find system shared memory region: 'r'",
    ]);
    assert.equal((await client.error('CudaSharedMemoryStatus', {}, { key: null }))[0], S.UNAUTHENTICATED);
    // Triton's trace and logging extensions (trace-logging-extensions.test.ts covers them): read here.
    const traceSettings = await client.call<{ settings: Record<string, { value: string[] }> }>('TraceSetting', {});
    assert.deepEqual(traceSettings.settings.trace_level?.value, ['OFF'], 'no exporter configured: tracing off');
    const logSettings = await client.call<{ settings: Record<string, Record<string, unknown>> }>('LogSettings', {});
    assert.equal(logSettings.settings.log_info?.bool_param, true);
    // Unloading a model no one knows changes nothing, as in Triton.
    assert.deepEqual(await client.call('RepositoryModelUnload', { model_name: 'nope' }), {});
  });

  it('ModelStreamInfer: 1,000 requests, 64 in flight, each answered once with its id; errors on the stream', async () => {
    const total = 1_000;
    const window = 64;
    const inputs = Array.from({ length: total }, (_, i) => xs(1 + (i % 4), 100 + i));
    const stream = (
      client.inference.ModelStreamInfer as (md: unknown) => NodeJS.EventEmitter & {
        write(m: Msg): void;
        end(): void;
      }
    )(client.metadata());
    const answers = new Map<string, Msg>();
    let sent = 0;
    const sendNext = () => {
      if (sent < total) {
        const i = sent++;
        const x = inputs[i] as Float32Array;
        // What tritonclient's stream_infer(enable_empty_final_response=True) adds, on every other request.
        const flag = i % 2 === 0 ? { parameters: { triton_enable_empty_final_response: { bool_param: true } } } : {};
        stream.write(tinyRaw(x, x.length / 16, { id: `s${i}`, ...flag }));
      } else if (sent === total) {
        sent++;
        // One bad request: answered on the stream, the stream goes on.
        stream.write({ model_name: 'tiny', id: 'bad', inputs: [{ name: 'q', datatype: 'FP32', shape: [1, 16] }] });
        stream.end();
      }
    };
    const done = new Promise<void>((resolve, reject) => {
      stream.on('data', (m: Msg) => {
        const r = m.infer_response as InferResponse;
        assert.ok(!answers.has(r.id), `a second answer for ${r.id}`);
        answers.set(r.id, m);
        sendNext();
      });
      stream.on('end', resolve);
      stream.on('error', reject);
    });
    for (let i = 0; i < window; i++) sendNext();
    await done;
    assert.equal(answers.size, total + 1);
    const bad = answers.get('bad') as Msg;
    // Triton's gRPC front end looks for each input's data before its core checks the names.
    assert.equal(bad.error_message, "unable to find data for input tensor 'q' for model 'tiny' in request.");
    // Each answer, failed ones too, is its request's last, and says so as Triton's streams do.
    for (const m of answers.values()) {
      const params = (m.infer_response as { parameters?: Record<string, Msg> }).parameters;
      assert.deepEqual(params?.triton_final_response, { bool_param: true, parameter_choice: 'bool_param' });
    }
    for (let i = 0; i < total; i += 37) {
      const m = answers.get(`s${i}`) as Msg;
      assert.equal(m.error_message, '');
      const x = inputs[i] as Float32Array;
      const want = await tinyRef(x, x.length / 16);
      const r = m.infer_response as InferResponse;
      assert.ok(toleranceRatio(f32Of(r.raw_output_contents[0] as Buffer), want, ATOL, RTOL) <= 1);
    }
  });

  it('statistics, repository index and load', async () => {
    const stats = (await client.call('ModelStatistics', { name: 'tiny', version: '' })) as {
      model_stats: Array<{ name: string; version: string; inference_count: number; inference_stats: Msg }>;
    };
    assert.equal(stats.model_stats.length, 1);
    const s = stats.model_stats[0];
    assert.equal(s?.name, 'tiny');
    assert.ok((s?.inference_count ?? 0) >= 1_000);
    const rest = (await (
      await request(`${mesh.url}/v2/models/tiny/stats`, { headers: { authorization: `Bearer ${ADMIN}` } })
    ).body.json()) as { model_stats: Array<{ inference_count: number }> };
    assert.equal(s?.inference_count, rest.model_stats[0]?.inference_count);
    const all = (await client.call('ModelStatistics', { name: '', version: '' })) as { model_stats: Msg[] };
    assert.deepEqual(all.model_stats.map((m) => m.name).sort(), [
      'ocr_cls',
      'preprocess',
      'preprocess_resnet18',
      'resnet18',
      'text_encoder',
      'tiny',
    ]);
    assert.deepEqual(await client.error('ModelStatistics', { name: 'nope', version: '' }), [
      S.INVALID_ARGUMENT,
      "requested model 'nope' is not available",
    ]);
    const index = (await client.call('RepositoryIndex', { ready: true })) as { models: Msg[] };
    assert.deepEqual(
      index.models.find((m) => m.name === 'tiny'),
      { name: 'tiny', version: '1', state: 'READY', reason: '' },
    );
    assert.deepEqual(await client.call('RepositoryModelLoad', { model_name: 'tiny' }), {});
    assert.deepEqual(await client.error('RepositoryModelLoad', { model_name: 'tiny', repository_name: 'r' }), [
      S.INVALID_ARGUMENT,
      "'repository_name' specification is not supported",
    ]);
  });
});
