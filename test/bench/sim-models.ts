import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEMO_REPOSITORY, uniqueNamespace } from '../support/mesh-harness.js';

/**
 * A simulated Ascend NPU model: tiny's graph (64-byte requests, so the mesh is
 * what is measured, not copying) run by the CANN simulator in timing mode,
 * which holds each stream for `a + b × batch` µs per run, with tiers
 * 1..maxBatch and `streams` streams on every device, however many devices.
 */
export interface SimModel {
  name: string;
  /** µs per run: a + b × batch. */
  a: number;
  b: number;
  streams: number;
  maxBatch: number;
  maxQueueDelayUs: number;
  /** Run under the contended timing model instead of the independent one (native/README.md). */
  contended?: ContendedTiming;
}

/** The contended model's device: `cores` AI cores shared by its streams; core·µs per row in fp32 and fp16. */
export interface ContendedTiming {
  cores: number;
  fp32: number;
  fp16: number;
}

/** AI cores per simulated device in the contended scenarios: the simulator's default (GEMESH_SIM_AICORES). */
export const SIM_AICORES = 20;

/**
 * `m` under the contended model, with one stream alone exactly as fast as under the independent
 * one: a + b·batch at fp16 (the precision a config without a precision key runs at), i.e. b × cores
 * core·µs per row. fp32 rows are priced at 4× fp16, an assumption (these configs never run fp32).
 * The streams then share the device: its ceiling is cores / (b × cores) = 1 / b rows per µs.
 */
export const contendedOf = (m: SimModel, cores = SIM_AICORES): SimModel => ({
  ...m,
  name: `${m.name}_contended`,
  contended: { cores, fp16: m.b * cores, fp32: 4 * m.b * cores },
});

/** The simulated CN-CLIP-shaped NPU of the benchmark: 8 streams, tiers 1..8, 3 ms + 2.3 ms per row. */
export const CLIP_SIM: SimModel = {
  name: 'clip_sim',
  a: 3000,
  b: 2300,
  streams: 8,
  maxBatch: 8,
  maxQueueDelayUs: 10_000,
};

/** The simulator's latency spec (native/sim/src/runner/latency.cc: `A+B*batch`, or the contended form). */
export const latencySpec = (m: SimModel) =>
  m.contended ? `contended:a=${m.a},fp32=${m.contended.fp32},fp16=${m.contended.fp16}` : `${m.a}+${m.b}*batch`;

/**
 * The modelled ceiling of one device, computed from the spec: every stream running full batches back
 * to back, each no faster than alone; under the contended model also at most cores / fp16 rows per µs.
 */
export function modelledCeiling(m: SimModel): number {
  const streams = (m.streams * m.maxBatch) / ((m.a + m.b * m.maxBatch) / 1e6);
  return m.contended ? Math.min(streams, (m.contended.cores / m.contended.fp16) * 1e6) : streams;
}

/** A one-model repository in a temporary folder (its own, so a mesh loads nothing else). */
export async function writeSimRepository(m: SimModel): Promise<string> {
  const repo = join(tmpdir(), uniqueNamespace(`bench-${m.name}`));
  await mkdir(join(repo, m.name, '1'), { recursive: true });
  await symlink(join(DEMO_REPOSITORY, 'tiny', '1', 'model.onnx'), join(repo, m.name, '1', 'model.onnx'));
  const tiers = Array.from({ length: m.maxBatch }, (_, i) => i + 1).join(', ');
  await writeFile(
    join(repo, m.name, 'config.pbtxt'),
    `# A simulated Ascend NPU model: tiny's graph, each run held for ${latencySpec(m)} µs${m.contended ? ` on ${m.contended.cores} shared AI cores` : ''}.
name: "${m.name}"
backend: "npu_ge"
max_batch_size: ${m.maxBatch}
input [{ name: "x" data_type: TYPE_FP32 dims: [16] }]
output [{ name: "y" data_type: TYPE_FP32 dims: [4] }]
instance_group [{ count: ${m.streams} }]
dynamic_batching { preferred_batch_size: [${tiers}] max_queue_delay_microseconds: ${m.maxQueueDelayUs} }
# The GE backend splits instance_group.count over the devices; device_exec_blocks fixes the streams per device.
parameters { key: "device_exec_blocks" value: { string_value: "${m.streams}" } }
parameters { key: "session.gemesh.sim.timing" value: { string_value: "1" } }
parameters { key: "session.gemesh.sim.latency_us" value: { string_value: "${latencySpec(m)}" } }
`,
  );
  return repo;
}
