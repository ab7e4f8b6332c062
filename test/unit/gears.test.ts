// Gears over non-batch dims: parsing and checking at load, gear selection and
// classes, padding inputs into a gear's buffers, cutting outputs back,
// tracing output dims through symbolic names, and the gateway's 400.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  ConfigError,
  type GearSet,
  gearClassOf,
  gearFor,
  loadModel,
  type ModelConfig,
  parseModelConfig,
  traceModelOutputDims,
} from '@ge-mesh/model-repository';
import { attr, ElemType, encodeModel, fixInputDims, GraphBuilder, makeModel, readModelIO } from '@ge-mesh/onnx';
import { MeshError, type WireTensor } from '@ge-mesh/protocol';
import { assembleGearBatch, BufferPool, sliceGearOutputs } from '@ge-mesh/runtime';
import { decide } from '../../services/batcher/src/batch-policy.js';
import { gearClassCost, gearClassShape } from '../../services/batcher/src/batch-shape.js';
import { parseInferBody, validateInfer } from '../../services/gateway/src/infer/index.js';

const FILE = 'models/enc/config.pbtxt';
const param = (key: string, value: string) => `parameters { key: "${key}" value { string_value: "${value}" } }`;

/** A text encoder's config: two INT64 inputs [-1] (seq), gears over batch × seq, both inputs padded with 0. */
function encoderConfig(extra: string[] = [], opts: { pads?: boolean; dims?: string } = {}): string {
  return [
    'backend: "onnxruntime"',
    'max_batch_size: 8',
    'input { name: "input_ids" data_type: TYPE_INT64 dims: [ -1 ] }',
    'input { name: "attention_mask" data_type: TYPE_INT64 dims: [ -1 ] }',
    'output { name: "hidden" data_type: TYPE_FP32 dims: [ -1, 2 ] }',
    'output { name: "pooled" data_type: TYPE_FP32 dims: [ 2 ] }',
    'dynamic_batching { }',
    param('graph.ge.inputShape', 'input_ids:-1,-1;attention_mask:-1,-1'),
    param('graph.ge.dynamicDims', opts.dims ?? '1,32,1,32;1,64,1,64;4,64,4,64;8,128,8,128'),
    ...(opts.pads === false
      ? []
      : [param('gear.pad_value.input_ids', '0'), param('gear.pad_value.attention_mask', '0')]),
    ...extra,
  ].join('\n');
}

const parse = (text: string): ModelConfig => parseModelConfig(text, { file: FILE, modelName: 'enc' });
const gearsOf = (text: string): GearSet => {
  const g = parse(text).gears;
  assert.ok(g, 'the config has gears');
  return g;
};

function configError(text: string): ConfigError {
  try {
    parse(text);
  } catch (e) {
    assert.ok(e instanceof ConfigError, `expected a ConfigError, got ${String(e)}`);
    return e;
  }
  assert.fail('loaded without error');
}

const seqDims = (len: number) => ({ input_ids: [len], attention_mask: [len] });

describe('gears: parsing at load', () => {
  it('reads every gear with each input row shape, the pad values, and the batch sizes as tiers', () => {
    const c = parse(encoderConfig());
    assert.deepEqual(c.tiers, [1, 4, 8]);
    const g = c.gears as GearSet;
    assert.deepEqual(g.inputs, ['input_ids', 'attention_mask']);
    assert.deepEqual(g.padValues, { input_ids: 0, attention_mask: 0 });
    assert.deepEqual(
      g.gears.map((x) => [x.index, x.batch, x.dims.input_ids, x.dims.attention_mask]),
      [
        [0, 1, [32], [32]],
        [1, 1, [64], [64]],
        [2, 4, [64], [64]],
        [3, 8, [128], [128]],
      ],
    );
    assert.ok(Object.isFrozen(g.gears[0]?.dims));
  });

  it('is an ort-runtime and a ge-runtime feature alike (the ge keys are not passed on as graph options)', () => {
    const c = parse(encoderConfig().replace('backend: "onnxruntime"', 'backend: "npu_ge"'));
    assert.equal(c.gears?.gears.length, 4);
    assert.equal(c.ge?.graphOptions['ge.inputShape'], undefined);
    assert.equal(c.ge?.graphOptions['ge.dynamicDims'], undefined);
  });

  it('checks model_warmup against the gears: a sample no gear runs is refused at load, one a gear runs loads', () => {
    const warmup = (rows: number, len: number) =>
      `model_warmup { name: "w" batch_size: ${rows} inputs { key: "input_ids" value { data_type: TYPE_INT64 dims: [ ${len} ] zero_data: true } } inputs { key: "attention_mask" value { data_type: TYPE_INT64 dims: [ ${len} ] zero_data: true } } }`;
    // 4 rows of 20 tokens pad up to the 4×64 gear; 2 rows of 200 tokens fit none.
    assert.equal(parse(encoderConfig([warmup(4, 20)])).warmup?.[0]?.rows, 4);
    const e = configError(encoderConfig([warmup(2, 200)]));
    assert.equal(e.field, 'model_warmup[0].inputs');
    assert.equal(
      e.message,
      `${FILE}:12:40: warmup 'w' (input_ids [2,200], attention_mask [2,200]) fits no gear of the model (gears: input_ids [1,32], attention_mask [1,32]; input_ids [1,64], attention_mask [1,64]; input_ids [4,64], attention_mask [4,64]; input_ids [8,128], attention_mask [8,128]); give it a gear's shape`,
    );
  });

  it('refuses a gear whose value count is not the count of -1s, naming file, line and key', () => {
    const e = configError(encoderConfig([], { dims: '1,32,1,32;4,64' }));
    assert.equal(e.field, 'parameters["graph.ge.dynamicDims"]');
    assert.equal(
      e.message,
      `${FILE}:9:64: gear "4,64" in 'graph.ge.dynamicDims' has 2 value(s), but 'graph.ge.inputShape' has 4 -1 dim(s) to fill`,
    );
  });

  it('refuses gears that give the inputs different batch sizes', () => {
    const e = configError(encoderConfig([], { dims: '1,32,2,32;8,64,8,64' }));
    assert.equal(
      e.detail,
      `gear "1,32,2,32" gives the inputs different batch sizes (1 and 2); a gear gives every input the same one`,
    );
  });

  it('refuses gears whose largest batch is below max_batch_size', () => {
    const e = configError(encoderConfig([], { dims: '1,32,1,32;4,64,4,64' }));
    assert.match(e.detail, /the largest batch size in 'graph.ge.dynamicDims' is 4, below max_batch_size 8/);
  });

  it('refuses a gear listed twice, and a gear value against a fixed config dim', () => {
    assert.equal(
      configError(encoderConfig([], { dims: '8,32,8,32;8,32,8,32' })).detail,
      'gear "8,32,8,32" is listed twice',
    );
    const fixed = encoderConfig([], { dims: '8,16,8,32' }).replace(
      'input { name: "input_ids" data_type: TYPE_INT64 dims: [ -1 ] }',
      'input { name: "input_ids" data_type: TYPE_INT64 dims: [ 32 ] }',
    );
    assert.equal(
      configError(fixed).detail,
      `gear "8,16,8,32" gives 'input_ids' dim 1 the size 16, but its config shape [-1,32] fixes it at 32`,
    );
  });

  it('refuses a variable input dim that no gear fills', () => {
    const text = encoderConfig().replace(
      param('graph.ge.inputShape', 'input_ids:-1,-1;attention_mask:-1,-1'),
      param('graph.ge.inputShape', 'input_ids:-1,-1'),
    );
    const e = configError(text.replace('1,32,1,32;1,64,1,64;4,64,4,64;8,128,8,128', '1,32;8,128'));
    assert.equal(
      e.detail,
      `input 'attention_mask' has a variable dim [-1] but 'graph.ge.inputShape' does not list it; list it with a -1 where the gears fill it, or fix the dim in config.pbtxt`,
    );
  });

  it('checks pad values: a listed input, a value of its type', () => {
    const half = configError(encoderConfig([param('gear.pad_value.input_ids', '0.5')], { pads: false }));
    assert.equal(
      half.detail,
      `parameter 'gear.pad_value.input_ids' is "0.5", which is not a INT64 value (an integer in [-9007199254740991, 9007199254740991])`,
    );
    assert.equal(half.field, 'parameters["gear.pad_value.input_ids"]');
    assert.equal(
      configError(encoderConfig([param('gear.pad_value.hidden', '0')], { pads: false })).detail,
      `parameter 'gear.pad_value.hidden' names 'hidden', which is not an input 'graph.ge.inputShape' lists (input_ids, attention_mask)`,
    );
    assert.equal(
      configError(encoderConfig([param('gear.pad_valu.input_ids', '0')], { pads: false })).detail,
      `unknown parameter 'gear.pad_valu.input_ids'; gear parameters are 'gear.pad_value.<input>' and 'gear.output_dims.<output>'`,
    );
  });

  it('refuses gear parameters on a model without shape gears', () => {
    const text = [
      'backend: "onnxruntime"',
      'max_batch_size: 8',
      'input { name: "x" data_type: TYPE_FP32 dims: [ 4 ] }',
      'output { name: "y" data_type: TYPE_FP32 dims: [ 4 ] }',
      param('gear.pad_value.x', '0'),
    ].join('\n');
    assert.equal(
      configError(text).detail,
      `parameter 'gear.pad_value.x' applies to gears over non-batch dims, but 'graph.ge.inputShape' has no -1 beyond the batch dim; remove it or add such gears`,
    );
  });

  it('reads stated output dims, and refuses malformed ones', () => {
    const g = gearsOf(
      encoderConfig([param('gear.output_dims.hidden', '1=input_ids[1]'), param('gear.output_dims.pooled', '')]),
    );
    assert.deepEqual(g.statedOutputDims, { hidden: [{ dim: 1, input: 'input_ids', inputDim: 1 }], pooled: [] });
    assert.match(
      configError(encoderConfig([param('gear.output_dims.hidden', 'input_ids[1]')])).detail,
      /entry "input_ids\[1\]" is not of the form <output dim>=<input>\[<input dim>\]/,
    );
    assert.match(
      configError(encoderConfig([param('gear.output_dims.hidden', '0=input_ids[1]')])).detail,
      /is out of range: output dims run 1..2, 'input_ids' dims 1..1 \(0, the batch dim, is always sliced by rows\)/,
    );
  });
});

describe('gears: selection', () => {
  const g = gearsOf(encoderConfig());

  it('puts a request in the class of the smallest gear shape that holds it', () => {
    assert.equal(gearClassOf(g, { rows: 1, dims: seqDims(20) })?.key, 'input_ids:32|attention_mask:32');
    assert.equal(gearClassOf(g, { rows: 1, dims: seqDims(32) })?.key, 'input_ids:32|attention_mask:32');
    assert.equal(gearClassOf(g, { rows: 1, dims: seqDims(33) })?.key, 'input_ids:64|attention_mask:64');
    assert.equal(gearClassOf(g, { rows: 2, dims: seqDims(100) })?.key, 'input_ids:128|attention_mask:128');
    assert.equal(gearClassOf(g, { rows: 1, dims: seqDims(129) }), undefined);
    // Rows beyond every gear of its lengths.
    assert.equal(gearClassOf(g, { rows: 9, dims: seqDims(10) }), undefined);
  });

  it('gives a class the batch sizes of the gears that hold it, each on its smallest gear', () => {
    const c32 = gearClassOf(g, { rows: 1, dims: seqDims(20) });
    assert.deepEqual(c32?.tiers, [1, 4, 8]);
    assert.deepEqual(
      [...(c32?.gearOf ?? [])].map(([t, gear]) => [t, gear.index]),
      [
        [1, 0],
        [4, 2],
        [8, 3],
      ],
    );
    const c128 = gearClassOf(g, { rows: 1, dims: seqDims(100) });
    assert.deepEqual(c128?.tiers, [8]);
  });

  it('runs a batch on the gear with the fewest elements that holds all members', () => {
    assert.equal(gearFor(g, [{ rows: 1, dims: seqDims(20) }])?.index, 0);
    assert.equal(
      gearFor(g, [
        { rows: 1, dims: seqDims(20) },
        { rows: 1, dims: seqDims(50) },
      ])?.index,
      2,
    );
    assert.equal(
      gearFor(g, [
        { rows: 3, dims: seqDims(64) },
        { rows: 1, dims: seqDims(1) },
      ])?.index,
      2,
    );
    assert.equal(
      gearFor(g, [
        { rows: 4, dims: seqDims(64) },
        { rows: 1, dims: seqDims(1) },
      ])?.index,
      3,
    );
    assert.equal(gearFor(g, [{ rows: 8, dims: seqDims(129) }]), undefined);
  });

  it('without a pad value an input must match a gear exactly', () => {
    const exact = gearsOf(encoderConfig([], { pads: false }));
    assert.equal(gearClassOf(exact, { rows: 1, dims: seqDims(20) }), undefined);
    assert.deepEqual(gearClassOf(exact, { rows: 1, dims: seqDims(64) })?.tiers, [1, 4]);
    // Only one input may be padded: the other one must match.
    const one = gearsOf(encoderConfig([param('gear.pad_value.input_ids', '0')], { pads: false }));
    assert.equal(gearClassOf(one, { rows: 1, dims: { input_ids: [20], attention_mask: [20] } }), undefined);
    // attention_mask is 32 exactly, so only the gears of 32 tokens hold it.
    assert.deepEqual(gearClassOf(one, { rows: 1, dims: { input_ids: [20], attention_mask: [32] } })?.tiers, [1]);
  });

  it('lets requests of different lengths of one class share a batch; exact shapes (triton) keep them apart', () => {
    const four = gearsOf(encoderConfig([], { dims: '1,32,1,32;4,32,4,32;1,64,1,64;4,64,4,64;8,128,8,128' }));
    const model = { config: parse(encoderConfig([], { dims: '1,32,1,32;4,32,4,32;1,64,1,64;4,64,4,64;8,128,8,128' })) };
    const lengths = [5, 20, 32, 17];
    const classes = lengths.map((len) => gearClassOf(four, { rows: 1, dims: seqDims(len) }));
    const cls = classes[0];
    assert.ok(cls);
    assert.ok(classes.every((c) => c?.key === cls.key));
    const base = { tiers: [1, 4, 8], preferred: [1, 4, 8], maxBatch: 8, maxQueueDelayUs: 0 };
    const shape = gearClassShape(model as Parameters<typeof gearClassShape>[0], base, cls);
    const slots = { laneIdle: true, stageFree: true };
    const tierAware = decide({
      pending: lengths.map(() => ({ rows: 1, shapeKey: cls.key, enqueuedAt: 0 })),
      shape,
      now: 0,
      slots,
      cost: gearClassCost(four, cls),
    });
    assert.deepEqual(tierAware, { kind: 'send', take: 4, rows: 4, tier: 4 });
    assert.equal(cls.gearOf.get(4)?.index, 1);
    const triton = decide({
      pending: lengths.map((len) => ({ rows: 1, shapeKey: `len ${len}`, enqueuedAt: 0 })),
      shape,
      now: 0,
      slots,
      policy: 'triton',
    });
    assert.deepEqual(triton, { kind: 'send', take: 1, rows: 1, tier: 1 });
  });

  it('gives the batcher per-class tiers and a cost in rows of the class', () => {
    const cls = gearClassOf(g, { rows: 1, dims: seqDims(20) });
    assert.ok(cls);
    const base = { tiers: [1, 4, 8], preferred: [1, 4, 8], maxBatch: 8, maxQueueDelayUs: 0 };
    const model = { config: parse(encoderConfig()) } as Parameters<typeof gearClassShape>[0];
    assert.deepEqual(gearClassShape(model, base, cls), {
      ...base,
      tiers: [1, 4, 8],
      preferred: [1, 4, 8],
      maxBatch: 8,
    });
    const cost = gearClassCost(g, cls);
    // Gear (4,64) runs 4 rows of 64 tokens: 8 rows of 32, plus one for the batch.
    assert.equal(cost(1), 2);
    assert.equal(cost(4), 9);
    assert.equal(cost(8), 33);
  });
});

function int64s(values: number[]): Uint8Array {
  return new Uint8Array(BigInt64Array.from(values.map(BigInt)).buffer);
}
function tensor(name: string, shape: number[], values: number[]): WireTensor {
  return { name, datatype: 'INT64', shape, data: int64s(values) };
}
const readInt64s = (b: Uint8Array) =>
  Array.from(new BigInt64Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength)), Number);

describe('gears: padding and slicing', () => {
  const g = gearsOf(encoderConfig([], { dims: '1,4,1,4;4,4,4,4;8,8,8,8' }));
  const specs = [
    { name: 'input_ids', dataType: 'INT64' as const, dims: [-1] },
    { name: 'attention_mask', dataType: 'INT64' as const, dims: [-1] },
  ];

  it('pads each member row to the gear with its pad value; rows past the members are left alone', () => {
    const gear = g.gears[1];
    assert.ok(gear);
    const a = {
      rows: 2,
      inputs: [tensor('input_ids', [2, 2], [1, 2, 3, 4]), tensor('attention_mask', [2, 2], [1, 1, 1, 0])],
    };
    const b = {
      rows: 1,
      inputs: [tensor('input_ids', [1, 3], [5, 6, 7]), tensor('attention_mask', [1, 3], [1, 1, 1])],
    };
    const pool = new BufferPool();
    // Stale contents where rows 0-2 go, to see the padding overwrite them.
    pool.get('input_ids@g1', 4 * 4 * 8).set(int64s(Array(16).fill(9)));
    const out = assembleGearBatch(specs, [a, b], gear, g, pool);
    assert.deepEqual(out.get('input_ids')?.shape, [4, 4]);
    assert.deepEqual(
      readInt64s(out.get('input_ids')?.data as Uint8Array),
      [1, 2, 0, 0, 3, 4, 0, 0, 5, 6, 7, 0, 9, 9, 9, 9],
    );
    assert.deepEqual(
      readInt64s(out.get('attention_mask')?.data as Uint8Array).slice(0, 12),
      [1, 1, 0, 0, 1, 0, 0, 0, 1, 1, 1, 0],
    );
  });

  it('pads with the configured value (not only zero) and copies an exact row as is', () => {
    const padded = gearsOf(
      encoderConfig([], { dims: '1,4,1,4;4,4,4,4;8,8,8,8' }).replace(
        param('gear.pad_value.input_ids', '0'),
        param('gear.pad_value.input_ids', '-7'),
      ),
    );
    const gear = padded.gears[0];
    assert.ok(gear);
    const out = assembleGearBatch(
      specs,
      [{ rows: 1, inputs: [tensor('input_ids', [1, 1], [3]), tensor('attention_mask', [1, 4], [1, 1, 1, 1])] }],
      gear,
      padded,
      new BufferPool(),
    );
    assert.deepEqual(readInt64s(out.get('input_ids')?.data as Uint8Array), [3, -7, -7, -7]);
    assert.deepEqual(readInt64s(out.get('attention_mask')?.data as Uint8Array), [1, 1, 1, 1]);
  });

  it('cuts every output back to each member rows and linked dims', () => {
    // hidden [4,4,2]: element value = row*100 + token*10 + channel.
    const hidden = new Float32Array(4 * 4 * 2);
    for (let r = 0; r < 4; r++)
      for (let t = 0; t < 4; t++) for (let c = 0; c < 2; c++) hidden[r * 8 + t * 2 + c] = r * 100 + t * 10 + c;
    const pooled = Float32Array.from([0, 1, 10, 11, 20, 21, 30, 31]);
    const outputs = new Map([
      ['hidden', { data: new Uint8Array(hidden.buffer), shape: [4, 4, 2] }],
      ['pooled', { data: new Uint8Array(pooled.buffer), shape: [4, 2] }],
    ]);
    const a = { rows: 2, inputs: [tensor('input_ids', [2, 2], [1, 2, 3, 4])] };
    const b = { rows: 1, inputs: [tensor('input_ids', [1, 3], [5, 6, 7])] };
    const links = { hidden: [{ dim: 1, input: 'input_ids', inputDim: 1 }], pooled: [] };
    const outSpecs = [
      { name: 'hidden', dataType: 'FP32' as const, dims: [-1, 2] },
      { name: 'pooled', dataType: 'FP32' as const, dims: [2] },
    ];
    const [sa, sb] = sliceGearOutputs(outSpecs, outputs, [a, b], links, true);
    const f32 = (t: WireTensor | undefined) =>
      Array.from(new Float32Array(Uint8Array.prototype.slice.call(t?.data).buffer));
    assert.deepEqual(sa?.[0]?.shape, [2, 2, 2]);
    assert.deepEqual(f32(sa?.[0]), [0, 1, 10, 11, 100, 101, 110, 111]);
    assert.deepEqual(sb?.[0]?.shape, [1, 3, 2]);
    assert.deepEqual(f32(sb?.[0]), [200, 201, 210, 211, 220, 221]);
    assert.deepEqual(sa?.[1]?.shape, [2, 2]);
    assert.deepEqual(f32(sb?.[1]), [20, 21]);
  });
});

/** ids, mask [batch, seq] → hidden [batch, seq, 2] (named), pooled [batch, 2], extra [batch, n] (a size of its own). */
function encoderOnnx(extraName: string | null = 'n'): Uint8Array {
  const g = new GraphBuilder('enc');
  const ids = g.input('input_ids', 'INT64', ['batch', 'seq']);
  g.input('attention_mask', 'INT64', ['batch', 'seq']);
  const f = g.op('Cast', [ids], { to: attr.int(ElemType.FLOAT) }, 'f');
  g.output(g.op('Identity', [f], {}, 'hidden'), 'FP32', ['batch', 'seq', 2]);
  g.output(g.op('Identity', [f], {}, 'pooled'), 'FP32', ['batch', 2]);
  g.output(g.op('Identity', [f], {}, 'extra'), 'FP32', ['batch', extraName]);
  return encodeModel(makeModel(g.build()));
}

describe('gears: output dims traced through the model file', () => {
  const outputsOf = (names: string[]) =>
    names.map((name) => ({ name, dataType: 'FP32' as const, dims: [-1, 2], optional: false }));

  it('links an output dim named like a padded input dim, and leaves fixed dims alone', () => {
    const g = gearsOf(encoderConfig());
    const links = traceModelOutputDims(g, encoderOnnx(), outputsOf(['hidden', 'pooled']));
    assert.deepEqual(links, { hidden: [{ dim: 1, input: 'input_ids', inputDim: 1 }], pooled: [] });
  });

  it('refuses an output dim it cannot trace, unless the config states it', () => {
    const g = gearsOf(encoderConfig());
    assert.throws(
      () => traceModelOutputDims(g, encoderOnnx(), outputsOf(['extra'])),
      (e: Error) =>
        e.message ===
        `output 'extra' dim 1 has the symbolic size 'n', which no padded input dim has, so its padded part cannot be cut off; name it like the input dim it follows in the model, or state it with parameter 'gear.output_dims.extra' (e.g. "1=input_ids[1]", or "" when it follows no input dim)`,
    );
    const stated = gearsOf(
      encoderConfig([
        'output { name: "extra" data_type: TYPE_FP32 dims: [ -1 ] }',
        param('gear.output_dims.extra', '1=attention_mask[1]'),
      ]),
    );
    assert.deepEqual(traceModelOutputDims(stated, encoderOnnx(), outputsOf(['extra'])), {
      extra: [{ dim: 1, input: 'attention_mask', inputDim: 1 }],
    });
  });

  it('needs no trace when no input is padded', () => {
    const g = gearsOf(encoderConfig([], { pads: false }));
    assert.deepEqual(traceModelOutputDims(g, encoderOnnx(), outputsOf(['extra'])), { extra: [] });
  });

  it('fixInputDims fixes every input dim and the outputs that share their names', () => {
    const fixed = readModelIO(fixInputDims(encoderOnnx(), { input_ids: [4, 64], attention_mask: [4, 64] }));
    assert.deepEqual(
      fixed.inputs.map((i) => i.dims),
      [
        [4, 64],
        [4, 64],
      ],
    );
    assert.deepEqual(
      fixed.outputs.map((o) => o.dims),
      [
        [4, 64, 2],
        [4, 2],
        [4, -1],
      ],
    );
    assert.throws(
      () => fixInputDims(encoderOnnx(), { input_ids: [4, 64], attention_mask: [4, 32] }),
      /the symbolic dim 'seq' is given both 64 and 32/,
    );
  });
});

describe('gears: the gateway', () => {
  const config = parse(encoderConfig([], { dims: '1,32,1,32;1,64,1,64;4,64,4,64;8,128,8,128' }));
  const body = (len: number, rows = 1) =>
    parseInferBody(
      Buffer.from(
        JSON.stringify({
          inputs: ['input_ids', 'attention_mask'].map((name) => ({
            name,
            datatype: 'INT64',
            shape: [rows, len],
            data: Array(rows * len).fill(1),
          })),
        }),
      ),
    );

  it('accepts a request that a gear holds, padding included', () => {
    assert.equal(validateInfer(body(20), config).batch, 1);
    assert.equal(validateInfer(body(128, 8), config).batch, 8);
  });

  it('answers 400 GEAR_MISMATCH naming the gears for a shape no gear holds', () => {
    const expectedGears =
      'input_ids [1,32], attention_mask [1,32]; input_ids [1,64], attention_mask [1,64]; input_ids [4,64], attention_mask [4,64]; input_ids [8,128], attention_mask [8,128]';
    assert.throws(
      () => validateInfer(body(129), config),
      (e: unknown) =>
        e instanceof MeshError &&
        e.code === 'GEAR_MISMATCH' &&
        e.status === 400 &&
        e.message ===
          `input shapes input_ids [1,129], attention_mask [1,129] fit no gear of model 'enc'; its gears are: ${expectedGears}. Inputs input_ids, attention_mask are padded up to a gear; every other dim must match a gear exactly`,
    );
    const exact = parse(encoderConfig([], { pads: false }));
    assert.throws(
      () => validateInfer(body(20), exact),
      (e: unknown) =>
        e instanceof MeshError &&
        e.code === 'GEAR_MISMATCH' &&
        e.message.endsWith(
          'No input may be padded (set gear.pad_value.<input> in the model config to allow it), so the shapes must match a gear exactly',
        ),
    );
  });
});

describe('gears: the NPU demo repository', () => {
  it('npm run models -- --npu-out writes text_encoder_gears, which loads as a ge model with its five gears', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'npu-demo-'));
    try {
      const cli = join(import.meta.dirname, '../../packages/demo-models/src/cli.ts');
      execFileSync(process.execPath, ['--import', 'tsx', cli, '--only', 'tiny', '--npu-out', dir], {
        stdio: 'pipe',
        cwd: join(import.meta.dirname, '../..'),
      });
      const m = await loadModel(dir, 'text_encoder_gears');
      assert.equal(m.config.runtime, 'ge');
      assert.deepEqual(
        m.config.gears?.gears.map((g) => g.batch),
        [1, 4, 1, 4, 8],
      );
      assert.deepEqual(m.config.gears?.padValues, { input_ids: 0, attention_mask: 0 });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
