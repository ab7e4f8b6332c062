// Data-movement ops. Shape-like inputs (Reshape's shape, Slice's starts, ...)
// must be known at compile time, as in any static graph; Shape and Size are
// always folded to constants.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "ops/kernel.h"

namespace gemesh::sim {
namespace {

std::vector<int64_t> StridesOf(const std::vector<int64_t> &dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

int64_t Product(const std::vector<int64_t> &dims, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t i = from; i < to; ++i) n *= dims[i];
  return n;
}

class CopyKernel final : public Kernel {
 public:
  explicit CopyKernel(size_t bytes) : bytes_(bytes) {}
  void Run(const KernelArgs &args) const override {
    if (bytes_ != 0) std::memcpy(args.outputs[0], args.inputs[0], bytes_);
  }

 private:
  size_t bytes_;
};

// Output element i reads input element src_offset(i): the general strided walk
// behind Transpose, Slice, Expand and Tile. Per output dim: the input stride to
// add when that dim advances, plus a per-dim modulus for Tile's wrap-around.
template <class T>
class StridedCopyKernel final : public Kernel {
 public:
  std::vector<int64_t> out_dims;
  std::vector<int64_t> in_strides;  // per output dim
  std::vector<int64_t> wrap;        // per output dim: wrap the index every `wrap` steps (0 = never)
  int64_t base{0};
  void Run(const KernelArgs &args) const override {
    const T *in = static_cast<const T *>(args.inputs[0]);
    T *out = static_cast<T *>(args.outputs[0]);
    const size_t rank = out_dims.size();
    int64_t total = 1;
    for (const int64_t d : out_dims) total *= d;
    if (total == 0) return;
    if (rank == 0) {
      out[0] = in[base];
      return;
    }
    std::vector<int64_t> idx(rank, 0);
    const int64_t inner = out_dims[rank - 1];
    const int64_t inner_stride = in_strides[rank - 1];
    const int64_t inner_wrap = wrap.empty() ? 0 : wrap[rank - 1];
    for (int64_t o = 0; o < total; o += inner) {
      int64_t src = base;
      for (size_t d = 0; d + 1 < rank; ++d) {
        const int64_t i = (wrap.empty() || wrap[d] == 0) ? idx[d] : idx[d] % wrap[d];
        src += i * in_strides[d];
      }
      if (inner_wrap == 0) {
        for (int64_t i = 0; i < inner; ++i) out[o + i] = in[src + i * inner_stride];
      } else {
        for (int64_t i = 0; i < inner; ++i) out[o + i] = in[src + (i % inner_wrap) * inner_stride];
      }
      for (size_t d = rank - 1; d-- > 0;) {
        if (++idx[d] < out_dims[d]) break;
        idx[d] = 0;
      }
    }
  }
};

std::unique_ptr<Kernel> NewStrided(const BuildContext &ctx, ge::DataType dt, std::vector<int64_t> out_dims,
                                   std::vector<int64_t> in_strides, std::vector<int64_t> wrap, int64_t base) {
  auto fill = [&](auto k) -> std::unique_ptr<Kernel> {
    k->out_dims = std::move(out_dims);
    k->in_strides = std::move(in_strides);
    k->wrap = std::move(wrap);
    k->base = base;
    return k;
  };
  switch (ge::GetSizeByDataType(dt)) {
    case 1: return fill(std::make_unique<StridedCopyKernel<uint8_t>>());
    case 2: return fill(std::make_unique<StridedCopyKernel<uint16_t>>());
    case 4: return fill(std::make_unique<StridedCopyKernel<uint32_t>>());
    case 8: return fill(std::make_unique<StridedCopyKernel<uint64_t>>());
    default: ctx.Fail(std::string("type ") + DataTypeName(dt) + " is not supported");
  }
}

// ---- reshapes ------------------------------------------------------------

std::unique_ptr<Kernel> MakeReshape(BuildContext &ctx, std::vector<TensorMeta> &out) {
  const TensorMeta &x = ctx.In(0);
  std::vector<int64_t> shape = ctx.opset() < 5 ? ctx.Ints("shape") : ctx.ConstInts(1);
  const bool allow_zero = ctx.Int("allowzero", 0) != 0;
  int64_t known = 1;
  int infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allow_zero) {
      if (i >= x.dims.size()) ctx.Fail("shape " + DimsToString(shape) + " copies a dim the input does not have");
      shape[i] = x.dims[i];
    }
    if (shape[i] == -1) {
      if (infer >= 0) ctx.Fail("shape " + DimsToString(shape) + " has more than one -1");
      infer = static_cast<int>(i);
    } else if (shape[i] < 0) {
      ctx.Fail("shape " + DimsToString(shape) + " has a negative dim");
    } else {
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || x.Elements() % known != 0) ctx.Fail("cannot reshape " + DimsToString(x.dims) + " to " + DimsToString(shape));
    shape[infer] = x.Elements() / known;
  }
  if (Product(shape, 0, shape.size()) != x.Elements()) {
    ctx.Fail("cannot reshape " + DimsToString(x.dims) + " to " + DimsToString(shape));
  }
  out[0] = TensorMeta{x.dtype, shape, nullptr};
  return std::make_unique<CopyKernel>(x.Bytes());
}
GEMESH_REGISTER_KERNEL(Reshape, MakeReshape);

std::unique_ptr<Kernel> MakeFlatten(BuildContext &ctx, std::vector<TensorMeta> &out) {
  const TensorMeta &x = ctx.In(0);
  const auto rank = static_cast<int64_t>(x.dims.size());
  int64_t axis = ctx.Int("axis", 1);
  if (axis < -rank || axis > rank) ctx.Fail("axis out of range");
  if (axis < 0) axis += rank;
  out[0] = TensorMeta{x.dtype, {Product(x.dims, 0, axis), Product(x.dims, axis, x.dims.size())}, nullptr};
  return std::make_unique<CopyKernel>(x.Bytes());
}
GEMESH_REGISTER_KERNEL(Flatten, MakeFlatten);

std::vector<int64_t> AxesArg(BuildContext &ctx, int64_t since_opset) {
  if (ctx.opset() < since_opset) return ctx.Ints("axes");
  return ctx.HasInput(1) ? ctx.ConstInts(1) : std::vector<int64_t>{};
}

std::unique_ptr<Kernel> MakeSqueeze(BuildContext &ctx, std::vector<TensorMeta> &out) {
  const TensorMeta &x = ctx.In(0);
  const auto rank = static_cast<int64_t>(x.dims.size());
  std::vector<int64_t> axes = AxesArg(ctx, 13);
  std::vector<bool> drop(x.dims.size(), false);
  if (axes.empty()) {
    for (size_t i = 0; i < x.dims.size(); ++i) drop[i] = x.dims[i] == 1;
  }
  for (int64_t a : axes) {
    a = NormalizeAxis(ctx, a, rank);
    if (x.dims[a] != 1) ctx.Fail("cannot squeeze dim " + std::to_string(a) + " of " + DimsToString(x.dims));
    drop[a] = true;
  }
  std::vector<int64_t> dims;
  for (size_t i = 0; i < x.dims.size(); ++i) {
    if (!drop[i]) dims.push_back(x.dims[i]);
  }
  out[0] = TensorMeta{x.dtype, dims, nullptr};
  return std::make_unique<CopyKernel>(x.Bytes());
}
GEMESH_REGISTER_KERNEL(Squeeze, MakeSqueeze);

std::unique_ptr<Kernel> MakeUnsqueeze(BuildContext &ctx, std::vector<TensorMeta> &out) {
  const TensorMeta &x = ctx.In(0);
  std::vector<int64_t> axes = AxesArg(ctx, 13);
  if (axes.empty()) ctx.Fail("axes are required");
  const auto rank = static_cast<int64_t>(x.dims.size() + axes.size());
  std::vector<bool> inserted(rank, false);
  for (int64_t a : axes) {
    a = NormalizeAxis(ctx, a, rank);
    if (inserted[a]) ctx.Fail("axis " + std::to_string(a) + " repeats");
    inserted[a] = true;
  }
  std::vector<int64_t> dims;
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i) dims.push_back(inserted[i] ? 1 : x.dims[next++]);
  out[0] = TensorMeta{x.dtype, dims, nullptr};
  return std::make_unique<CopyKernel>(x.Bytes());
}
GEMESH_REGISTER_KERNEL(Unsqueeze, MakeUnsqueeze);

// ---- Transpose -----------------------------------------------------------

std::unique_ptr<Kernel> MakeTranspose(BuildContext &ctx, std::vector<TensorMeta> &out) {
  const TensorMeta &x = ctx.In(0);
  const size_t rank = x.dims.size();
  std::vector<int64_t> perm = ctx.Ints("perm");
  if (perm.empty()) {
    for (size_t i = rank; i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  }
  if (perm.size() != rank) ctx.Fail("perm has the wrong length");
  const auto in_strides = StridesOf(x.dims);
  std::vector<int64_t> dims, strides;
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    p = NormalizeAxis(ctx, p, static_cast<int64_t>(rank));
    if (seen[p]) ctx.Fail("perm repeats an axis");
    seen[p] = true;
    dims.push_back(x.dims[p]);
    strides.push_back(in_strides[p]);
  }
  out[0] = TensorMeta{x.dtype, dims, nullptr};
  return NewStrided(ctx, x.dtype, dims, strides, {}, 0);
}
GEMESH_REGISTER_KERNEL(Transpose, MakeTranspose);

// ---- Concat / Split ------------------------------------------------------

class ConcatKernel final : public Kernel {
 public:
  int64_t outer{1};
  std::vector<size_t> chunk;  // bytes per input per outer step
  void Run(const KernelArgs &args) const override {
    auto *dst = static_cast<uint8_t *>(args.outputs[0]);
    for (int64_t o = 0; o < outer; ++o) {
      for (size_t i = 0; i < chunk.size(); ++i) {
        std::memcpy(dst, static_cast<const uint8_t *>(args.inputs[i]) + o * chunk[i], chunk[i]);
        dst += chunk[i];
      }
    }
  }
};

std::unique_ptr<Kernel> MakeConcat(BuildContext &ctx, std::vector<TensorMeta> &out) {
  const TensorMeta &first = ctx.In(0);
  const auto rank = static_cast<int64_t>(first.dims.size());
  const int64_t axis = NormalizeAxis(ctx, ctx.Int("axis", 0), rank);
  auto k = std::make_unique<ConcatKernel>();
  k->outer = Product(first.dims, 0, axis);
  std::vector<int64_t> dims = first.dims;
  dims[axis] = 0;
  const size_t elem = static_cast<size_t>(ge::GetSizeByDataType(first.dtype));
  for (size_t i = 0; i < ctx.NumInputs(); ++i) {
    const TensorMeta &t = ctx.In(i);
    if (t.dtype != first.dtype || t.dims.size() != first.dims.size()) ctx.Fail("inputs differ in type or rank");
    for (int64_t d = 0; d < rank; ++d) {
      if (d != axis && t.dims[d] != first.dims[d]) ctx.Fail("input " + std::to_string(i) + " " + DimsToString(t.dims) + " does not match " + DimsToString(first.dims));
    }
    dims[axis] += t.dims[axis];
    k->chunk.push_back(static_cast<size_t>(Product(t.dims, axis, t.dims.size())) * elem);
  }
  out[0] = TensorMeta{first.dtype, dims, nullptr};
  return k;
}
GEMESH_REGISTER_KERNEL(Concat, MakeConcat);

class SplitKernel final : public Kernel {
 public:
  int64_t outer{1};
  size_t in_chunk{0};
  std::vector<size_t> chunk;
  void Run(const KernelArgs &args) const override {
    const auto *src = static_cast<const uint8_t *>(args.inputs[0]);
    for (int64_t o = 0; o < outer; ++o) {
      size_t off = 0;
      for (size_t i = 0; i < chunk.size(); ++i) {
        if (args.outputs[i] != nullptr) std::memcpy(static_cast<uint8_t *>(args.outputs[i]) + o * chunk[i], src + o * in_chunk + off, chunk[i]);
        off += chunk[i];
      }
    }
  }
};

std::unique_ptr<Kernel> MakeSplit(BuildContext &ctx, std::vector<TensorMeta> &out) {
  const TensorMeta &x = ctx.In(0);
  const auto rank = static_cast<int64_t>(x.dims.size());
  const int64_t axis = NormalizeAxis(ctx, ctx.Int("axis", 0), rank);
  std::vector<int64_t> split = ctx.opset() < 13 ? ctx.Ints("split") : (ctx.HasInput(1) ? ctx.ConstInts(1) : std::vector<int64_t>{});
  const auto n = static_cast<int64_t>(ctx.NumOutputs());
  if (split.empty()) {
    const int64_t each = (x.dims[axis] + n - 1) / n;
    for (int64_t i = 0; i < n; ++i) split.push_back(std::min(each, x.dims[axis] - each * i));
  }
  if (static_cast<int64_t>(split.size()) != n || std::accumulate(split.begin(), split.end(), int64_t{0}) != x.dims[axis]) {
    ctx.Fail("split sizes do not add up to dim " + std::to_string(x.dims[axis]));
  }
  auto k = std::make_unique<SplitKernel>();
  k->outer = Product(x.dims, 0, axis);
  const size_t elem = static_cast<size_t>(ge::GetSizeByDataType(x.dtype));
  const int64_t inner = Product(x.dims, axis + 1, x.dims.size());
  k->in_chunk = static_cast<size_t>(x.dims[axis] * inner) * elem;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int64_t> dims = x.dims;
    dims[axis] = split[i];
    out[i] = TensorMeta{x.dtype, dims, nullptr};
    k->chunk.push_back(static_cast<size_t>(split[i] * inner) * elem);
  }
  return k;
}
GEMESH_REGISTER_KERNEL(Split, MakeSplit);

// ---- Slice ---------------------------------------------------------------

std::unique_ptr<Kernel> MakeSlice(BuildContext &ctx, std::vector<TensorMeta> &out) {
  const TensorMeta &x = ctx.In(0);
  const auto rank = static_cast<int64_t>(x.dims.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset() < 10) {
    starts = ctx.Ints("starts");
    ends = ctx.Ints("ends");
    axes = ctx.Ints("axes");
  } else {
    starts = ctx.ConstInts(1);
    ends = ctx.ConstInts(2);
    if (ctx.HasInput(3)) axes = ctx.ConstInts(3);
    if (ctx.HasInput(4)) steps = ctx.ConstInts(4);
  }
  if (axes.empty()) {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
    ctx.Fail("starts, ends, axes and steps differ in length");
  }
  std::vector<int64_t> begin(rank, 0), step(rank, 1), dims = x.dims;
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t a = NormalizeAxis(ctx, axes[i], rank);
    const int64_t d = x.dims[a];
    const int64_t s = steps[i];
    if (s == 0) ctx.Fail("step must not be 0");
    int64_t b = starts[i] < 0 ? starts[i] + d : starts[i];
    int64_t e = ends[i] < 0 ? ends[i] + d : ends[i];
    if (s > 0) {
      b = std::clamp<int64_t>(b, 0, d);
      e = std::clamp<int64_t>(e, 0, d);
      dims[a] = e > b ? (e - b + s - 1) / s : 0;
    } else {
      b = std::clamp<int64_t>(b, 0, d - 1);
      e = std::clamp<int64_t>(e, -1, d - 1);
      dims[a] = b > e ? (b - e - s - 1) / -s : 0;
    }
    begin[a] = b;
    step[a] = s;
  }
  const auto in_strides = StridesOf(x.dims);
  std::vector<int64_t> strides(rank);
  int64_t base = 0;
  for (int64_t a = 0; a < rank; ++a) {
    strides[a] = in_strides[a] * step[a];
    base += begin[a] * in_strides[a];
  }
  out[0] = TensorMeta{x.dtype, dims, nullptr};
  return NewStrided(ctx, x.dtype, dims, strides, {}, base);
}
GEMESH_REGISTER_KERNEL(Slice, MakeSlice);

// ---- Expand / Tile -------------------------------------------------------

std::unique_ptr<Kernel> MakeExpand(BuildContext &ctx, std::vector<TensorMeta> &out) {
  const TensorMeta &x = ctx.In(0);
  const std::vector<int64_t> shape = ctx.ConstInts(1);
  Broadcast b = MakeBroadcast(ctx, {&x.dims, &shape});
  const size_t rank = b.out_dims.size();
  std::vector<int64_t> strides(rank, 0);
  const auto in_strides = StridesOf(x.dims);
  const size_t shift = rank - x.dims.size();
  for (size_t i = 0; i < x.dims.size(); ++i) strides[shift + i] = x.dims[i] == 1 ? 0 : in_strides[i];
  out[0] = TensorMeta{x.dtype, b.out_dims, nullptr};
  return NewStrided(ctx, x.dtype, b.out_dims, strides, {}, 0);
}
GEMESH_REGISTER_KERNEL(Expand, MakeExpand);

std::unique_ptr<Kernel> MakeTile(BuildContext &ctx, std::vector<TensorMeta> &out) {
  const TensorMeta &x = ctx.In(0);
  const std::vector<int64_t> repeats = ctx.ConstInts(1);
  if (repeats.size() != x.dims.size()) ctx.Fail("repeats must have one entry per dim");
  std::vector<int64_t> dims(x.dims.size());
  for (size_t i = 0; i < dims.size(); ++i) dims[i] = x.dims[i] * repeats[i];
  out[0] = TensorMeta{x.dtype, dims, nullptr};
  return NewStrided(ctx, x.dtype, dims, StridesOf(x.dims), x.dims, 0);
}
GEMESH_REGISTER_KERNEL(Tile, MakeTile);

// ---- Gather --------------------------------------------------------------

template <class I>
class GatherKernel final : public Kernel {
 public:
  int64_t outer{1}, axis_dim{1}, count{1};
  size_t block{0};  // bytes per gathered slice
  void Run(const KernelArgs &args) const override {
    const auto *data = static_cast<const uint8_t *>(args.inputs[0]);
    const I *idx = static_cast<const I *>(args.inputs[1]);
    auto *dst = static_cast<uint8_t *>(args.outputs[0]);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t j = 0; j < count; ++j) {
        int64_t k = static_cast<int64_t>(idx[j]);
        if (k < 0) k += axis_dim;
        if (k < 0 || k >= axis_dim) {
          throw SimError("Gather index " + std::to_string(static_cast<int64_t>(idx[j])) + " is out of range [0, " +
                         std::to_string(axis_dim) + ")");
        }
        std::memcpy(dst, data + (o * axis_dim + k) * block, block);
        dst += block;
      }
    }
  }
};

std::unique_ptr<Kernel> MakeGather(BuildContext &ctx, std::vector<TensorMeta> &out) {
  const TensorMeta &data = ctx.In(0);
  const TensorMeta &indices = ctx.In(1);
  ctx.RequireType(1, {ge::DT_INT64, ge::DT_INT32});
  const auto rank = static_cast<int64_t>(data.dims.size());
  if (rank == 0) ctx.Fail("data must have rank >= 1");
  const int64_t axis = NormalizeAxis(ctx, ctx.Int("axis", 0), rank);
  std::vector<int64_t> dims(data.dims.begin(), data.dims.begin() + axis);
  dims.insert(dims.end(), indices.dims.begin(), indices.dims.end());
  dims.insert(dims.end(), data.dims.begin() + axis + 1, data.dims.end());
  out[0] = TensorMeta{data.dtype, dims, nullptr};
  auto fill = [&](auto k) -> std::unique_ptr<Kernel> {
    k->outer = Product(data.dims, 0, axis);
    k->axis_dim = data.dims[axis];
    k->count = indices.Elements();
    k->block = static_cast<size_t>(Product(data.dims, axis + 1, data.dims.size()) * ge::GetSizeByDataType(data.dtype));
    return k;
  };
  if (indices.dtype == ge::DT_INT64) return fill(std::make_unique<GatherKernel<int64_t>>());
  return fill(std::make_unique<GatherKernel<int32_t>>());
}
GEMESH_REGISTER_KERNEL(Gather, MakeGather);

// ---- compile-time values -------------------------------------------------

std::unique_ptr<Kernel> MakeShape(BuildContext &ctx, std::vector<TensorMeta> &out) {
  const auto &dims = ctx.In(0).dims;
  const auto rank = static_cast<int64_t>(dims.size());
  int64_t start = ctx.Int("start", 0);
  int64_t end = ctx.Int("end", rank);
  start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
  end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
  const std::vector<int64_t> values(dims.begin() + start, dims.begin() + std::max(start, end));
  uint8_t *data = ctx.NewConst(values.size() * sizeof(int64_t));
  std::memcpy(data, values.data(), values.size() * sizeof(int64_t));
  out[0] = TensorMeta{ge::DT_INT64, {static_cast<int64_t>(values.size())}, data};
  return nullptr;
}
GEMESH_REGISTER_KERNEL(Shape, MakeShape);

std::unique_ptr<Kernel> MakeSize(BuildContext &ctx, std::vector<TensorMeta> &out) {
  const int64_t n = ctx.In(0).Elements();
  uint8_t *data = ctx.NewConst(sizeof(int64_t));
  std::memcpy(data, &n, sizeof(n));
  out[0] = TensorMeta{ge::DT_INT64, {}, data};
  return nullptr;
}
GEMESH_REGISTER_KERNEL(Size, MakeSize);

class FillKernel final : public Kernel {
 public:
  std::vector<uint8_t> value;
  int64_t count{0};
  void Run(const KernelArgs &args) const override {
    auto *dst = static_cast<uint8_t *>(args.outputs[0]);
    for (int64_t i = 0; i < count; ++i) std::memcpy(dst + i * value.size(), value.data(), value.size());
  }
};

std::unique_ptr<Kernel> MakeConstantOfShape(BuildContext &ctx, std::vector<TensorMeta> &out) {
  const std::vector<int64_t> dims = ctx.ConstInts(0);
  auto k = std::make_unique<FillKernel>();
  ge::DataType dt = ge::DT_FLOAT;
  k->value.assign(sizeof(float), 0);
  if (const IrAttr *a = ctx.Attr("value")) {
    if (a->kind != IrAttr::Kind::kTensor || !a->t || a->t->bytes->empty()) ctx.Fail("value must be a one-element tensor");
    dt = a->t->dtype;
    k->value.assign(a->t->bytes->begin(), a->t->bytes->begin() + ge::GetSizeByDataType(dt));
  }
  k->count = Product(dims, 0, dims.size());
  out[0] = TensorMeta{dt, dims, nullptr};
  return k;
}
GEMESH_REGISTER_KERNEL(ConstantOfShape, MakeConstantOfShape);

template <class T>
class RangeKernel final : public Kernel {
 public:
  T start{}, delta{};
  int64_t n{0};
  void Run(const KernelArgs &args) const override {
    T *y = static_cast<T *>(args.outputs[0]);
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(start + static_cast<T>(i) * delta);
  }
};

std::unique_ptr<Kernel> MakeRange(BuildContext &ctx, std::vector<TensorMeta> &out) {
  const ge::DataType dt = ctx.In(0).dtype;
  auto scalar = [&](size_t i) -> double {
    const TensorMeta &m = ctx.In(i);
    if (m.data == nullptr) ctx.Fail("start, limit and delta must be constants");
    switch (m.dtype) {
      case ge::DT_FLOAT: return *reinterpret_cast<const float *>(m.data);
      case ge::DT_INT64: return static_cast<double>(*reinterpret_cast<const int64_t *>(m.data));
      case ge::DT_INT32: return *reinterpret_cast<const int32_t *>(m.data);
      default: ctx.Fail("unsupported type");
    }
  };
  const double start = scalar(0), limit = scalar(1), delta = scalar(2);
  if (delta == 0) ctx.Fail("delta must not be 0");
  const auto n = static_cast<int64_t>(std::max(0.0, std::ceil((limit - start) / delta)));
  out[0] = TensorMeta{dt, {n}, nullptr};
  auto fill = [&](auto k) -> std::unique_ptr<Kernel> {
    using T = decltype(k->start);
    k->start = static_cast<T>(start);
    k->delta = static_cast<T>(delta);
    k->n = n;
    return k;
  };
  if (dt == ge::DT_FLOAT) return fill(std::make_unique<RangeKernel<float>>());
  if (dt == ge::DT_INT64) return fill(std::make_unique<RangeKernel<int64_t>>());
  return fill(std::make_unique<RangeKernel<int32_t>>());
}
GEMESH_REGISTER_KERNEL(Range, MakeRange);

}  // namespace
}  // namespace gemesh::sim
