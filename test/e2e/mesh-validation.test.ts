import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { httpCall } from '../support/http-call.js';
import { startTestMesh, type TestMesh } from '../support/mesh-harness.js';

/**
 * Every validation rule through the running mesh: exact HTTP status and
 * Triton's exact error text, and a valid request still answered correctly
 * right after the bad ones.
 */
const X16 = Array.from({ length: 16 }, (_, i) => i / 16);
const x = (shape: number[], data: number[] = X16, datatype = 'FP32') => ({ name: 'x', shape, datatype, data });
const NOTE =
  'NOTE: Setting a non-zero max_batch_size in the model config requires a batch dimension to be prepended to each input shape. ' +
  'If you want to specify the full shape including the batch dim in your input dims config, try setting max_batch_size to zero. ' +
  'See the model configuration docs for more info on max_batch_size.';

describe('end to end: validation with Triton status codes and texts', { timeout: 180_000 }, () => {
  let mesh: TestMesh;
  before(async () => {
    mesh = await startTestMesh({
      flags: { worker: ['--models', 'tiny,text_encoder'], batcher: ['--models', 'tiny,text_encoder'] },
    });
  });
  after(async () => {
    await mesh?.teardown();
  });

  const call = (method: string, path: string, body?: unknown) => httpCall(mesh.url, method, path, body);
  const expectError = async (path: string, body: unknown, status: number, error: string) => {
    const r = await call('POST', path, body);
    assert.equal(r.status, status, r.text);
    assert.deepEqual(JSON.parse(r.text), { error });
  };

  const cases: Array<[string, string, unknown, number, string]> = [
    [
      'unknown model',
      '/v2/models/nope/infer',
      { inputs: [x([1, 16])] },
      404,
      "Request for unknown model: 'nope' is not found",
    ],
    [
      'unknown version',
      '/v2/models/tiny/versions/7/infer',
      { inputs: [x([1, 16])] },
      404,
      "Request for unknown model: 'tiny' version 7 is not found",
    ],
    ['non-integer version', '/v2/models/tiny/versions/one/infer', { inputs: [x([1, 16])] }, 404, 'Not Found'],
    [
      'unknown input',
      '/v2/models/tiny/infer',
      { inputs: [{ ...x([1, 16]), name: 'z' }] },
      400,
      "unexpected inference input 'z' for model 'tiny'",
    ],
    [
      'missing input',
      '/v2/models/text_encoder/infer',
      {
        inputs: [
          { name: 'input_ids', shape: [1, 32], datatype: 'INT64', data: Array.from({ length: 32 }, (_, i) => i) },
        ],
      },
      400,
      "expected 2 inputs but got 1 inputs for model 'text_encoder'. Got input(s) ['input_ids'], but missing required input(s) ['attention_mask']. Please provide all required input(s).",
    ],
    [
      'wrong datatype',
      '/v2/models/tiny/infer',
      {
        inputs: [
          x(
            [1, 16],
            X16.map((_, i) => i),
            'INT32',
          ),
        ],
      },
      400,
      "inference input 'x' data-type is 'INT32', but model 'tiny' expects 'FP32'",
    ],
    [
      'wrong shape',
      '/v2/models/tiny/infer',
      { inputs: [x([2, 8])] },
      400,
      `unexpected shape for input 'x' for model 'tiny'. Expected [-1,16], got [2,8]. ${NOTE}`,
    ],
    [
      'batch over max_batch_size',
      '/v2/models/tiny/infer',
      {
        inputs: [
          x(
            [9, 16],
            Array.from({ length: 9 * 16 }, () => 0.5),
          ),
        ],
      },
      400,
      "inference request batch-size must be <= 8 for 'tiny'",
    ],
    [
      'data shorter than the shape',
      '/v2/models/tiny/infer',
      { inputs: [x([2, 16])] },
      400,
      "Failed to parse 'data' field: shape does not match true shape",
    ],
    [
      'unknown output',
      '/v2/models/tiny/infer',
      { inputs: [x([1, 16])], outputs: [{ name: 'q' }] },
      400,
      "unexpected inference output 'q' for model 'tiny'",
    ],
    [
      'FP16 as JSON',
      '/v2/models/tiny/infer',
      { inputs: [x([1, 16], X16, 'FP16')] },
      400,
      'receiving FP16 data via JSON is not supported. Please use the binary data format for input x',
    ],
    [
      '-1 in a request shape',
      '/v2/models/tiny/infer',
      { inputs: [x([-1, 16])] },
      400,
      "Unable to parse 'shape': attempt to access JSON non-unsigned-integer as unsigned-integer",
    ],
    [
      'reserved parameter',
      '/v2/models/tiny/infer',
      { parameters: { triton_x: 1 }, inputs: [x([1, 16])] },
      400,
      "parameter keys starting with 'triton_' are reserved for Triton usage and should not be specified.",
    ],
    [
      'malformed JSON',
      '/v2/models/tiny/infer',
      '{"inputs":[{"name":"x",',
      400,
      'failed to parse the request JSON buffer: Missing a name for object member. at 23',
    ],
  ];
  for (const [name, path, body, status, error] of cases) {
    it(`${name} → ${status}`, () => expectError(path, body, status, error));
  }

  it('health, metadata and ready endpoints answer as Triton does', async () => {
    assert.deepEqual(await call('GET', '/v2/health/live'), { status: 200, text: '' });
    assert.deepEqual(await call('GET', '/v2/health/ready'), { status: 200, text: '' });
    assert.deepEqual(await call('GET', '/v2/models/tiny/ready'), { status: 200, text: '' });
    assert.deepEqual(await call('GET', '/v2/models/tiny/versions/1/ready'), { status: 200, text: '' });
    const unknownReady = await call('GET', '/v2/models/nope/ready');
    assert.equal(unknownReady.status, 404);
    const meta = await call('GET', '/v2/models/tiny');
    assert.equal(meta.status, 200);
    assert.deepEqual(JSON.parse(meta.text), {
      name: 'tiny',
      versions: ['1'],
      platform: 'onnxruntime_onnx',
      inputs: [{ name: 'x', datatype: 'FP32', shape: [-1, 16] }],
      outputs: [{ name: 'y', datatype: 'FP32', shape: [-1, 4] }],
    });
    assert.deepEqual(await call('GET', '/v2/nothing'), { status: 404, text: '{"error":"Not Found"}' });
    assert.deepEqual(await call('DELETE', '/v2/health/live'), { status: 405, text: '{"error":"Method Not Allowed"}' });
  });

  it('a valid request right after the bad ones is answered correctly', async () => {
    const r = await call('POST', '/v2/models/tiny/infer', { id: 'ok-1', inputs: [x([1, 16])] });
    assert.equal(r.status, 200, r.text);
    const body = JSON.parse(r.text) as {
      id: string;
      outputs: Array<{ name: string; shape: number[]; data: number[] }>;
    };
    assert.equal(body.id, 'ok-1');
    assert.deepEqual(body.outputs[0]?.shape, [1, 4]);
    assert.equal(body.outputs[0]?.data.length, 4);
    assert.ok(body.outputs[0]?.data.every(Number.isFinite));
  });
});
