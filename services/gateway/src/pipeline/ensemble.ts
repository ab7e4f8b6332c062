import type { EnsembleStep, RepositoryModel } from '@ge-mesh/model-repository';
import { MeshError, type StageTimings, type WireTensor } from '@ge-mesh/protocol';
import type { ParsedInfer, ValidatedInfer } from '../infer/index.js';
import { validateInfer } from '../infer/index.js';
import type { ModelStates } from '../model-states.js';
import { resolveModel } from '../resolve-model.js';

/** Runs one step: an ordinary inference request of the step's model (batched by its batcher). */
export type StepRunner = (
  model: RepositoryModel,
  version: string,
  request: ValidatedInfer,
) => Promise<{ outputs?: WireTensor[]; timings?: StageTimings }>;

/** What an ensemble request produced: its outputs, and the steps' stage times summed (its statistics). */
export interface EnsembleResult {
  readonly outputs: WireTensor[];
  readonly timings: StageTimings;
}

/**
 * Runs an ensemble's steps for one request, as Triton's ensemble scheduler
 * does: a step starts as soon as every ensemble tensor it reads is
 * available, so independent steps run at once; each is a request of its
 * model with the step's names (input_map: model input ← ensemble tensor,
 * output_map: model output → ensemble tensor). The first step that fails
 * ends the request with an error naming the step; steps already running are
 * not waited for. The steps were checked at load (every output reachable, no
 * cycle), so the ensemble's outputs are always produced when no step fails.
 */
export async function runEnsemble(
  ensemble: RepositoryModel,
  request: ValidatedInfer,
  /** The request's priority as the client sent it: each step maps it to its model's levels. */
  priority: number,
  states: ModelStates,
  runStep: StepRunner,
): Promise<EnsembleResult> {
  const steps = ensemble.config.ensemble?.steps ?? [];
  const tensors = new Map<string, WireTensor>(request.inputs.map((t) => [t.name, t]));
  const timings: StageTimings = {
    queueNs: 0,
    computeInputNs: 0,
    computeInferNs: 0,
    computeOutputNs: 0,
    batchRows: request.batch,
    tier: 0,
  };
  const started = new Set<number>();
  const running = new Map<number, Promise<number>>();
  let failure: MeshError | undefined;

  const launch = (i: number, step: EnsembleStep) => {
    started.add(i);
    const run = (async () => {
      try {
        const { model, version } =
          step.modelVersion === -1
            ? resolveModel(states, step.modelName)
            : resolveModel(states, step.modelName, String(step.modelVersion));
        const parsed: ParsedInfer = {
          ...(request.clientId !== undefined ? { id: request.clientId } : {}),
          inputs: step.inputMap.map((m) => ({ ...(tensors.get(m.ensemble) as WireTensor), name: m.model })),
          outputs: step.outputMap.map((m) => ({ name: m.model, binary: true, classification: 0 })),
          priority,
          timeoutUs: request.timeoutUs,
          parameters: {},
        };
        const res = await runStep(model, version, validateInfer(parsed, model.config));
        const outputs = new Map((res.outputs ?? []).map((t) => [t.name, t]));
        for (const m of step.outputMap) {
          const t = outputs.get(m.model);
          if (!t) throw new MeshError('INTERNAL', `the answer of model '${model.name}' lacks output '${m.model}'`);
          tensors.set(m.ensemble, { ...t, name: m.ensemble });
        }
        const t = res.timings;
        if (t) {
          timings.queueNs += t.queueNs;
          timings.computeInputNs += t.computeInputNs;
          timings.computeInferNs += t.computeInferNs;
          timings.computeOutputNs += t.computeOutputNs;
        }
      } catch (err) {
        const inner = err instanceof MeshError ? err : new MeshError('INTERNAL', (err as Error).message);
        failure ??= new MeshError(
          inner.code,
          `ensemble '${ensemble.name}' step ${i + 1} ('${step.modelName}') failed: ${inner.message}`,
        );
      }
      return i;
    })();
    running.set(i, run);
  };

  for (;;) {
    steps.forEach((step, i) => {
      if (!failure && !started.has(i) && step.inputMap.every((m) => tensors.has(m.ensemble))) launch(i, step);
    });
    if (failure) throw failure;
    if (running.size === 0) break;
    running.delete(await Promise.race(running.values()));
  }
  if (failure) throw failure;
  const outputs = ensemble.config.output.map((o) => tensors.get(o.name));
  const missing = ensemble.config.output.find((_, k) => !outputs[k]);
  if (missing) throw new MeshError('INTERNAL', `ensemble '${ensemble.name}' produced no '${missing.name}'`);
  return { outputs: outputs as WireTensor[], timings };
}
