import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { configTextFromJson, parseModelConfig } from '@ge-mesh/model-repository';

/** A config pushed as JSON with the load API, read as Triton's protobuf JSON reader reads it. */
describe('JSON model configs', () => {
  const parse = (json: unknown) =>
    parseModelConfig(configTextFromJson(JSON.stringify(json), 'pushed'), { file: 'pushed', modelName: 'm' });

  it("takes the .proto's names and their lowerCamelCase JSON names alike, and enums in any case", () => {
    const io = {
      input: [{ name: 'x', data_type: 'TYPE_FP32', dims: [4] }],
      output: [{ name: 'y', dataType: 'type_fp32', dims: ['4'] }],
    };
    const snake = parse({
      backend: 'onnxruntime',
      max_batch_size: 8,
      ...io,
      instance_group: [{ kind: 'KIND_CPU', count: 2 }],
    });
    const camel = parse({
      backend: 'onnxruntime',
      maxBatchSize: 8,
      ...io,
      instanceGroup: [{ kind: 'kind_cpu', count: 2 }],
    });
    assert.equal(camel.maxBatchSize, 8);
    assert.deepEqual(camel.output, [{ name: 'y', dataType: 'FP32', dims: [4], optional: false }]);
    assert.deepEqual(camel.instanceGroup, snake.instanceGroup);
    assert.deepEqual(camel.instanceGroup, [{ name: 'm_0', kind: 'KIND_CPU', count: 2, gpus: [] }]);
  });
});
