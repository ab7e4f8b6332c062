// CANN simulator: gert::Shape, a fixed-capacity dim list (at most 25 dims, as in GE).
#ifndef GEMESH_SIM_EXE_GRAPH_RUNTIME_SHAPE_H_
#define GEMESH_SIM_EXE_GRAPH_RUNTIME_SHAPE_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>

namespace gert {
struct Shape {
  static constexpr size_t kMaxDimNum = 25;
  static constexpr int64_t kInvalidDimValue = std::numeric_limits<int64_t>::min();

  Shape() = default;
  Shape(const std::initializer_list<int64_t> &dims) {
    if (dims.size() > kMaxDimNum) return;
    for (const int64_t d : dims) dims_[dim_num_++] = d;
  }

  bool operator==(const Shape &other) const {
    if (dim_num_ != other.dim_num_) return false;
    for (size_t i = 0; i < dim_num_; ++i) {
      if (dims_[i] != other.dims_[i]) return false;
    }
    return true;
  }
  bool operator!=(const Shape &other) const { return !(*this == other); }

  /// Element count; kInvalidDimValue when the product overflows.
  int64_t GetShapeSize() const {
    int64_t n = 1;
    for (size_t i = 0; i < dim_num_; ++i) {
      if (__builtin_mul_overflow(n, dims_[i], &n)) return kInvalidDimValue;
    }
    return n;
  }
  bool IsScalar() const { return dim_num_ == 0; }
  void SetScalar() { dim_num_ = 0; }
  size_t GetDimNum() const { return dim_num_; }
  void SetDimNum(const size_t dim_num) { dim_num_ = dim_num; }
  int64_t GetDim(const size_t idx) const { return idx < kMaxDimNum ? dims_[idx] : kInvalidDimValue; }
  void SetDim(const size_t idx, const int64_t value) {
    if (idx >= kMaxDimNum) return;
    dims_[idx] = value;
    if (dim_num_ < idx) dim_num_ = idx;
  }
  Shape &AppendDim(const int64_t value) {
    if (dim_num_ < kMaxDimNum) dims_[dim_num_++] = value;
    return *this;
  }
  const int64_t &operator[](const size_t idx) const { return dims_[idx]; }
  int64_t &operator[](const size_t idx) { return dims_[idx]; }

 private:
  size_t dim_num_{0};
  int64_t dims_[kMaxDimNum]{};
};
}  // namespace gert

#endif  // GEMESH_SIM_EXE_GRAPH_RUNTIME_SHAPE_H_
