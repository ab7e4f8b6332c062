import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { batchTiers, finalizeGe, GeBridgeError, GeModel, initGe } from '@ge-mesh/ge-bridge';
import {
  FP32,
  f32,
  maxAbsDiff,
  onSimulator,
  simulatorText,
  skipNative,
  skipUnlessSimulator,
  tempDir,
  writeModel,
} from './support.js';

// y = Relu(x · W + b), x [batch, 4]: small enough to check against plain JS.
const W = [0.5, -1, 0.25, 1.5, 0.75, -0.5, -2, 0.125, 1, 0.25, -0.75, 0.5];
const B = [0.1, -0.2, 0.3];
const GE_FAILED = 0xffffffff;

function reference(x: Float32Array): Float32Array {
  const rows = x.length / 4;
  const y = new Float32Array(rows * 3);
  for (let r = 0; r < rows; r++) {
    for (let j = 0; j < 3; j++) {
      let s = B[j] as number;
      for (let k = 0; k < 4; k++) s += (x[r * 4 + k] as number) * (W[k * 3 + j] as number);
      y[r * 3 + j] = Math.max(0, s);
    }
  }
  return y;
}

function expectBridgeError(fn: () => unknown, status: string, ...fragments: string[]): GeBridgeError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof GeBridgeError, `expected a GeBridgeError, got ${err}`);
    assert.equal(err.status, status, err.message);
    for (const f of fragments) assert.ok(err.message.includes(f), `message lacks "${f}": ${err.message}`);
    return err;
  }
  assert.fail(`expected ${status}`);
}

describe('bridge errors and warnings', { skip: skipNative }, () => {
  const tmp = tempDir('errors');
  let tiny = '';
  let einsum = '';
  let embed = '';
  const load = (overrides: Partial<Parameters<typeof GeModel.load>[0]> = {}) =>
    GeModel.load({
      modelPath: tiny,
      deviceId: 0,
      streams: 1,
      inputs: [{ name: 'x', dataType: 'FP32' }],
      tiers: batchTiers([[4]], [2]),
      ...overrides,
      // fp32 unless a test sets its own session options: the answers are checked to 1e-6.
      sessionOptions: overrides.sessionOptions ?? FP32,
    });

  before(() => {
    tiny = writeModel(tmp.dir, 'tiny', (g) => {
      const x = g.input('x', 'FP32', ['batch', 4]);
      const h = g.op('Gemm', [x, g.floats('w', [4, 3], W), g.floats('b', [3], B)]);
      g.output(g.op('Relu', [h], {}, 'y'), 'FP32', ['batch', 3]);
    });
    embed = writeModel(tmp.dir, 'embed', (g) => {
      const table = g.floats(
        'table',
        [10, 2],
        Array.from({ length: 20 }, (_, i) => i / 2),
      );
      g.output(g.op('Gather', [table, g.input('ids', 'INT64', ['batch', 3])], {}, 'y'), 'FP32', ['batch', 3, 2]);
    });
    einsum = writeModel(tmp.dir, 'einsum', (g) => {
      const x = g.input('x', 'FP32', ['batch', 4]);
      g.output(g.op('Einsum', [x], { equation: { kind: 'string', value: 'ij->ji' } }, 'y'), 'FP32', [4, 'batch']);
    });
  });

  after(() => tmp.cleanup());

  // Whether GEInitialize itself checks the value is the simulator's model of GE; on a real
  // toolkit a bogus global precision could instead poison every later load of this process.
  test('a bad value of a known global option fails init with a message naming the key', {
    skip: skipUnlessSimulator,
  }, () => {
    const err = expectBridgeError(
      () => initGe({ 'ge.exec.precision_mode': 'bogus' }),
      'INIT',
      'GEInitialize failed',
      'E10001: Value [bogus] for parameter [ge.exec.precision_mode] is invalid',
    );
    assert.equal(err.nativeCode, GE_FAILED);
  });

  test('an unknown global option is only a warning', () => {
    const { warnings } = initGe({ 'ge.exec.enableDumpp': '1' });
    if (onSimulator) {
      assert.deepEqual(warnings, ['W10001: option [ge.exec.enableDumpp] is not a known GE option; it is ignored']);
    }
  });

  test('a bad session option value fails the load naming the key', () => {
    expectBridgeError(
      () => load({ sessionOptions: { 'ge.exec.precision_mode_v2': 'fp64' } }),
      'GRAPH',
      ...simulatorText('E10001: Value [fp64] for parameter [ge.exec.precision_mode_v2] is invalid'),
    );
  });

  test('a bad graph option value fails the load naming the key', () => {
    expectBridgeError(
      () => load({ graphOptions: { 'ge.constLifecycle': 'forever' } }),
      'GRAPH',
      // Which call refuses the value (AddGraph here) is the simulator's model of GE.
      ...simulatorText('AddGraph of graph', 'E10001: Value [forever] for parameter [ge.constLifecycle] is invalid'),
    );
  });

  test('both precision keys at once are rejected (E10056)', () => {
    // In one session: GE's session init checks the pair (inner_session.cc → CheckPrecisionModeV2Conflict).
    expectBridgeError(
      () => load({ sessionOptions: { 'ge.exec.precision_mode': 'force_fp32', 'ge.exec.precision_mode_v2': 'origin' } }),
      'GRAPH',
      ...simulatorText('E10056'),
    );
  });

  test('both precision keys across session and graph are rejected too (the simulator checks at AddGraph)', {
    skip: skipUnlessSimulator,
  }, () => {
    expectBridgeError(
      () =>
        load({
          sessionOptions: { 'ge.exec.precision_mode': 'force_fp32' },
          graphOptions: { 'ge.exec.precision_mode_v2': 'origin' },
        }),
      'GRAPH',
      'E10056',
    );
  });

  test('unknown session and graph options are warnings and the model loads and runs', () => {
    const model = load({
      sessionOptions: { ...FP32, 'ge.exec.precison_mode_v2': 'origin' },
      graphOptions: { 'ge.graphKey': 'k1' },
    });
    try {
      if (onSimulator) {
        assert.deepEqual(model.warnings, [
          'W10001: option [ge.exec.precison_mode_v2] is not a known GE option; it is ignored',
          'W10001: option [ge.graphKey] is not a known GE option; it is ignored',
        ]);
      }
      const x = new Float32Array([1, 2, 3, 4, -1, 0.5, 2, -3]);
      const y = new Float32Array(6);
      model.run(0, 0, [x], [y]);
      assert.ok(maxAbsDiff(y, reference(x)) <= 1e-6);
    } finally {
      model.destroy();
    }
  });

  test('ge.graphRunMode other than 0 is refused by the bridge (inference only)', () => {
    expectBridgeError(
      () => load({ graphOptions: { 'ge.graphRunMode': '1' } }),
      'INVALID_ARGUMENT',
      'ge.graphRunMode must be 0',
    );
  });

  test('a missing model file gives a readable parse error', () => {
    const path = join(tmp.dir, 'missing.onnx');
    expectBridgeError(
      () => load({ modelPath: path }),
      'PARSE',
      'aclgrphParseONNX',
      ...simulatorText(`cannot open the model file [${path}]`),
    );
  });

  test('a file that is not ONNX gives a readable parse error', () => {
    const path = join(tmp.dir, 'garbage.onnx');
    writeFileSync(path, Buffer.from('this is not a protobuf model at all \u00ff\u00fe'));
    expectBridgeError(
      () => load({ modelPath: path }),
      'PARSE',
      'aclgrphParseONNX',
      ...simulatorText(`the file [${path}] is not a valid ONNX model`),
    );
  });

  test('an input name the model does not have is a parse error listing the real inputs', () => {
    expectBridgeError(
      () => load({ inputs: [{ name: 'nope', dataType: 'FP32' }] }),
      'PARSE',
      'aclgrphParseONNX',
      ...simulatorText('the model has no input [nope] (inputs: x)'),
    );
  });

  test('an input datatype that differs from the model is refused', () => {
    expectBridgeError(
      () => load({ inputs: [{ name: 'x', dataType: 'INT64' }] }),
      'INVALID_ARGUMENT',
      "input 'x' is FLOAT in the model but configured as INT64",
    );
  });

  test('an op outside the simulated op set fails compilation naming the op', { skip: skipUnlessSimulator }, () => {
    expectBridgeError(
      () => load({ modelPath: einsum }),
      'GRAPH',
      'CompileGraph of graph',
      'uses op Einsum, which the simulator does not implement',
    );
  });

  test('Data nodes without the ONNX names: each input matched by its unique dtype and shape; twins refused', {
    skip: skipUnlessSimulator,
  }, () => {
    // y = table[ids] + x, its inputs in the graph as (ids, x) and configured as (x, ids): order is no evidence.
    const mixed = writeModel(tmp.dir, 'mixed', (g) => {
      const ids = g.input('ids', 'INT64', ['batch', 3]);
      const x = g.input('x', 'FP32', ['batch', 3, 2]);
      const table = g.floats(
        'table',
        [10, 2],
        Array.from({ length: 20 }, (_, i) => i / 2),
      );
      g.output(g.op('Add', [g.op('Gather', [table, ids]), x], {}, 'y'), 'FP32', ['batch', 3, 2]);
    });
    // y = a - b: swapping the two would only flip the sign.
    const twins = writeModel(tmp.dir, 'twins', (g) => {
      const a = g.input('a', 'FP32', ['batch', 4]);
      const b = g.input('b', 'FP32', ['batch', 4]);
      g.output(g.op('Sub', [a, b], {}, 'y'), 'FP32', ['batch', 4]);
    });
    process.env.GEMESH_SIM_DATA_NAMES = 'generic';
    try {
      const model = load({
        modelPath: mixed,
        inputs: [
          { name: 'x', dataType: 'FP32' },
          { name: 'ids', dataType: 'INT64' },
        ],
        tiers: batchTiers([[3, 2], [3]], [1]),
      });
      try {
        assert.deepEqual(model.warnings, [
          "the graph's Data nodes (data_0, data_1) do not carry the ONNX input names; each input was matched by its unique dtype and shape",
        ]);
        const x = new Float32Array([0.25, -1, 2, 0.5, -0.75, 3]);
        const ids = new BigInt64Array([7n, 0n, 3n]);
        const y = new Float32Array(6);
        model.run(0, 0, [x, ids], [y]);
        // table[r] = [r, r + 0.5]
        const want = [7, 7.5, 0, 0.5, 3, 3.5].map((t, i) => t + (x[i] as number));
        assert.ok(maxAbsDiff(y, Float32Array.from(want)) <= 1e-6, `${[...y]}`);
      } finally {
        model.destroy();
      }
      expectBridgeError(
        () =>
          load({
            modelPath: twins,
            inputs: [
              { name: 'a', dataType: 'FP32' },
              { name: 'b', dataType: 'FP32' },
            ],
            tiers: batchTiers([[4], [4]], [1]),
          }),
        'PARSE',
        "the graph's Data nodes (data_0, data_1) do not carry the ONNX input names, and input(s) a, b cannot be told apart by dtype and shape",
      );
    } finally {
      delete process.env.GEMESH_SIM_DATA_NAMES;
    }
  });

  test('a wrong input size is an error, and the model keeps working', () => {
    const model = load({ tiers: batchTiers([[4]], [1, 2]) });
    try {
      const y = new Float32Array(6);
      expectBridgeError(
        () => model.run(0, 1, [new Float32Array(5)], [y]),
        'INVALID_ARGUMENT',
        "input 0 'x' has 20 bytes but tier 1 needs exactly 32 (FLOAT [2,4])",
      );
      expectBridgeError(
        () => model.run(0, 1, [new Float32Array(8)], [new Float32Array(5)]),
        'INVALID_ARGUMENT',
        'output 0 buffer has 20 bytes but tier 1 produces 24',
      );
      expectBridgeError(
        () => model.run(1, 0, [new Float32Array(4)], [y]),
        'INVALID_ARGUMENT',
        'stream 1 is out of range',
      );
      expectBridgeError(
        () => model.run(0, 2, [new Float32Array(4)], [y]),
        'INVALID_ARGUMENT',
        'tier 2 is out of range',
      );
      const x = new Float32Array([0.5, -1, 2, 1, 3, 0, -2, 0.25]);
      model.run(0, 1, [x], [y]);
      assert.ok(maxAbsDiff(y, reference(x)) <= 1e-6);
      const out1 = new Uint8Array(12);
      model.run(0, 0, [x.subarray(4)], [out1]);
      assert.ok(maxAbsDiff(f32(out1), reference(x.subarray(4))) <= 1e-6);
    } finally {
      model.destroy();
    }
  });

  // A device kernel's own check and its text: an NPU's Gather need not fail at all.
  test('an input the device cannot execute fails the run with the kernel message; the next run works', {
    skip: skipUnlessSimulator,
  }, () => {
    const model = load({
      modelPath: embed,
      inputs: [{ name: 'ids', dataType: 'INT64' }],
      tiers: batchTiers([[3]], [1]),
    });
    try {
      const y = new Float32Array(6);
      const err = expectBridgeError(
        () => model.run(0, 0, [new BigInt64Array([1n, 12n, 2n])], [y]),
        'EXECUTE',
        'aclrtSynchronizeStream after graph',
        'Gather index 12 is out of range [0, 10)',
      );
      assert.equal(err.nativeCode, 507011); // ACL_ERROR_RT_MODEL_EXECUTE
      model.run(0, 0, [new BigInt64Array([9n, 0n, -1n])], [y]);
      assert.deepEqual(Array.from(y), [9, 9.5, 0, 0.5, 9, 9.5]);
    } finally {
      model.destroy();
    }
  });

  test('finalize refuses while a model is loaded; a destroyed model refuses runs', () => {
    const model = load();
    expectBridgeError(() => finalizeGe(), 'STATE', 'model(s) are still loaded; destroy them first');
    const x = new Float32Array(8).fill(1);
    const y = new Float32Array(6);
    model.run(0, 0, [x], [y]);
    assert.ok(maxAbsDiff(y, reference(x)) <= 1e-6);
    model.destroy();
    expectBridgeError(() => model.run(0, 0, [x], [y]), 'STATE', `model ${model.handle} is not loaded`);
    expectBridgeError(() => model.destroy(), 'STATE', 'is not loaded');
  });

  test('the last finalize shuts GE down; calls after it are refused', () => {
    finalizeGe();
    expectBridgeError(() => load(), 'STATE', 'the bridge is not initialized (call gemesh_init first)');
    expectBridgeError(() => finalizeGe(), 'STATE', 'the bridge is not initialized');
  });
});
