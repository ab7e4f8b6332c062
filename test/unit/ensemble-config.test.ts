import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadRepository } from '@ge-mesh/model-repository';

/**
 * Ensemble configs checked at load, each refusal with its exact message
 * (file, line, column, what to fix): within the config (tensors produced
 * twice, unreachable or unused, cycles) and against the step models
 * (unknown model, names, datatypes, shapes, max_batch_size).
 */
const tensor = (role: 'input' | 'output', name: string, type: string, dims: number[]) =>
  `${role} { name: "${name}" data_type: TYPE_${type} dims: [ ${dims.join(', ')} ] }`;
const step = (model: string, inputs: Record<string, string>, outputs: Record<string, string>) =>
  `  step { model_name: "${model}" ${Object.entries(inputs)
    .map(([k, v]) => `input_map { key: "${k}" value: "${v}" } `)
    .join('')}${Object.entries(outputs)
    .map(([k, v]) => `output_map { key: "${k}" value: "${v}" } `)
    .join('')}}`;

/** Lines 1-4: platform, max_batch_size 4, input x FP32 [4], output y FP32 [4]; then ensemble_scheduling on line 5, steps from line 6. */
const ensemble = (steps: string[], extra: { head?: string[]; mbs?: number } = {}) =>
  [
    'platform: "ensemble"',
    `max_batch_size: ${extra.mbs ?? 4}`,
    ...(extra.head ?? [tensor('input', 'x', 'FP32', [4]), tensor('output', 'y', 'FP32', [4])]),
    'ensemble_scheduling {',
    ...steps,
    '}',
  ].join('\n');

describe('ensemble configs checked at load', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gemesh-ensemble-config-'));
    const model = async (name: string, body: string) => {
      await mkdir(join(dir, name, '1'), { recursive: true });
      // The inputs and outputs are in the config: the file is only looked for.
      await writeFile(join(dir, name, '1', 'model.onnx'), 'not read');
      await writeFile(join(dir, name, 'config.pbtxt'), `backend: "onnxruntime"\nmax_batch_size: 8\n${body}\n`);
    };
    await model('f4', `${tensor('input', 'a', 'FP32', [4])}\n${tensor('output', 'b', 'FP32', [4])}`);
    await model('i4', `${tensor('input', 'a', 'INT64', [4])}\n${tensor('output', 'b', 'INT64', [4])}`);
    await model('f8', `${tensor('input', 'a', 'FP32', [8])}\n${tensor('output', 'b', 'FP32', [8])}`);
    await model(
      'two',
      `${tensor('input', 'a', 'FP32', [4])}\n${tensor('input', 'c', 'FP32', [4])}\n${tensor('output', 'b', 'FP32', [4])}`,
    );
  });
  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** The message an ensemble with this config is refused with ('' when it loads). */
  const refusal = async (config: string): Promise<string> => {
    await rm(join(dir, 'ens'), { recursive: true, force: true });
    await mkdir(join(dir, 'ens', '1'), { recursive: true });
    await writeFile(join(dir, 'ens', 'config.pbtxt'), config);
    const repo = await loadRepository(dir);
    const message = repo.errors.get('ens')?.message ?? '';
    return message.replace(`${join(dir, 'ens', 'config.pbtxt')}`, 'config.pbtxt');
  };

  it('refuses instance groups, warmup and optimization on the ensemble itself, as Triton does', async () => {
    const chain = [step('f4', { a: 'x' }, { b: 'y' })];
    const own = (block: string) => `${ensemble(chain)}\n${block}\n`;
    assert.equal(
      await refusal(own('instance_group [ { count: 2 } ]')),
      "config.pbtxt:8:1: an ensemble takes no instance groups: its steps' configs carry them; remove instance_group",
    );
    assert.equal(
      await refusal(own('optimization { priority: PRIORITY_MAX }')),
      "config.pbtxt:8:1: an ensemble takes no optimization: its steps' configs carry them; remove optimization",
    );
  });

  it('loads a valid two-step chain, with its steps typed', async () => {
    assert.equal(
      await refusal(ensemble([step('f4', { a: 'x' }, { b: 'mid' }), step('f4', { a: 'mid' }, { b: 'y' })])),
      '',
    );
    const repo = await loadRepository(dir);
    const ens = repo.models.get('ens');
    assert.equal(ens?.config.platform, 'ensemble');
    assert.equal(ens?.config.runtime, 'ensemble');
    assert.deepEqual(ens?.config.ensemble?.steps[1], {
      modelName: 'f4',
      modelVersion: -1,
      inputMap: [{ model: 'a', ensemble: 'mid' }],
      outputMap: [{ model: 'b', ensemble: 'y' }],
    });
    assert.deepEqual(
      ens?.versions.map((v) => v.version),
      ['1'],
    );
  });

  const cases: Array<[string, string, string]> = [
    [
      'a tensor produced twice',
      ensemble([step('f4', { a: 'x' }, { b: 'y' }), step('f4', { a: 'x' }, { b: 'y' })]),
      "config.pbtxt:7:72: ensemble tensor 'y' is produced twice: by step 2 ('f4') and also by step 1 ('f4'); give one of them another name",
    ],
    [
      'a step output named as an ensemble input',
      ensemble([step('f4', { a: 'x' }, { b: 'x' })]),
      "config.pbtxt:6:72: ensemble tensor 'x' is produced twice: by step 1 ('f4') and it is an ensemble input; give one of them another name",
    ],
    [
      'a tensor nothing produces',
      ensemble([step('f4', { a: 'ghost' }, { b: 'y' })]),
      "config.pbtxt:6:37: step 1 ('f4') reads ensemble tensor 'ghost', which is neither an ensemble input nor an output of any step",
    ],
    [
      'a cycle',
      ensemble([
        step('two', { a: 'x', c: 'back' }, { b: 'fwd' }),
        step('f4', { a: 'fwd' }, { b: 'back' }),
        step('f4', { a: 'x' }, { b: 'y' }),
      ]),
      "config.pbtxt:6:8: step 1 ('two'), step 2 ('f4') form a cycle: each waits for a tensor only the others produce ('back', 'fwd'); a step may read only ensemble inputs and outputs of steps that do not depend on it",
    ],
    [
      'an output no step produces',
      ensemble([step('f4', { a: 'x' }, { b: 'z' }), step('f4', { a: 'z' }, { b: 'w' })], {
        head: [
          tensor('input', 'x', 'FP32', [4]),
          tensor('output', 'y', 'FP32', [4]),
          tensor('output', 'w', 'FP32', [4]),
        ],
      }),
      "config.pbtxt:4:8: ensemble output 'y' is not produced by any step; map a step output to it in an output_map",
    ],
    [
      'an input no step reads',
      ensemble([step('f4', { a: 'x' }, { b: 'y' })], {
        head: [
          tensor('input', 'x', 'FP32', [4]),
          tensor('input', 'spare', 'FP32', [4]),
          tensor('output', 'y', 'FP32', [4]),
        ],
      }),
      "config.pbtxt:4:7: ensemble input 'spare' is not read by any step; map it in an input_map or remove it",
    ],
    [
      'a step output that goes nowhere',
      ensemble([step('f4', { a: 'x' }, { b: 'y' }), step('f4', { a: 'x' }, { b: 'lost' })]),
      "config.pbtxt:7:72: ensemble tensor 'lost' (output 'b' of step 2 ('f4')) is neither read by a step nor an ensemble output; remove it from the output_map",
    ],
    ['no step', ensemble([]), 'config.pbtxt:5:1: the ensemble lists no step'],
    [
      'dynamic_batching on the ensemble',
      `${ensemble([step('f4', { a: 'x' }, { b: 'y' })])}\ndynamic_batching { }`,
      "config.pbtxt:8:1: 'dynamic_batching' cannot be set together with 'ensemble_scheduling' (line 5:1): both belong to oneof 'scheduling_choice' of ModelConfig; keep only one",
    ],
    [
      'an unknown model',
      ensemble([step('nope', { a: 'x' }, { b: 'y' })]),
      "config.pbtxt:6:22: step 1 ('nope') names a model that is not in the repository (or did not load)",
    ],
    [
      'a name the step model does not have',
      ensemble([step('f4', { input: 'x' }, { b: 'y' })]),
      "config.pbtxt:6:37: step 1 ('f4') maps 'input', which is not an input of model 'f4' (its inputs: a)",
    ],
    [
      'a required model input left unmapped',
      ensemble([step('two', { a: 'x' }, { b: 'y' })]),
      "config.pbtxt:6:8: step 1 ('two') does not map model input 'c'; add it to the input_map",
    ],
    [
      'a datatype mismatch between steps',
      ensemble([step('f4', { a: 'x' }, { b: 'mid' }), step('i4', { a: 'mid' }, { b: 'y' })], {
        head: [tensor('input', 'x', 'FP32', [4]), tensor('output', 'y', 'INT64', [4])],
      }),
      "config.pbtxt:7:37: ensemble tensor 'mid' is FP32 (output 'b' of step 1 ('f4')) but input 'a' of step 2 ('i4') is INT64",
    ],
    [
      'a shape mismatch with an ensemble input',
      ensemble([step('f8', { a: 'x' }, { b: 'y' })]),
      "config.pbtxt:6:37: ensemble tensor 'x' has shape [-1,4] (ensemble input) but input 'a' of step 1 ('f8') has shape [-1,8]",
    ],
    [
      'a max_batch_size above a step model',
      ensemble([step('f4', { a: 'x' }, { b: 'y' })], { mbs: 16 }),
      "config.pbtxt:2:17: the ensemble's max_batch_size 16 is above the max_batch_size 8 of step 1 ('f4'); lower it to at most 8",
    ],
    [
      'ensemble_scheduling under a backend',
      `backend: "onnxruntime"\n${ensemble([step('f4', { a: 'x' }, { b: 'y' })]).replace('platform: "ensemble"\n', '')}`,
      'config.pbtxt:5:1: ensemble_scheduling needs platform: "ensemble" (and no backend)',
    ],
  ];
  for (const [what, config, message] of cases) {
    it(`refuses ${what}`, async () => assert.equal(await refusal(config), message));
  }
});
