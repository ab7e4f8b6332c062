// Reductions over any set of axes, and ArgMax/ArgMin.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/kernel.h"

namespace gemesh::sim {
namespace {

enum class ReduceKind { kSum, kMean, kMax, kMin, kProd };

template <class T>
class ReduceKernel final : public Kernel {
 public:
  ReduceKind kind{ReduceKind::kSum};
  std::vector<int64_t> in_dims;
  std::vector<int64_t> out_strides;  // per input dim; 0 on reduced dims
  int64_t out_count{1}, group{1};    // output elements, input elements per output
  void Run(const KernelArgs &args) const override {
    const T *x = static_cast<const T *>(args.inputs[0]);
    T *y = static_cast<T *>(args.outputs[0]);
    std::vector<double> acc(static_cast<size_t>(out_count), Init());
    const size_t rank = in_dims.size();
    std::vector<int64_t> idx(rank, 0);
    int64_t total = 1;
    for (const int64_t d : in_dims) total *= d;
    int64_t o = 0;
    for (int64_t i = 0; i < total; ++i) {
      double &a = acc[static_cast<size_t>(o)];
      const double v = static_cast<double>(x[i]);
      switch (kind) {
        case ReduceKind::kSum:
        case ReduceKind::kMean: a += v; break;
        case ReduceKind::kMax: a = std::max(a, v); break;
        case ReduceKind::kMin: a = std::min(a, v); break;
        case ReduceKind::kProd: a *= v; break;
      }
      for (size_t d = rank; d-- > 0;) {
        o += out_strides[d];
        if (++idx[d] < in_dims[d]) break;
        o -= out_strides[d] * in_dims[d];
        idx[d] = 0;
      }
    }
    for (int64_t k = 0; k < out_count; ++k) {
      double v = acc[static_cast<size_t>(k)];
      if (kind == ReduceKind::kMean) v /= static_cast<double>(group);
      y[k] = static_cast<T>(v);
    }
  }

 private:
  double Init() const {
    switch (kind) {
      case ReduceKind::kMax: return -std::numeric_limits<double>::infinity();
      case ReduceKind::kMin: return std::numeric_limits<double>::infinity();
      case ReduceKind::kProd: return 1.0;
      default: return 0.0;
    }
  }
};

// Axes are an attribute before `input_since` and an optional input after.
std::unique_ptr<Kernel> MakeReduce(BuildContext &ctx, std::vector<TensorMeta> &out, ReduceKind kind, int64_t input_since) {
  ctx.RequireType(0, {ge::DT_FLOAT, ge::DT_INT64, ge::DT_INT32});
  const TensorMeta &x = ctx.In(0);
  const auto rank = static_cast<int64_t>(x.dims.size());
  std::vector<int64_t> axes = ctx.opset() < input_since ? ctx.Ints("axes") : (ctx.HasInput(1) ? ctx.ConstInts(1) : std::vector<int64_t>{});
  const bool keep = ctx.Int("keepdims", 1) != 0;
  std::vector<bool> reduced(rank, false);
  if (axes.empty()) {
    if (ctx.Int("noop_with_empty_axes", 0) != 0) {
      // Identity per the spec: nothing is reduced.
    } else {
      std::fill(reduced.begin(), reduced.end(), true);
    }
  }
  for (const int64_t a : axes) reduced[NormalizeAxis(ctx, a, rank)] = true;
  std::vector<int64_t> out_dims, strides(rank, 0);
  int64_t group = 1, stride = 1;
  for (int64_t d = rank; d-- > 0;) {
    if (reduced[d]) {
      group *= x.dims[d];
    } else {
      strides[d] = stride;
      stride *= x.dims[d];
    }
  }
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced[d]) {
      out_dims.push_back(x.dims[d]);
    } else if (keep) {
      out_dims.push_back(1);
    }
  }
  out[0] = TensorMeta{x.dtype, out_dims, nullptr};
  auto fill = [&](auto k) -> std::unique_ptr<Kernel> {
    k->kind = kind;
    k->in_dims = x.dims;
    k->out_strides = strides;
    k->out_count = stride;
    k->group = std::max<int64_t>(group, 1);
    return k;
  };
  switch (x.dtype) {
    case ge::DT_FLOAT: return fill(std::make_unique<ReduceKernel<float>>());
    case ge::DT_INT64: return fill(std::make_unique<ReduceKernel<int64_t>>());
    default: return fill(std::make_unique<ReduceKernel<int32_t>>());
  }
}

std::unique_ptr<Kernel> MakeReduceSum(BuildContext &c, std::vector<TensorMeta> &o) { return MakeReduce(c, o, ReduceKind::kSum, 13); }
std::unique_ptr<Kernel> MakeReduceMean(BuildContext &c, std::vector<TensorMeta> &o) { return MakeReduce(c, o, ReduceKind::kMean, 18); }
std::unique_ptr<Kernel> MakeReduceMax(BuildContext &c, std::vector<TensorMeta> &o) { return MakeReduce(c, o, ReduceKind::kMax, 18); }
std::unique_ptr<Kernel> MakeReduceMin(BuildContext &c, std::vector<TensorMeta> &o) { return MakeReduce(c, o, ReduceKind::kMin, 18); }
std::unique_ptr<Kernel> MakeReduceProd(BuildContext &c, std::vector<TensorMeta> &o) { return MakeReduce(c, o, ReduceKind::kProd, 18); }
GEMESH_REGISTER_KERNEL(ReduceSum, MakeReduceSum);
GEMESH_REGISTER_KERNEL(ReduceMean, MakeReduceMean);
GEMESH_REGISTER_KERNEL(ReduceMax, MakeReduceMax);
GEMESH_REGISTER_KERNEL(ReduceMin, MakeReduceMin);
GEMESH_REGISTER_KERNEL(ReduceProd, MakeReduceProd);

class ArgKernel final : public Kernel {
 public:
  int64_t outer{1}, n{1}, inner{1};
  bool max{true}, last{false};
  void Run(const KernelArgs &args) const override {
    const float *x = static_cast<const float *>(args.inputs[0]);
    int64_t *y = static_cast<int64_t *>(args.outputs[0]);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t in = 0; in < inner; ++in) {
        const float *p = x + o * n * inner + in;
        int64_t best = 0;
        for (int64_t i = 1; i < n; ++i) {
          const float v = p[i * inner], b = p[best * inner];
          const bool better = max ? (v > b || (last && v == b)) : (v < b || (last && v == b));
          if (better) best = i;
        }
        y[o * inner + in] = best;
      }
    }
  }
};

std::unique_ptr<Kernel> MakeArg(BuildContext &ctx, std::vector<TensorMeta> &out, bool max) {
  ctx.RequireType(0, {ge::DT_FLOAT});
  const auto &x = ctx.In(0).dims;
  const auto rank = static_cast<int64_t>(x.size());
  const int64_t axis = NormalizeAxis(ctx, ctx.Int("axis", 0), rank);
  auto k = std::make_unique<ArgKernel>();
  k->max = max;
  k->last = ctx.Int("select_last_index", 0) != 0;
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < rank; ++d) {
    if (d < axis) k->outer *= x[d];
    if (d > axis) k->inner *= x[d];
    if (d != axis) {
      dims.push_back(x[d]);
    } else if (ctx.Int("keepdims", 1) != 0) {
      dims.push_back(1);
    }
  }
  k->n = x[axis];
  out[0] = TensorMeta{ge::DT_INT64, dims, nullptr};
  return k;
}
std::unique_ptr<Kernel> MakeArgMax(BuildContext &c, std::vector<TensorMeta> &o) { return MakeArg(c, o, true); }
std::unique_ptr<Kernel> MakeArgMin(BuildContext &c, std::vector<TensorMeta> &o) { return MakeArg(c, o, false); }
GEMESH_REGISTER_KERNEL(ArgMax, MakeArgMax);
GEMESH_REGISTER_KERNEL(ArgMin, MakeArgMin);

}  // namespace
}  // namespace gemesh::sim
