// Timing mode: each graph run holds its stream for a modelled NPU latency
// instead of computing. Spec grammar (documented in native/README.md):
//   "A+B*batch" or "A+B" or "A"   → A + B·batch microseconds, streams independent
//   "1=900,4=1400,16=3600"         → per-batch table, linear in between,
//                                    extended from the nearest two entries outside
//   "contended:a=A,fp32=W32,fp16=W16[,span=S]"
//                                  → A µs of launch, then rows × W (core·µs per row,
//                                    W16 when the matrix ops run in fp16/bf16) done
//                                    on the device's AI-core pool, shared with every
//                                    run in flight on that device (core_pool.h)
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

  /// Whether runs share the device's AI cores (the contended form) instead of sleeping independently.
  bool contended() const { return contended_; }
  /// Independent forms: the run's latency.
  double MicrosFor(int64_t batch) const;
  /// Contended form: launch time, which holds no cores.
  double LaunchMicros() const { return a_us_; }
  /// Contended form: core·µs a run of `rows` needs (16-bit cost when the matrix ops run in fp16/bf16).
  double CoreMicros(int64_t rows, bool half) const;
  /// Contended form: the most cores a run of `rows` can keep busy (0 = no limit).
  double SpanCores(int64_t rows) const { return span_ > 0 ? span_ * static_cast<double>(rows) : 0; }

 private:
  std::map<int64_t, double> table_;
  double a_us_{0};
  double b_us_{0};
  bool contended_{false};
  double fp32_core_us_{0};
  double fp16_core_us_{0};
  double span_{0};
};

constexpr const char *kDefaultLatency = "500+100*batch";

}  // namespace gemesh::sim

#endif  // GEMESH_SIM_RUNNER_LATENCY_H_
