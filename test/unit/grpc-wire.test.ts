import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { MethodDefinition } from '@grpc/proto-loader';
import { loadDefinitions, PROTO_OPTIONS } from '../../services/gateway/src/grpc/proto.js';
import { TRITON_CLIENT_GOLDEN as G } from '../fixtures/grpc-golden.js';

/**
 * The project's .proto files against bytes NVIDIA's tritonclient.grpc
 * serialized: each message decodes to the values the client put in (so a
 * field with the wrong number or type reads wrong) and encodes back to the
 * very same bytes (so nothing is lost or renumbered).
 */
type Msg = Record<string, unknown>;
// As the wire has it: unset fields stay unset, 64-bit integers exact.
const defs = loadDefinitions({ ...PROTO_OPTIONS, defaults: false, longs: String });
const service = defs['inference.GRPCInferenceService'] as unknown as Record<string, MethodDefinition<Msg, Msg>>;
const method = (name: string) => service[name] as MethodDefinition<Msg, Msg>;

function roundTrip(hex: string, side: 'request' | 'response', rpc: string): Msg {
  const bytes = Buffer.from(hex, 'hex');
  const m = method(rpc);
  const msg = side === 'request' ? m.requestDeserialize(bytes) : m.responseDeserialize(bytes);
  const again = side === 'request' ? m.requestSerialize(msg) : m.responseSerialize(msg);
  assert.equal(Buffer.from(again).toString('hex'), hex, `${rpc} ${side} re-encodes to other bytes`);
  return msg;
}

describe('gRPC wire contract: golden bytes from tritonclient.grpc', () => {
  it('ModelInferRequest with raw contents, parameters and a requested output', () => {
    const m = roundTrip(G.modelInferRequest, 'request', 'ModelInfer');
    assert.equal(m.model_name, 'tiny');
    assert.equal(m.model_version, '1');
    assert.equal(m.id, 'golden-1');
    const p = m.parameters as Record<string, Msg>;
    assert.equal(p.priority?.uint64_param, '1');
    assert.equal(p.timeout?.int64_param, '5000000');
    assert.equal(p.note?.string_param, 'golden');
    const inputs = m.inputs as Msg[];
    assert.deepEqual(
      inputs.map((t) => [t.name, t.datatype, t.shape]),
      [['x', 'FP32', ['2', '16']]],
    );
    assert.deepEqual(
      (m.outputs as Msg[]).map((o) => o.name),
      ['y'],
    );
    const raw = (m.raw_input_contents as Buffer[])[0] as Buffer;
    assert.equal(raw.length, 2 * 16 * 4);
    assert.equal(raw.readFloatLE(4 * 31), 31 / 32);
  });

  it('ModelInferRequest with typed contents and bool/double parameters', () => {
    const m = roundTrip(G.typedInferRequest, 'request', 'ModelInfer');
    const t = (m.inputs as Msg[])[0] as Msg;
    assert.deepEqual((t.contents as Msg).int64_contents, ['101', '7592', '-1', String(2 ** 40)]);
    const o = (m.outputs as Msg[])[0] as Msg;
    assert.equal((o.parameters as Record<string, Msg>).classification?.int64_param, '3');
    const p = m.parameters as Record<string, Msg>;
    assert.equal(p.flag?.bool_param, true);
    assert.equal(p.ratio?.double_param, 0.25);
  });

  it('ModelInferResponse with raw output contents and a parameter', () => {
    const m = roundTrip(G.modelInferResponse, 'response', 'ModelInfer');
    assert.equal(m.id, 'golden-1');
    assert.deepEqual(
      (m.outputs as Msg[]).map((t) => [t.name, t.datatype, t.shape]),
      [['y', 'FP32', ['2', '4']]],
    );
    assert.equal((m.parameters as Record<string, Msg>).note?.string_param, 'golden');
    assert.equal(((m.raw_output_contents as Buffer[])[0] as Buffer).length, 2 * 4 * 4);
  });

  it('ModelConfigResponse (resnet18)', () => {
    const m = roundTrip(G.modelConfigResponse, 'response', 'ModelConfig');
    const c = m.config as Msg;
    assert.equal(c.name, 'resnet18');
    assert.equal(c.platform, 'onnxruntime_onnx');
    assert.equal(c.backend, 'onnxruntime');
    assert.equal(c.max_batch_size, 16);
    const input = (c.input as Msg[])[0] as Msg;
    assert.deepEqual([input.name, input.data_type, input.dims], ['input', 'TYPE_FP32', ['3', '224', '224']]);
    const output = (c.output as Msg[])[0] as Msg;
    assert.deepEqual([output.name, output.data_type, output.dims], ['logits', 'TYPE_FP32', ['1000']]);
    assert.deepEqual((c.version_policy as Msg).latest, { num_versions: 1 });
    assert.deepEqual(((c.dynamic_batching as Msg).preferred_batch_size as number[]).length > 0, true);
    assert.equal(((c.instance_group as Msg[])[0] as Msg).kind, 'KIND_CPU');
  });
});
