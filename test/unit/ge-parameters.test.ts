import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, parseGeParameters, parseGlobalGeOptions, parseModelConfig } from '@ge-mesh/model-repository';

const p = (o: Record<string, string>) => parseGeParameters(new Map(Object.entries(o)));

describe('GE backend parameters', () => {
  it('reads the GE backend keys and routes session./graph./ge. options', () => {
    const g = p({
      device_ids: '0, 1',
      device_exec_blocks: '4',
      static_model: '1',
      'session.ge.exec.precision_mode_v2': 'origin',
      'ge.aicoreNum': '12|10',
      'graph.ge.exec.static_model_ops_lower_limit': '4',
      'graph.ge.inputShape': 'image:-1,3,224,224',
      'graph.ge.dynamicDims': '1;2;4;8',
      'graph.ge.dynamicNodeType': '1',
    });
    assert.deepEqual(g.deviceIds, [0, 1]);
    assert.equal(g.deviceExecBlocks, 4);
    assert.equal(g.staticModel, true);
    assert.equal(g.aicoreNum, '12|10');
    assert.deepEqual(g.sessionOptions, { 'ge.exec.precision_mode_v2': 'origin', 'ge.aicoreNum': '12|10' });
    // Gear keys become tiers (static graphs), never GE options.
    assert.deepEqual(g.graphOptions, { 'ge.exec.static_model_ops_lower_limit': '4' });
  });

  it('defaults: derived streams, no dumps, profiling off', () => {
    const g = p({});
    assert.equal(g.deviceIds, undefined);
    assert.equal(g.deviceExecBlocks, undefined);
    assert.equal(g.instanceExecBlocks, 1);
    assert.equal(g.profiling, 'off');
    assert.equal(p({ device_exec_blocks: '-1' }).deviceExecBlocks, undefined);
  });

  it('dump_data turns on GE data dumps as the backend does; profiling takes true or dynamic', () => {
    assert.deepEqual(p({ dump_data: '1' }).sessionOptions, {
      'ge.exec.enableDump': '1',
      'ge.exec.dumpPath': './dump_data',
      'ge.exec.dumpMode': 'all',
    });
    assert.equal(p({ profiling: 'true' }).profiling, 'on');
    assert.equal(p({ profiling: 'dynamic' }).profiling, 'dynamic');
    assert.equal(p({ dump_graph: '1' }).dumpGraph, true);
  });

  const bad: Array<[Record<string, string>, string]> = [
    [{ device_ids: '0,x' }, `parameter 'device_ids' must be an integer >= 0, got "x"`],
    [{ device_ids: '1,1' }, `parameter 'device_ids' lists a device twice: "1,1"`],
    [{ device_exec_blocks: '0' }, `parameter 'device_exec_blocks' must be -1 (derive) or >= 1, got "0"`],
    [{ static_model: 'yes' }, `parameter 'static_model' must be "1" or "0" (or true/false), got "yes"`],
    [
      { 'session.ge.exec.precision_mode_v2': 'fp8' },
      `parameter 'session.ge.exec.precision_mode_v2' has the invalid value "fp8"; it must be one of fp16, origin, cube_fp16in_fp32out, mixed_float16, mixed_bfloat16, cube_hif8, mixed_hif8`,
    ],
    [
      { 'ge.aicoreNum': '12/10' },
      `parameter 'ge.aicoreNum' has the invalid value "12/10"; it must be of the form "cube|vector", e.g. "12|10"`,
    ],
    [
      { 'session.ge.exec.precision_mode_v2': 'origin', 'graph.ge.exec.precision_mode': 'force_fp16' },
      'set either ge.exec.precision_mode_v2 or ge.exec.precision_mode, not both (GE refuses the pair, E10056)',
    ],
    [
      { instance_exec_blocks: '2' },
      `parameter 'instance_exec_blocks' must be 1: splitting one request across streams is not supported; raise instance_group count or device_exec_blocks to add streams`,
    ],
    [
      { 'global.ge.exec.deviceId': '0' },
      `parameter 'global.ge.exec.deviceId': process-wide GE options are set with the worker's --ge-options flag or GE_NPU_CONFIG, not per model`,
    ],
  ];
  for (const [params, message] of bad) {
    it(`refuses ${JSON.stringify(params)}`, () => assert.throws(() => p(params), { message }));
  }

  it('an unknown key is a load error naming the key, with the file, line and column', () => {
    const text = [
      'name: "m"',
      'backend: "npu_ge"',
      'max_batch_size: 4',
      'input [{ name: "x" data_type: TYPE_FP32 dims: [2] }]',
      'output [{ name: "y" data_type: TYPE_FP32 dims: [2] }]',
      'parameters { key: "device_id" value: { string_value: "0" } }',
    ].join('\n');
    assert.throws(
      () => parseModelConfig(text, { file: 'repo/m/config.pbtxt', modelName: 'm' }),
      (e: unknown) =>
        e instanceof ConfigError &&
        e.field === 'parameters["device_id"]' &&
        e.message.startsWith('repo/m/config.pbtxt:6:') &&
        e.message.includes("unknown parameter 'device_id' for an npu_ge model"),
    );
  });

  it('process-wide options: GE_NPU_CONFIG overlaid by --ge-options, numbers as integers', () => {
    assert.deepEqual(
      parseGlobalGeOptions('{"ge.exec.deviceId": 0, "ge.aicoreNum": "8|8"}', '{"ge.aicoreNum": "12|10"}'),
      {
        'ge.exec.deviceId': '0',
        'ge.aicoreNum': '12|10',
      },
    );
    assert.throws(() => parseGlobalGeOptions('{nope', undefined), /^SyntaxError|GE_NPU_CONFIG is not valid JSON/);
    assert.throws(() => parseGlobalGeOptions(undefined, '[1]'), {
      message: '--ge-options must be a JSON object of GE option keys to values',
    });
  });
});
