import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { demoModel } from '@ge-mesh/demo-models';
import {
  AttributeType,
  attr,
  createPrng,
  dataTypeFromElemType,
  decodeModel,
  ElemType,
  encodeModel,
  fixLeadingDim,
  floatTensor,
  floatTensorData,
  GraphBuilder,
  int64Tensor,
  type ModelProto,
  makeModel,
  readModelIO,
  rewriteGraphValueInfos,
  tensorValueInfo,
} from '@ge-mesh/onnx';
import * as ort from 'onnxruntime-node';

const SESSION = { intraOpNumThreads: 1, logSeverityLevel: 3 } as const;

const tinyBytes = demoModel('tiny').build();
const ocrBytes = demoModel('ocr_cls').build();
const textBytes = demoModel('text_encoder').build();

function f32(n: number, seed: number): Float32Array {
  return createPrng(seed).floats(n, -1, 1);
}

async function runTiny(bytes: Uint8Array, batch: number): Promise<Float32Array> {
  const session = await ort.InferenceSession.create(bytes, SESSION);
  try {
    const out = await session.run({ x: new ort.Tensor('float32', f32(batch * 16, 7), [batch, 16]) });
    assert.deepEqual(out.y?.dims, [batch, 4]);
    return out.y?.data as Float32Array;
  } finally {
    await session.release();
  }
}

/** A model whose value infos exercise every case fixLeadingDim distinguishes. */
function edgeCaseModel(): ModelProto {
  const g = new GraphBuilder('edges');
  g.input('a', 'FP32', ['N', 'N', 5]);
  g.input('b', 'FP32', [null, 3]);
  g.input('c', 'FP32', [2, 3]);
  g.input('w', 'FP32', ['N', 3]); // overridable constant: an input that is also an initializer
  g.initializer(floatTensor('w', [1, 3], [1, 2, 3]));
  g.op('Identity', ['a'], {}, 'a_out');
  g.op('Identity', ['b'], {}, 'b_out');
  g.output('a_out', 'FP32', ['N', 'N', 5]);
  g.output('b_out', 'FP32', ['M', 3]);
  const graph = g.build();
  graph.valueInfo = [
    tensorValueInfo('hidden', 'FP32', ['N', 'seq', 'N']),
    tensorValueInfo('other', 'FP32', ['seq', 4]),
    { name: 'untyped' },
  ];
  return makeModel(graph);
}

describe('readModelIO', () => {
  test('tiny: x FP32 [batch,16] → y FP32 [batch,4]', () => {
    assert.deepEqual(readModelIO(tinyBytes), {
      inputs: [{ name: 'x', dataType: 'FP32', dims: [-1, 16], dimParams: ['batch', null], shapeKnown: true }],
      outputs: [{ name: 'y', dataType: 'FP32', dims: [-1, 4], dimParams: ['batch', null], shapeKnown: true }],
    });
  });

  test('resnet18: input FP32 [batch,3,224,224] → logits FP32 [batch,1000]', () => {
    const io = readModelIO(demoModel('resnet18').build());
    assert.deepEqual(io, {
      inputs: [
        {
          name: 'input',
          dataType: 'FP32',
          dims: [-1, 3, 224, 224],
          dimParams: ['batch', null, null, null],
          shapeKnown: true,
        },
      ],
      outputs: [{ name: 'logits', dataType: 'FP32', dims: [-1, 1000], dimParams: ['batch', null], shapeKnown: true }],
    });
  });

  test('text_encoder: two INT64 [batch,32] inputs, two FP32 outputs; no initializer is listed', () => {
    const io = readModelIO(textBytes);
    assert.deepEqual(io, {
      inputs: [
        { name: 'input_ids', dataType: 'INT64', dims: [-1, 32], dimParams: ['batch', null], shapeKnown: true },
        { name: 'attention_mask', dataType: 'INT64', dims: [-1, 32], dimParams: ['batch', null], shapeKnown: true },
      ],
      outputs: [
        {
          name: 'last_hidden_state',
          dataType: 'FP32',
          dims: [-1, 32, 64],
          dimParams: ['batch', null, null],
          shapeKnown: true,
        },
        { name: 'pooled', dataType: 'FP32', dims: [-1, 64], dimParams: ['batch', null], shapeKnown: true },
      ],
    });
  });

  test('ocr_cls (the real PaddleOCR file): batch and spatial dims symbolic', () => {
    assert.deepEqual(readModelIO(ocrBytes), {
      inputs: [
        {
          name: 'x',
          dataType: 'FP32',
          dims: [-1, 3, -1, -1],
          dimParams: ['p2o.DynamicDimension.0', null, 'p2o.DynamicDimension.1', 'p2o.DynamicDimension.2'],
          shapeKnown: true,
        },
      ],
      outputs: [
        {
          name: 'softmax_0.tmp_0',
          dataType: 'FP32',
          dims: [-1, 2],
          dimParams: ['p2o.DynamicDimension.3', null],
          shapeKnown: true,
        },
      ],
    });
  });

  test('inputs that are initializers are excluded; unnamed dims read -1 / null', () => {
    const io = readModelIO(encodeModel(edgeCaseModel()));
    assert.deepEqual(
      io.inputs.map((t) => [t.name, t.dims, t.dimParams]),
      [
        ['a', [-1, -1, 5], ['N', 'N', null]],
        ['b', [-1, 3], [null, null]],
        ['c', [2, 3], [null, null]],
      ],
    );
  });

  test('element types map to wire datatypes; unknown rank and non-wire types are reported', () => {
    const g = new GraphBuilder('types');
    g.input('h', 'FP16', [1]);
    g.input('s', 'BYTES', [1]);
    const graph = g.build();
    graph.input?.push(
      { name: 'complex', type: { tensorType: { elemType: ElemType.COMPLEX64, shape: { dim: [{ dimValue: 2 }] } } } },
      { name: 'anyRank', type: { tensorType: { elemType: ElemType.UINT8 } } },
      { name: 'scalar', type: { tensorType: { elemType: ElemType.BOOL, shape: {} } } },
    );
    const io = readModelIO(encodeModel(makeModel(graph)));
    assert.deepEqual(
      io.inputs.map((t) => [t.name, t.dataType, t.dims, t.shapeKnown]),
      [
        ['h', 'FP16', [1], true],
        ['s', 'BYTES', [1], true],
        ['complex', undefined, [2], true],
        ['anyRank', 'UINT8', [], false],
        ['scalar', 'BOOL', [], true],
      ],
    );
    assert.deepEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 16].map(dataTypeFromElemType), [
      'FP32',
      'UINT8',
      'INT8',
      'UINT16',
      'INT16',
      'INT32',
      'INT64',
      'BYTES',
      'BOOL',
      'FP16',
      'FP64',
      'UINT32',
      'UINT64',
      undefined,
      'BF16',
    ]);
  });

  test('a file without a graph is refused', () => {
    assert.throws(() => readModelIO(encodeModel({ irVersion: 8 })), /ONNX model has no graph/);
  });
});

describe('fixLeadingDim', () => {
  test("tiny fixed to 4 runs at batch 4 with the free model's outputs and rejects batch 2", async () => {
    const fixed = fixLeadingDim(tinyBytes, 4);
    assert.deepEqual(readModelIO(fixed).inputs[0]?.dims, [4, 16]);
    assert.deepEqual(readModelIO(fixed).outputs[0]?.dims, [4, 4]);
    assert.deepEqual(await runTiny(fixed, 4), await runTiny(tinyBytes, 4));
    await assert.rejects(
      runTiny(fixed, 2),
      /Got invalid dimensions for input: x for the following indices\n index: 0 Got: 2 Expected: 4/,
    );
    // The free model still takes any batch.
    assert.equal((await runTiny(tinyBytes, 2)).length, 8);
  });

  test('the real PaddleOCR model fixed to 2: its input and output params differ, both are fixed', async () => {
    const fixed = fixLeadingDim(ocrBytes, 2);
    const io = readModelIO(fixed);
    assert.deepEqual(io.inputs[0]?.dims, [2, 3, -1, -1]);
    assert.deepEqual(io.inputs[0]?.dimParams, [null, null, 'p2o.DynamicDimension.1', 'p2o.DynamicDimension.2']);
    assert.deepEqual(io.outputs[0]?.dims, [2, 2]);
    const session = await ort.InferenceSession.create(fixed, SESSION);
    try {
      const run = (batch: number) =>
        session.run({ x: new ort.Tensor('float32', f32(batch * 3 * 48 * 192, 3), [batch, 3, 48, 192]) });
      assert.deepEqual((await run(2))['softmax_0.tmp_0']?.dims, [2, 2]);
      await assert.rejects(run(4), /index: 0 Got: 4 Expected: 2/);
    } finally {
      await session.release();
    }
    // Nodes and weights (Constant nodes here) are untouched.
    assert.deepEqual(decodeModel(fixed).graph?.node, decodeModel(ocrBytes).graph?.node);
  });

  test('text_encoder: both inputs share the batch param and are fixed together', async () => {
    const fixed = fixLeadingDim(textBytes, 3);
    const io = readModelIO(fixed);
    assert.deepEqual(
      [...io.inputs, ...io.outputs].map((t) => t.dims),
      [
        [3, 32],
        [3, 32],
        [3, 32, 64],
        [3, 64],
      ],
    );
    const session = await ort.InferenceSession.create(fixed, SESSION);
    try {
      const ids = new ort.Tensor('int64', new BigInt64Array(3 * 32).fill(5n), [3, 32]);
      const mask = new ort.Tensor('int64', new BigInt64Array(3 * 32).fill(1n), [3, 32]);
      const out = await session.run({ input_ids: ids, attention_mask: mask });
      assert.deepEqual(out.pooled?.dims, [3, 64]);
    } finally {
      await session.release();
    }
  });

  test('unknown leading dims, shared params and value_info are fixed; everything else is kept', () => {
    const fixed = decodeModel(fixLeadingDim(encodeModel(edgeCaseModel()), 8));
    const dims = (v: { type?: { tensorType?: { shape?: { dim?: unknown[] } } } } | undefined) =>
      v?.type?.tensorType?.shape?.dim;
    const graph = fixed.graph;
    assert.deepEqual(dims(graph?.input?.[0]), [{ dimValue: 8 }, { dimValue: 8 }, { dimValue: 5 }]);
    assert.deepEqual(dims(graph?.input?.[1]), [{ dimValue: 8 }, { dimValue: 3 }]);
    assert.deepEqual(dims(graph?.input?.[2]), [{ dimValue: 2 }, { dimValue: 3 }]);
    assert.deepEqual(
      dims(graph?.input?.[3]),
      [{ dimParam: 'N' }, { dimValue: 3 }],
      'an initializer input keeps its shape',
    );
    assert.deepEqual(dims(graph?.output?.[0]), [{ dimValue: 8 }, { dimValue: 8 }, { dimValue: 5 }]);
    assert.deepEqual(dims(graph?.output?.[1]), [{ dimValue: 8 }, { dimValue: 3 }]);
    assert.deepEqual(dims(graph?.valueInfo?.[0]), [{ dimValue: 8 }, { dimParam: 'seq' }, { dimValue: 8 }]);
    assert.deepEqual(dims(graph?.valueInfo?.[1]), [{ dimParam: 'seq' }, { dimValue: 4 }]);
    assert.deepEqual(graph?.valueInfo?.[2], { name: 'untyped' });
    assert.deepEqual(graph?.node, edgeCaseModel().graph?.node);
  });

  test('a model with nothing to fix comes back as the same bytes; fixing twice changes nothing', () => {
    const once = fixLeadingDim(tinyBytes, 4);
    assert.equal(fixLeadingDim(once, 4), once);
    assert.equal(fixLeadingDim(once, 8), once, 'fixed dims are never changed');
  });

  test('a batch that is not a positive integer is refused', () => {
    for (const bad of [0, -1, 1.5, Number.NaN]) {
      assert.throws(() => fixLeadingDim(tinyBytes, bad), {
        name: 'RangeError',
        message: `batch must be a positive integer, got ${bad}`,
      });
    }
  });

  test('fields outside the declared subset survive a rewrite byte for byte', () => {
    // Field 25 (ModelProto.functions) is not declared: it must come through unchanged.
    const functionsField = Uint8Array.from([0xca, 0x01, 0x03, 0x0a, 0x01, 0x66]); // field 25, length 3: FunctionProto { name: "f" }
    const withFunctions = new Uint8Array(tinyBytes.length + functionsField.length);
    withFunctions.set(tinyBytes);
    withFunctions.set(functionsField, tinyBytes.length);
    const fixed = fixLeadingDim(withFunctions, 2);
    assert.deepEqual(fixed.subarray(fixed.length - functionsField.length), functionsField);
    assert.deepEqual(readModelIO(fixed).inputs[0]?.dims, [2, 16]);
  });

  test('rewriteGraphValueInfos sees every input, output and value_info in order', () => {
    const seen: string[] = [];
    const same = rewriteGraphValueInfos(encodeModel(edgeCaseModel()), (kind, v) => {
      seen.push(`${kind}:${v.name}`);
      return undefined;
    });
    assert.equal(same.length, encodeModel(edgeCaseModel()).length);
    assert.deepEqual(seen, [
      'input:a',
      'input:b',
      'input:c',
      'input:w',
      'output:a_out',
      'output:b_out',
      'valueInfo:hidden',
      'valueInfo:other',
      'valueInfo:untyped',
    ]);
  });
});

describe('decodeModel / encodeModel', () => {
  test('generated models re-encode to identical bytes', () => {
    for (const bytes of [tinyBytes, textBytes]) assert.deepEqual(encodeModel(decodeModel(bytes)), bytes);
  });

  test('a built model decodes to what was built', () => {
    const model = edgeCaseModel();
    const decoded = decodeModel(encodeModel(model));
    assert.deepEqual(decoded.graph?.node, model.graph?.node);
    assert.deepEqual(decoded.graph?.input, model.graph?.input);
    assert.deepEqual(decoded.opsetImport, [{ domain: '', version: 17 }]);
    assert.equal(decoded.irVersion, 8);
    assert.deepEqual(floatTensorData(decoded.graph?.initializer?.[0] ?? {}), Float32Array.from([1, 2, 3]));
  });

  test('the real PaddleOCR model round-trips through the subset (opset 9, 471 nodes)', () => {
    const decoded = decodeModel(ocrBytes);
    assert.equal(decoded.irVersion, 8);
    assert.deepEqual(decoded.opsetImport, [{ domain: '', version: 9 }]);
    assert.equal(decoded.graph?.node?.length, 471);
    assert.deepEqual(decodeModel(encodeModel(decoded)), decoded);
  });

  test('attributes carry explicit types; tensors store little-endian raw data', () => {
    const g = new GraphBuilder('attrs');
    g.input('x', 'FP32', [2]);
    g.op('LeakyRelu', ['x'], { alpha: attr.float(1) }, 'y');
    g.op('Transpose', ['x'], { perm: attr.ints(0) }, 'z');
    const node = decodeModel(encodeModel(makeModel(g.build()))).graph?.node;
    assert.deepEqual(node?.[0]?.attribute, [{ name: 'alpha', type: AttributeType.FLOAT, f: 1 }]);
    assert.deepEqual(node?.[1]?.attribute, [{ name: 'perm', type: AttributeType.INTS, ints: [0] }]);
    assert.deepEqual([...(floatTensor('one', [1], [1]).rawData ?? [])], [0x00, 0x00, 0x80, 0x3f]);
    assert.deepEqual(
      [...(int64Tensor('m', [1], [-2]).rawData ?? [])],
      [0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
    );
    assert.throws(() => floatTensor('bad', [2, 2], [1, 2, 3]), /tensor bad: dims \[2,2\] need 4 values, got 3/);
    assert.throws(() => g.input('x', 'FP32', [1]), /value name x is already used in graph attrs/);
  });
});

describe('createPrng', () => {
  test('the same seed gives the same sequence, different seeds differ, values stay in range', () => {
    const a = createPrng(42).floats(10_000, -2, 3);
    assert.deepEqual(createPrng(42).floats(10_000, -2, 3), a);
    assert.notDeepEqual(createPrng(43).floats(10_000, -2, 3), a);
    let sum = 0;
    for (const v of a) {
      assert.ok(v >= -2 && v < 3);
      sum += v;
    }
    assert.ok(Math.abs(sum / a.length - 0.5) < 0.05, `mean ${sum / a.length}`);
    const ints = new Set(Array.from({ length: 1000 }, () => 0).map((_, i) => createPrng(i).int(0, 4)));
    assert.deepEqual([...ints].sort(), [0, 1, 2, 3]);
  });
});
