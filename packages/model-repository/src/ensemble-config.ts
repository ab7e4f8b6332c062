/**
 * Triton's `ensemble_scheduling`: the steps of an ensemble, read and checked
 * at load. readEnsemble checks what the config alone can tell (each tensor
 * produced once, every step reachable, no cycle, nothing unused);
 * checkEnsembleSteps checks the steps against their models once the
 * repository is known (models exist, names, datatypes and shapes agree).
 * Errors are ConfigErrors naming the file, line and field.
 */
import { ConfigError, type SourcePosition } from './config-error.js';
import type { EnsembleConfig, EnsembleStep, RepositoryModel, TensorConfig, TensorMapping } from './model-config.js';
import type { TextMessage } from './text-format/parser.js';
import { sourcePosition, valuePosition } from './text-format/positions.js';

type Msg = TextMessage;

const stepName = (i: number, model: string) => `step ${i + 1} ('${model}')`;
const stepField = (i: number) => `ensemble_scheduling.step[${i}]`;

function fail(file: string, at: SourcePosition | undefined, field: string, detail: string): never {
  throw new ConfigError({ kind: 'invalid', file, position: at, field, detail });
}

/** Where each ensemble tensor comes from: an ensemble input, or a step's output. */
type Source = { kind: 'input'; tensor: TensorConfig } | { kind: 'step'; step: number; mapping: TensorMapping };

/**
 * The steps of a platform "ensemble" config, checked within the config.
 * `inputs`/`outputs` are the ensemble's own (already read).
 */
export function readEnsemble(
  raw: Msg,
  file: string,
  inputs: readonly TensorConfig[],
  outputs: readonly TensorConfig[],
): EnsembleConfig {
  const block = raw.ensemble_scheduling as Msg | undefined;
  if (!block) {
    fail(
      file,
      valuePosition(raw, 'platform'),
      'ensemble_scheduling',
      'platform "ensemble" needs an ensemble_scheduling block listing its steps',
    );
  }
  // As Triton: an ensemble has no instances, warmup or optimization of its own (its steps do).
  for (const [field, what] of [
    ['instance_group', 'instance groups'],
    ['model_warmup', 'model_warmup'],
    ['optimization', 'optimization'],
  ] as const) {
    if (field in raw) {
      fail(
        file,
        sourcePosition(raw, field),
        field,
        `an ensemble takes no ${what}: its steps' configs carry them; remove ${field}`,
      );
    }
  }
  inputs.forEach((t, i) => {
    if (t.optional) {
      fail(
        file,
        sourcePosition(raw, 'input', i),
        `input[${i}].optional`,
        `ensemble input '${t.name}' is optional, which ensembles do not support; make it required`,
      );
    }
  });
  const stepMsgs = (block.step as Msg[] | undefined) ?? [];
  if (stepMsgs.length === 0) {
    fail(file, sourcePosition(raw, 'ensemble_scheduling'), 'ensemble_scheduling.step', 'the ensemble lists no step');
  }

  const steps: EnsembleStep[] = stepMsgs.map((m, i) => {
    const at = sourcePosition(block, 'step', i);
    const modelName = (m.model_name as string | undefined) ?? '';
    if (modelName === '') fail(file, at, `${stepField(i)}.model_name`, `step ${i + 1} needs a model_name`);
    const modelVersion = Number((m.model_version as number | bigint | undefined) ?? -1);
    if (modelVersion < -1 || modelVersion === 0) {
      fail(
        file,
        valuePosition(m, 'model_version'),
        `${stepField(i)}.model_version`,
        `${stepName(i, modelName)} has model_version ${modelVersion}; use -1 (the highest ready version) or a version number >= 1`,
      );
    }
    const mappings = (field: 'input_map' | 'output_map'): TensorMapping[] => {
      const map = (m[field] as Record<string, string> | undefined) ?? {};
      const list = Object.entries(map).map(([model, ensemble]) => ({ model, ensemble }));
      if (list.length === 0) {
        fail(
          file,
          at,
          `${stepField(i)}.${field}`,
          `${stepName(i, modelName)} has no ${field}; map the model's ${field === 'input_map' ? 'inputs' : 'outputs'} to ensemble tensors`,
        );
      }
      return list;
    };
    return { modelName, modelVersion, inputMap: mappings('input_map'), outputMap: mappings('output_map') };
  });

  const mapAt = (i: number, field: 'input_map' | 'output_map', key: string) =>
    sourcePosition(stepMsgs[i] as Msg, field, key);
  const mapField = (i: number, field: 'input_map' | 'output_map', key: string) => `${stepField(i)}.${field}["${key}"]`;

  // Each ensemble tensor has one source.
  const sources = new Map<string, Source>(inputs.map((t) => [t.name, { kind: 'input', tensor: t }]));
  steps.forEach((s, i) => {
    for (const o of s.outputMap) {
      const prior = sources.get(o.ensemble);
      if (prior) {
        const by =
          prior.kind === 'input'
            ? 'it is an ensemble input'
            : `also by ${stepName(prior.step, steps[prior.step]?.modelName ?? '')}`;
        fail(
          file,
          mapAt(i, 'output_map', o.model),
          mapField(i, 'output_map', o.model),
          `ensemble tensor '${o.ensemble}' is produced twice: by ${stepName(i, s.modelName)} and ${by}; give one of them another name`,
        );
      }
      sources.set(o.ensemble, { kind: 'step', step: i, mapping: o });
    }
  });

  // Every tensor a step reads has a source.
  steps.forEach((s, i) => {
    for (const m of s.inputMap) {
      if (!sources.has(m.ensemble)) {
        fail(
          file,
          mapAt(i, 'input_map', m.model),
          mapField(i, 'input_map', m.model),
          `${stepName(i, s.modelName)} reads ensemble tensor '${m.ensemble}', which is neither an ensemble input nor an output of any step`,
        );
      }
    }
  });

  // Every step can run: its inputs become available from the ensemble inputs on.
  const available = new Set(inputs.map((t) => t.name));
  const done = new Set<number>();
  for (let progress = true; progress; ) {
    progress = false;
    steps.forEach((s, i) => {
      if (done.has(i) || !s.inputMap.every((m) => available.has(m.ensemble))) return;
      done.add(i);
      progress = true;
      for (const o of s.outputMap) available.add(o.ensemble);
    });
  }
  const stuck = steps.map((_, i) => i).filter((i) => !done.has(i));
  if (stuck.length > 0) {
    const first = stuck[0] as number;
    const waiting = [
      ...new Set(stuck.flatMap((i) => (steps[i] as EnsembleStep).inputMap.map((m) => m.ensemble))),
    ].filter((t) => !available.has(t));
    fail(
      file,
      sourcePosition(block, 'step', first),
      stepField(first),
      `${stuck.map((i) => stepName(i, (steps[i] as EnsembleStep).modelName)).join(', ')} form a cycle: each waits for a tensor only the others produce (${waiting.map((t) => `'${t}'`).join(', ')}); a step may read only ensemble inputs and outputs of steps that do not depend on it`,
    );
  }

  // Every ensemble output is produced; every tensor is used.
  outputs.forEach((t, k) => {
    if (sources.get(t.name)?.kind !== 'step') {
      fail(
        file,
        sourcePosition(raw, 'output', k),
        `output[${k}]`,
        `ensemble output '${t.name}' is not produced by any step; map a step output to it in an output_map`,
      );
    }
  });
  const read = new Set(steps.flatMap((s) => s.inputMap.map((m) => m.ensemble)));
  const outputNames = new Set(outputs.map((t) => t.name));
  inputs.forEach((t, k) => {
    if (!read.has(t.name)) {
      fail(
        file,
        sourcePosition(raw, 'input', k),
        `input[${k}]`,
        `ensemble input '${t.name}' is not read by any step; map it in an input_map or remove it`,
      );
    }
  });
  steps.forEach((s, i) => {
    for (const o of s.outputMap) {
      if (read.has(o.ensemble) || outputNames.has(o.ensemble)) continue;
      fail(
        file,
        mapAt(i, 'output_map', o.model),
        mapField(i, 'output_map', o.model),
        `ensemble tensor '${o.ensemble}' (output '${o.model}' of ${stepName(i, s.modelName)}) is neither read by a step nor an ensemble output; remove it from the output_map`,
      );
    }
  });
  return { steps };
}

/**
 * Checks an ensemble's steps against their models: each exists (and is not
 * an ensemble), serves the version asked for, and every mapped name is an
 * input/output of it; every required input is mapped; datatypes and fixed
 * dims of each ensemble tensor agree between where it is produced and where
 * it is read; the ensemble's max_batch_size is within each step's. Throws
 * ConfigError naming the ensemble's file, line and field.
 */
export function checkEnsembleSteps(
  ensemble: RepositoryModel,
  lookup: (name: string) => RepositoryModel | undefined,
): void {
  const cfg = ensemble.config;
  if (!cfg.ensemble) return;
  const file = ensemble.configFile ?? ensemble.dir;
  const raw = cfg.raw as Msg;
  const stepMsgs = ((raw.ensemble_scheduling as Msg).step as Msg[] | undefined) ?? [];
  const steps = cfg.ensemble.steps;
  const models = steps.map((s, i) => {
    const at = sourcePosition(raw.ensemble_scheduling as Msg, 'step', i);
    const m = lookup(s.modelName);
    const where = (stepMsgs[i] && valuePosition(stepMsgs[i] as Msg, 'model_name')) ?? at;
    if (!m || m.name === ensemble.name) {
      fail(
        file,
        where,
        `${stepField(i)}.model_name`,
        m
          ? `${stepName(i, s.modelName)} names the ensemble itself`
          : `${stepName(i, s.modelName)} names a model that is not in the repository (or did not load)`,
      );
    }
    if (m.config.ensemble) {
      fail(
        file,
        where,
        `${stepField(i)}.model_name`,
        `${stepName(i, s.modelName)} is itself an ensemble; nested ensembles are not supported: list its steps in this ensemble instead`,
      );
    }
    if (s.modelVersion !== -1 && !servesVersion(m, s.modelVersion)) {
      fail(
        file,
        valuePosition(stepMsgs[i] as Msg, 'model_version'),
        `${stepField(i)}.model_version`,
        `${stepName(i, s.modelName)} asks for version ${s.modelVersion}, which model '${m.name}' does not serve (it serves ${m.versions.map((v) => v.version).join(', ')})`,
      );
    }
    if (cfg.maxBatchSize > m.config.maxBatchSize) {
      fail(
        file,
        valuePosition(raw, 'max_batch_size'),
        'max_batch_size',
        `the ensemble's max_batch_size ${cfg.maxBatchSize} is above the max_batch_size ${m.config.maxBatchSize} of ${stepName(i, s.modelName)}; lower it to at most ${m.config.maxBatchSize}`,
      );
    }
    return m;
  });

  // A tensor's full shape as a client sees it: the batch dim first when the model batches.
  const fullShape = (t: TensorConfig, maxBatchSize: number) => (maxBatchSize > 0 ? [-1, ...t.dims] : [...t.dims]);
  const produced = new Map<string, { t: TensorConfig; shape: number[]; from: string }>();
  for (const t of cfg.input) produced.set(t.name, { t, shape: fullShape(t, cfg.maxBatchSize), from: 'ensemble input' });

  steps.forEach((s, i) => {
    const m = models[i] as RepositoryModel;
    const msg = stepMsgs[i] as Msg;
    for (const field of ['input_map', 'output_map'] as const) {
      const role = field === 'input_map' ? 'input' : 'output';
      const own = field === 'input_map' ? m.config.input : m.config.output;
      for (const map of field === 'input_map' ? s.inputMap : s.outputMap) {
        const t = own.find((x) => x.name === map.model);
        if (!t) {
          fail(
            file,
            sourcePosition(msg, field, map.model),
            `${stepField(i)}.${field}["${map.model}"]`,
            `${stepName(i, s.modelName)} maps '${map.model}', which is not an ${role} of model '${m.name}' (its ${role}s: ${own.map((x) => x.name).join(', ')})`,
          );
        }
        if (field === 'output_map') {
          produced.set(map.ensemble, {
            t,
            shape: fullShape(t, m.config.maxBatchSize),
            from: `output '${t.name}' of ${stepName(i, s.modelName)}`,
          });
        }
      }
    }
    const mapped = new Set(s.inputMap.map((x) => x.model));
    const unmapped = m.config.input.find((t) => !t.optional && !mapped.has(t.name));
    if (unmapped) {
      fail(
        file,
        sourcePosition(raw.ensemble_scheduling as Msg, 'step', i),
        `${stepField(i)}.input_map`,
        `${stepName(i, s.modelName)} does not map model input '${unmapped.name}'; add it to the input_map`,
      );
    }
  });

  // Where a tensor is read, it must be what was produced.
  const agree = (
    name: string,
    wanted: TensorConfig,
    wantedShape: number[],
    what: string,
    at: SourcePosition | undefined,
    field: string,
  ) => {
    const src = produced.get(name);
    if (!src) return;
    if (src.t.dataType !== wanted.dataType) {
      fail(
        file,
        at,
        field,
        `ensemble tensor '${name}' is ${src.t.dataType} (${src.from}) but ${what} is ${wanted.dataType}`,
      );
    }
    if (!shapesAgree(src.shape, wantedShape)) {
      fail(
        file,
        at,
        field,
        `ensemble tensor '${name}' has shape [${src.shape.join(',')}] (${src.from}) but ${what} has shape [${wantedShape.join(',')}]`,
      );
    }
  };
  steps.forEach((s, i) => {
    const m = models[i] as RepositoryModel;
    for (const map of s.inputMap) {
      const t = m.config.input.find((x) => x.name === map.model) as TensorConfig;
      agree(
        map.ensemble,
        t,
        fullShape(t, m.config.maxBatchSize),
        `input '${t.name}' of ${stepName(i, s.modelName)}`,
        sourcePosition(stepMsgs[i] as Msg, 'input_map', map.model),
        `${stepField(i)}.input_map["${map.model}"]`,
      );
    }
  });
  cfg.output.forEach((t, k) => {
    agree(
      t.name,
      t,
      fullShape(t, cfg.maxBatchSize),
      `ensemble output '${t.name}'`,
      sourcePosition(raw, 'output', k),
      `output[${k}]`,
    );
  });
}

/** Same rank, and each dim equal where both are fixed (-1 matches anything). */
function shapesAgree(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === -1 || b[i] === -1 || d === b[i]);
}

function servesVersion(m: RepositoryModel, version: number): boolean {
  return m.versions.some((v) => v.version === String(version));
}
