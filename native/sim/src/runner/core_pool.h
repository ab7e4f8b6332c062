// The AI cores of a simulated device, shared by every run in flight on it
// (timing mode's contended model). Processor sharing with a cap per run:
// whenever a run enters or leaves, the device's cores are divided again by
// water-filling: each run gets an equal share, a run whose cap is below its
// share keeps to its cap, and what it leaves is shared among the others.
#ifndef GEMESH_SIM_RUNNER_CORE_POOL_H_
#define GEMESH_SIM_RUNNER_CORE_POOL_H_

namespace gemesh::sim {

/// AI (cube) cores per simulated device: GEMESH_SIM_AICORES, default 20, read once per process.
int DeviceAiCores();

/// Blocks the calling stream thread until `core_us` core·µs of work are done on
/// `device`'s cores, using at most `cap` cores at a time (0: no cap of its own).
void RunOnCores(int device, double core_us, double cap);

}  // namespace gemesh::sim

#endif  // GEMESH_SIM_RUNNER_CORE_POOL_H_
