// CPU kernels of the simulator. At compile time a factory validates a node
// against its input metadata (dtype, static dims, constant values), computes
// its outputs' metadata and returns a kernel with everything precomputed; at
// run time the kernel only reads and writes raw buffers.
#ifndef GEMESH_SIM_OPS_KERNEL_H_
#define GEMESH_SIM_OPS_KERNEL_H_

#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "common/graph_ir.h"
#include "common/sim_errors.h"
#include "graph/types.h"

namespace gemesh::sim {

struct TensorMeta {
  ge::DataType dtype{ge::DT_UNDEFINED};
  std::vector<int64_t> dims;
  /// Non-null when the value is known at compile time (a constant or folded).
  const uint8_t *data{nullptr};

  int64_t Elements() const {
    int64_t n = 1;
    for (const int64_t d : dims) n *= d;
    return n;
  }
  size_t Bytes() const { return static_cast<size_t>(Elements()) * static_cast<size_t>(ge::GetSizeByDataType(dtype)); }
};

struct KernelArgs {
  /// One per node input; nullptr for an omitted optional input.
  const void *const *inputs;
  void *const *outputs;
  /// scratch_bytes of 64-byte aligned memory, contents undefined.
  void *scratch;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void Run(const KernelArgs &args) const = 0;
  size_t scratch_bytes{0};
};

/// A float format the NPU's cube unit reads or writes.
enum class FloatFormat { kFp32, kFp16, kBf16 };

/// What the precision mode in effect does to the matrix ops (MatMul, Gemm,
/// Conv): their inputs, weights and bias are rounded to `in`, the products
/// accumulate in fp32 (as in the cube unit), and the result is rounded to `out`.
/// Other ops stay fp32.
struct CubePrecision {
  FloatFormat in{FloatFormat::kFp32};
  FloatFormat out{FloatFormat::kFp32};
  bool Exact() const { return in == FloatFormat::kFp32 && out == FloatFormat::kFp32; }
};

/// x rounded to the format (round to nearest, ties to even; overflow to inf), as fp32.
float RoundTo(FloatFormat format, float x);
void RoundInPlace(FloatFormat format, float *data, int64_t n);
/// src itself for fp32, else dst filled with the rounded values.
const float *RoundedCopy(FloatFormat format, const float *src, int64_t n, float *dst);
/// A rounded copy of n fp32 values (a constant's bytes).
std::vector<float> Rounded(FloatFormat format, const uint8_t *data, int64_t n);
const char *FloatFormatName(FloatFormat format);

/// What a factory sees of a node.
class BuildContext {
 public:
  BuildContext(const IrNode &node, int64_t opset, std::vector<const TensorMeta *> inputs,
               std::deque<std::vector<uint8_t>> *storage, CubePrecision precision = {})
      : node_(node), opset_(opset), inputs_(std::move(inputs)), storage_(storage), precision_(precision) {}

  const IrNode &node() const { return node_; }
  int64_t opset() const { return opset_; }
  /// The matrix ops' precision under the graph's precision mode.
  const CubePrecision &precision() const { return precision_; }
  size_t NumInputs() const { return inputs_.size(); }
  size_t NumOutputs() const { return node_.outputs.size(); }
  bool HasInput(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  /// The i-th input; fails the node when it is missing.
  const TensorMeta &In(size_t i) const;
  /// Fails unless the input is known at compile time; returns its values as int64.
  std::vector<int64_t> ConstInts(size_t i) const;
  std::vector<float> ConstFloats(size_t i) const;

  bool HasAttr(const char *name) const { return node_.attrs.count(name) != 0; }
  int64_t Int(const char *name, int64_t fallback) const;
  float Float(const char *name, float fallback) const;
  std::string Str(const char *name, const std::string &fallback) const;
  std::vector<int64_t> Ints(const char *name, const std::vector<int64_t> &fallback = {}) const;
  const IrAttr *Attr(const char *name) const;

  /// Storage for a compile-time constant output; lives as long as the compiled model.
  uint8_t *NewConst(size_t bytes);

  [[noreturn]] void Fail(const std::string &message) const;
  void RequireType(size_t input, std::initializer_list<ge::DataType> allowed) const;

 private:
  const IrNode &node_;
  int64_t opset_;
  std::vector<const TensorMeta *> inputs_;
  std::deque<std::vector<uint8_t>> *storage_;
  CubePrecision precision_;
};

/// Fills outputs (one per node output) and returns the kernel; returns nullptr
/// when every output was produced as a constant at compile time.
using KernelFactory = std::unique_ptr<Kernel> (*)(BuildContext &ctx, std::vector<TensorMeta> &outputs);

void RegisterKernel(const char *op_type, KernelFactory factory);
KernelFactory FindKernel(const std::string &op_type);
std::vector<std::string> SupportedOps();

struct KernelRegistrar {
  KernelRegistrar(const char *op_type, KernelFactory factory) { RegisterKernel(op_type, factory); }
};
#define GEMESH_REGISTER_KERNEL(op, factory) static const ::gemesh::sim::KernelRegistrar kReg_##op(#op, factory)

/// ONNX axis normalisation: negative counts from the end; fails outside [-rank, rank).
int64_t NormalizeAxis(const BuildContext &ctx, int64_t axis, int64_t rank);

/// Numpy-style broadcast of several inputs, with dims coalesced so the inner
/// loop is as long as possible. Strides are in elements, 0 on broadcast dims.
struct Broadcast {
  static constexpr int kMaxInputs = 3;
  std::vector<int64_t> out_dims;  // full output dims (not coalesced)
  std::vector<int64_t> dims;      // coalesced, outermost first
  std::vector<int64_t> strides[kMaxInputs];
  int inputs{0};
  int64_t total{0};
};
Broadcast MakeBroadcast(const BuildContext &ctx, const std::vector<const std::vector<int64_t> *> &in_dims);

/// Calls f(out_offset, in_offsets, count, inner_strides) for each innermost run.
template <typename F>
void ForEachRun(const Broadcast &b, F &&f) {
  if (b.total == 0) return;
  const size_t rank = b.dims.size();
  if (rank == 0) {
    const int64_t off[Broadcast::kMaxInputs] = {0, 0, 0};
    const int64_t st[Broadcast::kMaxInputs] = {0, 0, 0};
    f(int64_t{0}, off, int64_t{1}, st);
    return;
  }
  const int64_t inner = b.dims[rank - 1];
  int64_t st[Broadcast::kMaxInputs] = {0, 0, 0};
  for (int k = 0; k < b.inputs; ++k) st[k] = b.strides[k][rank - 1];
  std::vector<int64_t> counter(rank, 0);
  int64_t off[Broadcast::kMaxInputs] = {0, 0, 0};
  for (int64_t out = 0; out < b.total; out += inner) {
    f(out, off, inner, st);
    // Advance the outer counter (dims rank-2 .. 0).
    for (size_t d = rank - 1; d-- > 0;) {
      ++counter[d];
      for (int k = 0; k < b.inputs; ++k) off[k] += b.strides[k][d];
      if (counter[d] < b.dims[d]) break;
      for (int k = 0; k < b.inputs; ++k) off[k] -= b.strides[k][d] * b.dims[d];
      counter[d] = 0;
    }
  }
}

/// C[M,N] = alpha * A[M,K] * B[K,N] + beta * C, row-major with leading dimensions.
void Sgemm(int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
           float beta, float *C, int64_t ldc);

}  // namespace gemesh::sim

#endif  // GEMESH_SIM_OPS_KERNEL_H_
