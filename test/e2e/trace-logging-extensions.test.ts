import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { demoModel, sampleInputs } from '@ge-mesh/demo-models';
import { Metadata } from '@grpc/grpc-js';
import { tinyVariants } from '../support/batcher-fixtures.js';
import { f32Bytes, GrpcTestClient } from '../support/grpc-client.js';
import { freePort, startTestMesh, type TestMesh } from '../support/mesh-harness.js';
import { OtlpReceiver } from '../support/otlp-receiver.js';
import { jsonInferBody } from '../support/reference.js';

/**
 * Triton's trace extension (which requests are traced, across every
 * service) and logging extension (every service's log level at runtime),
 * over REST and gRPC, on a mesh that exports traces to a local receiver.
 */
const MODEL = 't48';

describe("Triton's trace and logging extensions", { timeout: 180_000 }, () => {
  let mesh: TestMesh;
  let receiver: OtlpReceiver;
  let grpc: GrpcTestClient;
  let repo: Awaited<ReturnType<typeof tinyVariants>>;

  before(async () => {
    receiver = await OtlpReceiver.start();
    repo = await tinyVariants({ [MODEL]: 'max_batch_size: 8\ndynamic_batching { preferred_batch_size: [ 4, 8 ] }' });
    const grpcPort = await freePort();
    mesh = await startTestMesh({
      modelRepository: repo.dir,
      models: [MODEL],
      grpcPort,
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '100' },
    });
    grpc = new GrpcTestClient(`127.0.0.1:${grpcPort}`);
  });
  after(async () => {
    grpc?.close();
    await mesh?.teardown();
    await receiver?.close();
    await repo?.remove();
  });

  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${mesh.url}${path}`, {
      method,
      ...(body !== undefined ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } } : {}),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  /** One request; its traceresponse: [trace id, sampled]. */
  const infer = async (): Promise<[string, boolean]> => {
    const res = await fetch(`${mesh.url}/v2/models/${MODEL}/infer`, {
      method: 'POST',
      body: jsonInferBody(sampleInputs(demoModel('tiny'), 3, 1)),
    });
    assert.equal(res.status, 200, await res.text());
    const [, traceId, , flags] = (res.headers.get('traceresponse') ?? '').split('-');
    return [traceId ?? '', flags === '01'];
  };
  const exported = async (traceId: string) => {
    await new Promise((r) => setTimeout(r, 600)); // batched exports from three services
    return receiver.trace(traceId);
  };

  it('trace settings: defaults, a model override, null back to the global value', async () => {
    const global = await call('GET', '/v2/trace/setting');
    assert.deepEqual(global, {
      status: 200,
      body: {
        trace_level: ['TIMESTAMPS'],
        trace_rate: '1',
        trace_count: '-1',
        trace_mode: 'opentelemetry',
      },
    });
    const off = await call('POST', `/v2/models/${MODEL}/trace/setting`, { trace_level: ['OFF'] });
    assert.deepEqual(off.body.trace_level, ['OFF']);
    assert.deepEqual((await call('GET', '/v2/trace/setting')).body.trace_level, ['TIMESTAMPS']);

    const [untraced, sampled] = await infer();
    assert.equal(sampled, false, 'trace_level OFF: not sampled');
    assert.deepEqual(await exported(untraced), [], 'no service exported a span of it');

    const back = await call('POST', `/v2/models/${MODEL}/trace/setting`, { trace_level: null });
    assert.deepEqual(back.body.trace_level, ['TIMESTAMPS']);
    const [traced, yes] = await infer();
    assert.equal(yes, true);
    const spans = await exported(traced);
    assert.deepEqual([...new Set(spans.map((s) => s.service))].sort(), [
      'gemesh-batcher',
      'gemesh-gateway',
      'gemesh-worker',
    ]);
  });

  it('trace_rate 2 traces every other request; trace_count 1 one request, then none', async () => {
    await call('POST', `/v2/models/${MODEL}/trace/setting`, { trace_rate: '2' });
    const flags: boolean[] = [];
    for (let i = 0; i < 4; i++) flags.push((await infer())[1]);
    assert.deepEqual(flags, [false, true, false, true]);

    await call('POST', `/v2/models/${MODEL}/trace/setting`, { trace_rate: null, trace_count: '1' });
    const counted: boolean[] = [];
    for (let i = 0; i < 3; i++) counted.push((await infer())[1]);
    assert.deepEqual(counted, [true, false, false]);
    await call('POST', `/v2/models/${MODEL}/trace/setting`, { trace_count: null });
    assert.equal((await infer())[1], true);
  });

  it('bad trace settings are refused as Triton refuses them', async () => {
    const bad = async (path: string, body: unknown, status: number, text: RegExp) => {
      const r = await call('POST', path, body);
      assert.equal(r.status, status, JSON.stringify(r.body));
      assert.match(String(r.body.error), text);
    };
    await bad('/v2/trace/setting', { trace_rate: '0' }, 400, /trace_rate must be an integer of at least 1/);
    await bad('/v2/trace/setting', { trace_level: ['LOUD'] }, 400, /trace_level must be OFF, TIMESTAMPS or TENSORS/);
    await bad('/v2/trace/setting', { trace_file: '/tmp/t.json' }, 501, /can not be updated through network protocol/);
    await bad('/v2/trace/setting', { trace_level: ['OFF', 'TIMESTAMPS'] }, 400, /Expect only one trace level 'OFF'/);
    await bad('/v2/trace/setting', { colour: 'red' }, 400, /unknown trace setting 'colour'/);
    await bad('/v2/models/nope/trace/setting', {}, 404, /unknown model/);
  });

  it('gRPC TraceSetting reads and changes the same settings', async () => {
    const read = await grpc.call<{ settings: Record<string, { value: string[] }> }>('TraceSetting', {
      model_name: MODEL,
    });
    assert.deepEqual(read.settings.trace_level?.value, ['TIMESTAMPS']);
    const set = await grpc.call<{ settings: Record<string, { value: string[] }> }>('TraceSetting', {
      model_name: MODEL,
      settings: { trace_rate: { value: ['3'] } },
    });
    assert.deepEqual(set.settings.trace_rate?.value, ['3']);
    assert.equal((await call('GET', `/v2/models/${MODEL}/trace/setting`)).body.trace_rate, '3');
    const cleared = await grpc.call<{ settings: Record<string, { value: string[] }> }>('TraceSetting', {
      model_name: MODEL,
      settings: { trace_rate: { value: [] } },
    });
    assert.deepEqual(cleared.settings.trace_rate?.value, ['1']);
  });

  it('logging: verbose 1 turns every service to debug; log_info false quiets them; gRPC agrees', async () => {
    assert.deepEqual((await call('GET', '/v2/logging')).body, {
      log_file: '',
      log_info: true,
      log_warning: true,
      log_error: true,
      log_verbose_level: 0,
      log_format: 'default',
    });
    const set = await call('POST', '/v2/logging', { log_verbose_level: 1 });
    assert.equal(set.body.log_verbose_level, 1);
    const debugOn = (svc: string) =>
      mesh.lines.some(
        (l) => l.startsWith(`[${svc}]`) && l.includes('"msg":"log level set"') && l.includes('"logLevel":"debug"'),
      );
    const until = Date.now() + 5_000;
    while (!['gateway', 'batcher', 'worker-0'].every(debugOn) && Date.now() < until)
      await new Promise((r) => setTimeout(r, 50));
    for (const svc of ['gateway', 'batcher', 'worker-0']) assert.ok(debugOn(svc), `${svc} switched to debug`);
    const published = () =>
      mesh.lines.filter((l) => l.startsWith('[batcher]') && l.includes('"msg":"batch published"')).length;
    await infer();
    await new Promise((r) => setTimeout(r, 200));
    assert.ok(published() >= 1, 'the batcher logs its debug lines');

    const quiet = await call('POST', '/v2/logging', { log_verbose_level: 0, log_info: false });
    assert.equal(quiet.body.log_info, false);
    await new Promise((r) => setTimeout(r, 300));
    const before = published();
    const infoBefore = mesh.lines.filter((l) => l.includes('"level":30')).length;
    await infer();
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(published(), before, 'no debug lines at warn');
    assert.equal(mesh.lines.filter((l) => l.includes('"level":30')).length, infoBefore, 'no info lines at warn');

    const viaGrpc = await grpc.call<{ settings: Record<string, Record<string, unknown>> }>('LogSettings', {
      settings: { log_info: { bool_param: true } },
    });
    assert.equal(viaGrpc.settings.log_info?.bool_param, true);
    assert.equal(viaGrpc.settings.log_verbose_level?.uint32_param, 0);
    assert.equal((await call('GET', '/v2/logging')).body.log_info, true);

    // log_format ISO8601: every service's lines carry ISO 8601 times from then on.
    const from = mesh.lines.length;
    const iso = await call('POST', '/v2/logging', { log_format: 'ISO8601', log_verbose_level: 1 });
    assert.equal(iso.body.log_format, 'ISO8601');
    const isoLine = (svc: string) =>
      mesh.lines
        .slice(from)
        .some(
          (l) => l.startsWith(`[${svc}]`) && l.includes('"msg":"log level set"') && /"time":"\d{4}-\d\d-\d\dT/.test(l),
        );
    const isoUntil = Date.now() + 5_000;
    while (!['gateway', 'batcher', 'worker-0'].every(isoLine) && Date.now() < isoUntil)
      await new Promise((r) => setTimeout(r, 50));
    for (const svc of ['gateway', 'batcher', 'worker-0']) assert.ok(isoLine(svc), `${svc} writes ISO 8601 times`);
    await call('POST', '/v2/logging', { log_format: 'default', log_verbose_level: 0 });

    const refused = await call('POST', '/v2/logging', { log_verbose_level: -1 });
    assert.deepEqual(refused, {
      status: 400,
      body: { error: 'attempt to access JSON non-unsigned-integer as unsigned-integer' },
    });
    const file = await call('POST', '/v2/logging', { log_file: '/tmp/mesh.log' });
    assert.equal(file.status, 501);
    assert.equal((await call('POST', '/v2/logging', { loud: true })).status, 400);
  });

  it("gRPC: a caller's traceparent in the metadata is honoured; the response metadata names the trace", async () => {
    const traceId = randomBytes(16).toString('hex');
    const caller = randomBytes(8).toString('hex');
    const md = new Metadata();
    md.set('traceparent', `00-${traceId}-${caller}-01`);
    const x = new Float32Array(16).fill(0.5);
    let traceresponse = '';
    await new Promise<void>((resolve, reject) => {
      const c = (
        grpc.inference.ModelInfer as (...a: unknown[]) => { on(e: string, f: (m: Metadata) => void): void }
      ).call(
        grpc.inference,
        {
          model_name: MODEL,
          inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 16] }],
          raw_input_contents: [f32Bytes(x)],
        },
        md,
        (err: Error | null) => (err ? reject(err) : resolve()),
      );
      c.on('metadata', (m: Metadata) => {
        traceresponse = String(m.get('traceresponse')[0] ?? '');
      });
    });
    assert.match(traceresponse, new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    await receiver.waitFor((s) => s.some((x) => x.traceId === traceId && x.name === 'worker batch'));
    const root = receiver.trace(traceId).find((s) => s.name === `infer ${MODEL}`);
    assert.equal(root?.parentSpanId, caller);
    assert.equal(root?.attributes['gemesh.ingress'], 'grpc');
  });

  it('the server metadata lists both extensions', async () => {
    const extensions = (await call('GET', '/v2')).body.extensions as string[];
    assert.deepEqual(extensions.slice(-2), ['trace', 'logging']);
  });
});
