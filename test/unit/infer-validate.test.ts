import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DynamicBatchingConfig } from '@ge-mesh/model-repository';
import { type DataType, ERRORS, type ErrorCode, MeshError, type WireTensor } from '@ge-mesh/protocol';
import { type ParsedInfer, parseInferBody, validateInfer } from '../../services/gateway/src/infer/index.js';
import { modelConfig, tensorConfig } from '../support/model-config-fixtures.js';

// ---------- helpers ----------

const NOTE =
  'NOTE: Setting a non-zero max_batch_size in the model config requires a batch dimension to be prepended to each input shape. ' +
  'If you want to specify the full shape including the batch dim in your input dims config, try setting max_batch_size to zero. ' +
  'See the model configuration docs for more info on max_batch_size.';

const tc = tensorConfig;
const model = modelConfig;

function batching(priorityLevels: number, defaultPriorityLevel: number): DynamicBatchingConfig {
  const policy = {
    timeoutAction: 'REJECT',
    defaultTimeoutMicroseconds: 0,
    allowTimeoutOverride: false,
    maxQueueSize: 0,
  } as const;
  return {
    preferredBatchSize: [],
    maxQueueDelayMicroseconds: 0,
    preserveOrdering: false,
    priorityLevels,
    defaultPriorityLevel,
    defaultQueuePolicy: policy,
    priorityQueuePolicy: new Map(),
  };
}

/** A JSON input of zeros with the given shape. */
function zeros(name: string, datatype: DataType, shape: number[]) {
  const n = shape.reduce((a, b) => a * b, 1);
  const data = datatype === 'BYTES' ? Array(n).fill('') : datatype === 'BOOL' ? Array(n).fill(false) : Array(n).fill(0);
  return { name, datatype, shape, data };
}

function req(body: Record<string, unknown>): ParsedInfer {
  return parseInferBody(Buffer.from(JSON.stringify(body)));
}

function throwsMesh(fn: () => unknown, code: ErrorCode, message: string): void {
  let err: unknown;
  try {
    fn();
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof MeshError, `expected a MeshError, got ${String(err)}`);
  assert.equal(err.code, code, err.message);
  assert.equal(err.message, message);
  assert.equal(err.status, ERRORS[code].status);
}

const f32 = (values: number[]) => new Uint8Array(new Float32Array(values).buffer);

// ---------- inputs ----------

describe('validateInfer: inputs', () => {
  const two = model(0, [tc('a', 'FP32', [2]), tc('b', 'INT32', [1])]);

  it('an unknown input (count right) gets the model.cc text, no request-id prefix', () => {
    throwsMesh(
      () => validateInfer(req({ id: 'r1', inputs: [zeros('a', 'FP32', [2]), zeros('z', 'INT32', [1])] }), two),
      'UNKNOWN_INPUT',
      "unexpected inference input 'z' for model 'm'",
    );
  });

  it('too many inputs', () => {
    throwsMesh(
      () =>
        validateInfer(
          req({ inputs: [zeros('a', 'FP32', [2]), zeros('b', 'INT32', [1]), zeros('z', 'FP32', [1])] }),
          two,
        ),
      'UNKNOWN_INPUT',
      "expected 2 inputs but got 3 inputs for model 'm'. Got input(s) ['a','b','z'], but missing required input(s) []. Please provide all required input(s).",
    );
  });

  it('a missing required input, with and without a request id', () => {
    const one = { inputs: [zeros('a', 'FP32', [2])] };
    throwsMesh(
      () => validateInfer(req(one), two),
      'MISSING_INPUT',
      "expected 2 inputs but got 1 inputs for model 'm'. Got input(s) ['a'], but missing required input(s) ['b']. Please provide all required input(s).",
    );
    throwsMesh(
      () => validateInfer(req({ id: 'abc', ...one }), two),
      'MISSING_INPUT',
      "[request id: abc] expected 2 inputs but got 1 inputs for model 'm'. Got input(s) ['a'], but missing required input(s) ['b']. Please provide all required input(s).",
    );
    throwsMesh(
      () => validateInfer(req({ inputs: [] }), two),
      'MISSING_INPUT',
      "expected 2 inputs but got 0 inputs for model 'm'. Got input(s) [], but missing required input(s) ['a','b']. Please provide all required input(s).",
    );
  });

  it('optional inputs: may be left out; a required one is still missed by name', () => {
    const opt = model(0, [tc('a', 'FP32', [2]), tc('b', 'INT32', [1], true)]);
    const ok = validateInfer(req({ inputs: [zeros('a', 'FP32', [2])] }), opt);
    assert.deepEqual(
      ok.inputs.map((t) => t.name),
      ['a'],
    );
    throwsMesh(
      () => validateInfer(req({ inputs: [] }), opt),
      'MISSING_INPUT',
      "expected number of inputs between 1 and 2 but got 0 inputs for model 'm'. Got input(s) [], but missing required input(s) ['a']. Please provide all required input(s).",
    );
    throwsMesh(
      () => validateInfer(req({ inputs: [zeros('b', 'INT32', [1])] }), opt),
      'MISSING_INPUT',
      "expected number of inputs between 1 and 2 but got 1 inputs for model 'm'. Got input(s) ['b'], but missing required input(s) ['a']. Please provide all required input(s).",
    );
  });

  it('wrong datatype', () => {
    throwsMesh(
      () => validateInfer(req({ id: 'q', inputs: [zeros('a', 'INT32', [2]), zeros('b', 'INT32', [1])] }), two),
      'DATATYPE_MISMATCH',
      "[request id: q] inference input 'a' data-type is 'INT32', but model 'm' expects 'FP32'",
    );
  });

  it('unexpected shape: with the max_batch_size note when the model batches, without it otherwise', () => {
    const batched = model(8, [tc('img', 'FP32', [3, 224, 224])]);
    throwsMesh(
      () => validateInfer(req({ inputs: [zeros('img', 'FP32', [3, 4, 4])] }), batched),
      'SHAPE_MISMATCH',
      `unexpected shape for input 'img' for model 'm'. Expected [-1,3,224,224], got [3,4,4]. ${NOTE}`,
    );
    throwsMesh(
      () => validateInfer(req({ inputs: [zeros('a', 'FP32', [1, 2]), zeros('b', 'INT32', [1])] }), two),
      'SHAPE_MISMATCH',
      "unexpected shape for input 'a' for model 'm'. Expected [2], got [1,2]. ",
    );
    throwsMesh(
      () => validateInfer(req({ id: 'i', inputs: [zeros('a', 'FP32', [3]), zeros('b', 'INT32', [1])] }), two),
      'SHAPE_MISMATCH',
      "[request id: i] unexpected shape for input 'a' for model 'm'. Expected [2], got [3]. ",
    );
  });

  it('-1 in the config is a wildcard', () => {
    const wild = model(4, [tc('tokens', 'INT64', [-1, 2])]);
    const v = validateInfer(req({ inputs: [zeros('tokens', 'INT64', [3, 5, 2])] }), wild);
    assert.equal(v.batch, 3);
    assert.deepEqual(v.inputs[0]?.shape, [3, 5, 2]);
    assert.equal(v.inputs[0]?.data.length, 3 * 5 * 2 * 8);
  });

  it('a -1 in the request shape (a request built without the HTTP parser)', () => {
    const wild = model(4, [tc('tokens', 'INT64', [-1])]);
    const parsed: ParsedInfer = {
      inputs: [{ name: 'tokens', datatype: 'INT64', shape: [1, -1], data: new Uint8Array(0) }],
      outputs: [],
      priority: 0,
      timeoutUs: 0,
      parameters: {},
    };
    throwsMesh(
      () => validateInfer(parsed, wild),
      'SHAPE_MISMATCH',
      "All input dimensions should be specified for input 'tokens' for model 'm', got [1,-1]",
    );
  });

  it('batch size over max_batch_size', () => {
    const b4 = model(4, [tc('x', 'FP32', [2])]);
    throwsMesh(
      () => validateInfer(req({ inputs: [zeros('x', 'FP32', [5, 2])] }), b4),
      'BATCH_TOO_LARGE',
      "inference request batch-size must be <= 4 for 'm'",
    );
    throwsMesh(
      () => validateInfer(req({ id: '77', inputs: [zeros('x', 'FP32', [5, 2])] }), b4),
      'BATCH_TOO_LARGE',
      "[request id: 77] inference request batch-size must be <= 4 for 'm'",
    );
    assert.equal(validateInfer(req({ inputs: [zeros('x', 'FP32', [4, 2])] }), b4).batch, 4);
  });

  it('inputs with different batch dims', () => {
    const b8 = model(8, [tc('a', 'FP32', [2]), tc('b', 'FP32', [1])]);
    throwsMesh(
      () => validateInfer(req({ inputs: [zeros('a', 'FP32', [2, 2]), zeros('b', 'FP32', [3, 1])] }), b8),
      'SHAPE_MISMATCH',
      "input 'b' batch size does not match other inputs for 'm'",
    );
  });

  it('no batch dim at all, and a 0-row batch', () => {
    const b8 = model(8, [tc('a', 'FP32', [1])]);
    throwsMesh(
      () => validateInfer(req({ inputs: [{ name: 'a', datatype: 'FP32', shape: [], data: [1] }] }), b8),
      'SHAPE_MISMATCH',
      "input 'a' has no shape but model requires batch dimension for 'm'",
    );
    throwsMesh(
      () => validateInfer(req({ inputs: [zeros('a', 'FP32', [0, 1])] }), b8),
      'SHAPE_MISMATCH',
      "inference request batch-size must be >= 1 for 'm'",
    );
  });

  it('batch is the leading dim with batching, 1 without', () => {
    const b8 = model(8, [tc('a', 'FP32', [2])]);
    assert.equal(validateInfer(req({ inputs: [zeros('a', 'FP32', [6, 2])] }), b8).batch, 6);
    const nb = model(0, [tc('a', 'FP32', [6, 2])]);
    assert.equal(validateInfer(req({ inputs: [zeros('a', 'FP32', [6, 2])] }), nb).batch, 1);
  });

  it('binary data of the wrong size', () => {
    const nb = model(0, [tc('a', 'FP32', [3])]);
    const parsed: ParsedInfer = {
      id: 'x1',
      inputs: [{ name: 'a', datatype: 'FP32', shape: [3], data: f32([1, 2]) }],
      outputs: [],
      priority: 0,
      timeoutUs: 0,
      parameters: {},
    };
    throwsMesh(
      () => validateInfer(parsed, nb),
      'DATA_SIZE_MISMATCH',
      "[request id: x1] input byte size mismatch for input 'a' for model 'm'. Expected 12, got 8",
    );
  });

  it('BYTES: element count and layout', () => {
    const s = model(0, [tc('s', 'BYTES', [2])]);
    const json = (data: string[]) => req({ inputs: [{ name: 's', datatype: 'BYTES', shape: [2], data }] });
    assert.deepEqual(
      [...(validateInfer(json(['ab', 'c']), s).inputs[0] as WireTensor).data],
      [2, 0, 0, 0, 97, 98, 1, 0, 0, 0, 99],
    );
    throwsMesh(
      () => validateInfer(json(['a', 'b', 'c']), s),
      'DATA_SIZE_MISMATCH',
      "unexpected number of string elements 3 for inference input 's' for model 'm', expecting 2",
    );
    throwsMesh(
      () => validateInfer(json(['a']), s),
      'DATA_SIZE_MISMATCH',
      "expected 2 string elements for inference input 's' for model 'm', got 1",
    );
    const raw = (data: number[]): ParsedInfer => ({
      inputs: [{ name: 's', datatype: 'BYTES', shape: [2], data: Uint8Array.from(data) }],
      outputs: [],
      priority: 0,
      timeoutUs: 0,
      parameters: {},
    });
    throwsMesh(
      () => validateInfer(raw([1, 0, 0, 0, 97, 1, 0, 0]), s),
      'DATA_SIZE_MISMATCH',
      "incomplete string length indicator for inference input 's' for model 'm', expecting 4 bytes but only 3 bytes available. Please make sure the string length indicator is in one buffer.",
    );
    throwsMesh(
      () => validateInfer(raw([1, 0, 0, 0, 97, 9, 0, 0, 0, 98]), s),
      'DATA_SIZE_MISMATCH',
      "string element 1 of inference input 's' for model 'm' declares 9 bytes but only 1 bytes remain",
    );
  });
});

// ---------- outputs ----------

describe('validateInfer: outputs', () => {
  const cfg = model(
    4,
    [tc('x', 'FP32', [2])],
    [tc('probs', 'FP32', [10]), tc('half', 'FP16', [10]), tc('name', 'BYTES', [1])],
  );
  const x = zeros('x', 'FP32', [1, 2]);

  it('an unknown requested output', () => {
    throwsMesh(
      () => validateInfer(req({ id: 'o', inputs: [x], outputs: [{ name: 'logits' }] }), cfg),
      'UNKNOWN_OUTPUT',
      "unexpected inference output 'logits' for model 'm'",
    );
  });

  it('none listed: every output in config order, in the binary_data_output form', () => {
    const bin = validateInfer(req({ inputs: [x], parameters: { binary_data_output: true } }), cfg);
    assert.equal(bin.allOutputs, true);
    assert.equal(bin.binaryDataOutput, true);
    assert.deepEqual(bin.outputs, [
      { name: 'probs', binary: true },
      { name: 'half', binary: true },
      { name: 'name', binary: true },
    ]);
  });

  it('listed: request order; JSON unless binary_data says otherwise (binary_data_output does not apply)', () => {
    const v = validateInfer(
      req({
        inputs: [x],
        parameters: { binary_data_output: true },
        outputs: [
          { name: 'name' },
          { name: 'half', parameters: { binary_data: true } },
          { name: 'probs', parameters: { classification: 3 } },
        ],
      }),
      cfg,
    );
    assert.equal(v.allOutputs, false);
    assert.deepEqual(v.outputs, [
      { name: 'name', binary: false },
      { name: 'half', binary: true },
      { name: 'probs', binary: false, classification: { count: 3, batched: true } },
    ]);
  });

  it('an FP16 output asked as JSON fails before inference, with Triton text', () => {
    throwsMesh(
      () => validateInfer(req({ inputs: [x], outputs: [{ name: 'half' }] }), cfg),
      'INVALID_ARGUMENT',
      'sending FP16 data via JSON is not supported. Please use the binary data format for output',
    );
    throwsMesh(
      () => validateInfer(req({ inputs: [x] }), cfg),
      'INVALID_ARGUMENT',
      'sending FP16 data via JSON is not supported. Please use the binary data format for output',
    );
    const bf = model(0, [tc('x', 'FP32', [2])], [tc('b', 'BF16', [2])]);
    throwsMesh(
      () => validateInfer(req({ inputs: [zeros('x', 'FP32', [2])] }), bf),
      'INVALID_ARGUMENT',
      'sending BF16 data via JSON is not supported. Please use the binary data format for output',
    );
  });

  it('classification of a datatype Triton cannot rank', () => {
    throwsMesh(
      () => validateInfer(req({ inputs: [x], outputs: [{ name: 'name', parameters: { classification: 1 } }] }), cfg),
      'INVALID_ARGUMENT',
      "class result not available for output due to unsupported type 'BYTES'",
    );
  });
});

// ---------- request parameters ----------

describe('validateInfer: priority, timeout, parameters, id', () => {
  const x = zeros('x', 'FP32', [1, 2]);

  it('priority maps as Triton SetPriority: 0 or above the levels → the default level', () => {
    const cfg = model(4, [tc('x', 'FP32', [2])], undefined, batching(3, 2));
    const level = (priority: number) => validateInfer(req({ inputs: [x], parameters: { priority } }), cfg).priority;
    assert.deepEqual([0, 1, 2, 3, 4, 1000].map(level), [2, 1, 2, 3, 2, 2]);
    assert.equal(validateInfer(req({ inputs: [x] }), cfg).priority, 2);
    const plain = model(4, [tc('x', 'FP32', [2])]);
    assert.equal(validateInfer(req({ inputs: [x], parameters: { priority: 3 } }), plain).priority, 0);
  });

  it('timeout, other parameters and the client id pass through', () => {
    const cfg = model(4, [tc('x', 'FP32', [2])]);
    const v = validateInfer(
      req({ id: 'client-1', inputs: [x], parameters: { timeout: 250000, sequence_id: 42, note: 'hi' } }),
      cfg,
    );
    assert.equal(v.timeoutUs, 250000);
    assert.equal(v.clientId, 'client-1');
    assert.deepEqual(v.parameters, { sequence_id: 42, note: 'hi' });
    const anon = validateInfer(req({ inputs: [x] }), cfg);
    assert.equal('clientId' in anon, false);
    assert.equal(anon.timeoutUs, 0);
  });
});

// ---------- raw binary body ----------

describe('validateInfer: raw binary body (Inference-Header-Content-Length: 0)', () => {
  it('one FP32 input with a variable dim: batch 1 and the dim from the body size', () => {
    const cfg = model(8, [tc('audio', 'FP32', [-1])]);
    const body = Buffer.from(new Float32Array([0.5, 1, 1.5]).buffer);
    const v = validateInfer(parseInferBody(body, 0), cfg);
    assert.equal(v.batch, 1);
    assert.equal(v.binaryDataOutput, true);
    assert.deepEqual(v.outputs, [{ name: 'y', binary: true }]);
    const t = v.inputs[0] as WireTensor;
    assert.deepEqual([t.name, t.datatype, t.shape], ['audio', 'FP32', [1, 3]]);
    assert.deepEqual(Buffer.from(t.data), body);
  });

  it('a BYTES input gets its length prefix', () => {
    const cfg = model(0, [tc('text', 'BYTES', [1])], [tc('y', 'FP32', [1])]);
    const v = validateInfer(parseInferBody(Buffer.from('hello'), 0), cfg);
    const t = v.inputs[0] as WireTensor;
    assert.deepEqual(t.shape, [1]);
    assert.deepEqual([...t.data], [5, 0, 0, 0, 104, 101, 108, 108, 111]);
  });

  it("Triton's refusals", () => {
    const raw = parseInferBody(Buffer.alloc(8), 0);
    throwsMesh(
      () => validateInfer(raw, model(0, [tc('a', 'FP32', [1]), tc('b', 'FP32', [1])])),
      'INVALID_ARGUMENT',
      "Raw request must only have 1 input (found 1) to be deduced but got 2 inputs in 'm' model configuration",
    );
    throwsMesh(
      () => validateInfer(raw, model(0, [tc('a', 'FP32', [-1, -1])])),
      'INVALID_ARGUMENT',
      "The shape of the raw input 'a' can not be deduced because there are more than one variable-sized dimension",
    );
    throwsMesh(
      () => validateInfer(raw, model(0, [tc('t', 'BYTES', [2])])),
      'INVALID_ARGUMENT',
      "For BYTE datatype raw input 't', the model must have input shape [1]",
    );
    throwsMesh(
      () => validateInfer(parseInferBody(Buffer.alloc(10), 0), model(0, [tc('a', 'FP32', [-1])])),
      'DATA_SIZE_MISMATCH',
      "input byte size mismatch for input 'a' for model 'm'. Expected 8, got 10",
    );
  });
});
