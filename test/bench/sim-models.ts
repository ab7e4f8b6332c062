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
}

/** The simulated CN-CLIP-shaped NPU of the benchmark: 8 streams, tiers 1..8, 3 ms + 2.3 ms per row. */
export const CLIP_SIM: SimModel = {
  name: 'clip_sim',
  a: 3000,
  b: 2300,
  streams: 8,
  maxBatch: 8,
  maxQueueDelayUs: 10_000,
};

/** The simulator's latency spec (native/sim/src/runner/latency.cc: `A+B*batch`). */
export const latencySpec = (m: SimModel) => `${m.a}+${m.b}*batch`;

/** The modelled ceiling of one device, computed from the spec: every stream running full batches back to back. */
export const modelledCeiling = (m: SimModel) => (m.streams * m.maxBatch) / ((m.a + m.b * m.maxBatch) / 1e6);

/** A one-model repository in a temporary folder (its own, so a mesh loads nothing else). */
export async function writeSimRepository(m: SimModel): Promise<string> {
  const repo = join(tmpdir(), uniqueNamespace(`bench-${m.name}`));
  await mkdir(join(repo, m.name, '1'), { recursive: true });
  await symlink(join(DEMO_REPOSITORY, 'tiny', '1', 'model.onnx'), join(repo, m.name, '1', 'model.onnx'));
  const tiers = Array.from({ length: m.maxBatch }, (_, i) => i + 1).join(', ');
  await writeFile(
    join(repo, m.name, 'config.pbtxt'),
    `# A simulated Ascend NPU model: tiny's graph, each run held for ${latencySpec(m)} µs.
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
