import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MeshError } from '@ge-mesh/protocol';
import {
  decodeInferRequest,
  type InferParameterMsg,
  type ModelInferRequestMsg,
} from '../../services/gateway/src/grpc/infer-codec.js';

/**
 * The request parameters Triton's gRPC front end reads itself (priority,
 * timeout, the `triton_` keys, an output's classification), with the types
 * and texts of its infer_handler.cc and grpc_utils.cc.
 */
const x = Buffer.alloc(64);
function request(
  parameters: Record<string, InferParameterMsg>,
  outputParameters: Record<string, InferParameterMsg> = {},
): ModelInferRequestMsg {
  return {
    model_name: 'tiny',
    model_version: '',
    id: '',
    parameters,
    inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 16], parameters: {} }],
    outputs: [{ name: 'y', parameters: outputParameters }],
    raw_input_contents: [x],
  };
}
const decode = (r: ModelInferRequestMsg) => decodeInferRequest(r, 'tiny', 1_000_000);
const refused = (r: ModelInferRequestMsg, message: string) =>
  assert.throws(
    () => decode(r),
    (err: unknown) => err instanceof MeshError && err.code === 'INVALID_ARGUMENT' && err.message === message,
  );

const int64 = (v: number): InferParameterMsg => ({ parameter_choice: 'int64_param', int64_param: v });
const uint64 = (v: number): InferParameterMsg => ({ parameter_choice: 'uint64_param', uint64_param: v });
const bool = (v: boolean): InferParameterMsg => ({ parameter_choice: 'bool_param', bool_param: v });

describe('gRPC request parameters read as Triton reads them', () => {
  it('priority: int64 of at least 0 or uint64', () => {
    assert.equal(decode(request({ priority: int64(3) })).priority, 3);
    assert.equal(decode(request({ priority: uint64(2) })).priority, 2);
    refused(request({ priority: int64(-1) }), "invalid value for 'priority', expected value >= 0.");
    refused(
      request({ priority: bool(true) }),
      "invalid value type for 'priority' parameter, expected int64_param or uint64_param.",
    );
  });

  it('timeout: int64 only; a negative one sets none', () => {
    assert.equal(decode(request({ timeout: int64(5000) })).timeoutUs, 5000);
    assert.equal(decode(request({ timeout: int64(-7) })).timeoutUs, 0);
    refused(request({ timeout: uint64(5000) }), "invalid value type for 'timeout' parameter, expected int64_param.");
  });

  it('triton_enable_empty_final_response is taken and not passed on; other triton_ keys are refused', () => {
    const parsed = decode(request({ triton_enable_empty_final_response: bool(true), mine: int64(4) }));
    assert.deepEqual(parsed.parameters, { mine: 4 });
    refused(
      request({ triton_enable_empty_final_response: int64(1) }),
      "invalid value type for 'triton_enable_empty_final_response' parameter, expected bool_param.",
    );
    refused(
      request({ sequence_start: { parameter_choice: 'string_param', string_param: 'yes' } }),
      "invalid value type for 'sequence_start' parameter, expected bool_param.",
    );
    refused(
      request({ sequence_id: bool(true) }),
      "invalid value type for 'sequence_id' parameter, expected int64_param or string_param.",
    );
    assert.deepEqual(decode(request({ sequence_id: int64(7), sequence_end: bool(false) })).parameters, {
      sequence_id: 7,
      sequence_end: false,
    });
    refused(
      request({ triton_other: bool(true) }),
      "parameter keys starting with 'triton_' are reserved for Triton usage. Only the following keys starting with 'triton_' are allowed: triton_enable_empty_final_response",
    );
  });

  it('classification: an int64 count above 0', () => {
    assert.equal(decode(request({}, { classification: int64(2) })).outputs[0]?.classification, 2);
    refused(
      request({}, { classification: uint64(2) }),
      "invalid value type for 'classification' parameter, expected int64_param",
    );
    refused(request({}, { classification: int64(0) }), "invalid value for 'classification' parameter, expected >= 0");
  });

  it("typed contents: one field, of the input's datatype, else Triton's texts", () => {
    const typed = (datatype: string, contents: ModelInferRequestMsg['inputs'][number]['contents']) => ({
      ...request({}),
      inputs: [{ name: 'x', datatype, shape: [1, 2], parameters: {}, ...(contents ? { contents } : {}) }],
      raw_input_contents: [],
    });
    const bytes = (r: ModelInferRequestMsg) => [...(decode(r).inputs[0]?.data ?? [])];
    assert.deepEqual(bytes(typed('INT8', { int_contents: [-1, 2] })), [255, 2]);
    assert.deepEqual(bytes(typed('UINT16', { uint_contents: [1, 258] })), [1, 0, 2, 1]);
    refused(
      typed('FP32', { int_contents: [1, 2] }),
      "unexpected explicit tensor data for input tensor 'x' for model 'tiny' of type 'INT32', expected datatype 'FP32'",
    );
    refused(
      typed('FP16', { fp32_contents: [1, 2] }),
      "unexpected explicit tensor data for input tensor 'x' for model 'tiny' of type 'FP32', expected datatype 'FP16'",
    );
    refused(
      typed('FP32', { fp32_contents: [1, 2], fp64_contents: [1, 2] }),
      "unexpected explicit tensor data for input tensor 'x' for model 'tiny', binary data was already supplied.",
    );
    refused(typed('FP32', undefined), "unable to find data for input tensor 'x' for model 'tiny' in request.");
  });
});
