// GE's on-disk compiled-graph cache (session option ge.graph_compiler_cache_dir,
// graph option ge.graph_key) as the simulator mimics it. GE names the cache
// file after the key alone and loads an existing file as it is, even when the
// graph changed; the simulator records a digest of the graph it compiled and
// refuses a file whose digest differs, so a key that does not change with the
// graph shows up in tests instead of serving another graph.
#ifndef GEMESH_SIM_RUNNER_COMPILE_CACHE_H_
#define GEMESH_SIM_RUNNER_COMPILE_CACHE_H_

#include <cstdint>
#include <string>

#include "common/graph_ir.h"
#include "ops/kernel.h"

namespace gemesh::sim {

/// Digest of everything a compile depends on: the graph (values, constants, nodes, attributes) and the precision.
uint64_t GraphDigest(const IrGraph &ir, const CubePrecision &precision);

/// True when `dir` holds the compiled graph for `key` with this digest. Throws SimError when `dir`
/// is not a directory (GE needs it to exist) or when the file holds another graph (a stale key).
bool CacheLookup(const std::string &dir, const std::string &key, uint64_t digest);

/// Records the compiled graph for `key` (written to a temporary file, then renamed: workers share the folder).
void CacheStore(const std::string &dir, const std::string &key, uint64_t digest);

}  // namespace gemesh::sim

#endif  // GEMESH_SIM_RUNNER_COMPILE_CACHE_H_
