// CANN simulator: gert::ExpandDimsType (padding rule for storage formats). The
// simulator only uses ND layouts, so it carries the rule without applying it.
#ifndef GEMESH_SIM_EXE_GRAPH_RUNTIME_EXPAND_DIMS_TYPE_H_
#define GEMESH_SIM_EXE_GRAPH_RUNTIME_EXPAND_DIMS_TYPE_H_

#include <cstdint>
#include <cstring>

#include "graph/types.h"

namespace gert {
class ExpandDimsType {
 public:
  using AxisIndex = uint64_t;
  static constexpr size_t kMaxExpandSize = 56;

  ExpandDimsType() = default;
  explicit ExpandDimsType(const ge::char_t *const rule) {
    if (rule == nullptr) return;
    const size_t n = std::strlen(rule);
    if (n > kMaxExpandSize) return;
    size_ = n;
    for (AxisIndex i = 0; i < n; ++i) {
      if (rule[i] == '1') mask_ |= (1ULL << i);
    }
  }
  bool operator==(const ExpandDimsType &other) const { return size_ == other.size_ && mask_ == other.mask_; }
  AxisIndex GetFullSize() const { return size_; }
  bool IsExpandIndex(const AxisIndex index) const { return ((1ULL << index) & mask_) != 0; }

 private:
  uint64_t size_{0};
  uint64_t mask_{0};
};
}  // namespace gert

#endif  // GEMESH_SIM_EXE_GRAPH_RUNTIME_EXPAND_DIMS_TYPE_H_
