// Timing mode: each graph run holds its stream for a modelled NPU latency
// instead of computing. Spec grammar (documented in native/README.md):
//   "A+B*batch" or "A+B" or "A"   → A + B·batch microseconds
//   "1=900,4=1400,16=3600"         → per-batch table, linear in between,
//                                    extended from the nearest two entries outside
#ifndef GEMESH_SIM_RUNNER_LATENCY_H_
#define GEMESH_SIM_RUNNER_LATENCY_H_

#include <cstdint>
#include <map>
#include <string>

namespace gemesh::sim {

class LatencyModel {
 public:
  /// Throws SimError naming the spec when it does not parse.
  static LatencyModel Parse(const std::string &spec);
  double MicrosFor(int64_t batch) const;

 private:
  std::map<int64_t, double> table_;
  double a_us_{0};
  double b_us_{0};
};

constexpr const char *kDefaultLatency = "500+100*batch";

}  // namespace gemesh::sim

#endif  // GEMESH_SIM_RUNNER_LATENCY_H_
