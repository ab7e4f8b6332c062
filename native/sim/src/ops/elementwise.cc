// Element-wise ops: broadcasting binary arithmetic and comparisons, Where,
// unary activations, Clip, Cast, Identity and Dropout (inference).
#include <algorithm>
#include <cmath>

#include "ops/kernel.h"

namespace gemesh::sim {
namespace {

// ---- binary --------------------------------------------------------------

struct AddOp { template <class T> static T F(T a, T b) { return a + b; } };
struct SubOp { template <class T> static T F(T a, T b) { return a - b; } };
struct MulOp { template <class T> static T F(T a, T b) { return a * b; } };
struct DivOp {
  template <class T>
  static T F(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return b == 0 ? T(0) : static_cast<T>(a / b);
    } else {
      return a / b;
    }
  }
};
struct PowOp {
  template <class T>
  static T F(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      T r = 1;
      for (T i = 0; i < b; ++i) r *= a;
      return r;
    } else {
      return static_cast<T>(std::pow(a, b));
    }
  }
};
struct MaxOp { template <class T> static T F(T a, T b) { return a > b || std::isnan(static_cast<double>(a)) ? a : b; } };
struct MinOp { template <class T> static T F(T a, T b) { return a < b || std::isnan(static_cast<double>(a)) ? a : b; } };
struct EqualOp { template <class T> static uint8_t F(T a, T b) { return a == b; } };
struct LessOp { template <class T> static uint8_t F(T a, T b) { return a < b; } };
struct GreaterOp { template <class T> static uint8_t F(T a, T b) { return a > b; } };
struct LessEqOp { template <class T> static uint8_t F(T a, T b) { return a <= b; } };
struct GreaterEqOp { template <class T> static uint8_t F(T a, T b) { return a >= b; } };
struct AndOp { template <class T> static uint8_t F(T a, T b) { return (a != 0) && (b != 0); } };
struct OrOp { template <class T> static uint8_t F(T a, T b) { return (a != 0) || (b != 0); } };
struct XorOp { template <class T> static uint8_t F(T a, T b) { return (a != 0) != (b != 0); } };

template <class T, class R, class Op>
class BinaryKernel final : public Kernel {
 public:
  explicit BinaryKernel(Broadcast b) : b_(std::move(b)) {}
  void Run(const KernelArgs &args) const override {
    const T *A = static_cast<const T *>(args.inputs[0]);
    const T *B = static_cast<const T *>(args.inputs[1]);
    R *O = static_cast<R *>(args.outputs[0]);
    ForEachRun(b_, [&](int64_t o, const int64_t *off, int64_t n, const int64_t *st) {
      const T *a = A + off[0];
      const T *b = B + off[1];
      R *out = O + o;
      if (st[0] != 0 && st[1] != 0) {
        for (int64_t i = 0; i < n; ++i) out[i] = Op::F(a[i], b[i]);
      } else if (st[0] != 0) {
        const T y = *b;
        for (int64_t i = 0; i < n; ++i) out[i] = Op::F(a[i], y);
      } else if (st[1] != 0) {
        const T x = *a;
        for (int64_t i = 0; i < n; ++i) out[i] = Op::F(x, b[i]);
      } else {
        const R v = Op::F(*a, *b);
        for (int64_t i = 0; i < n; ++i) out[i] = v;
      }
    });
  }

 private:
  Broadcast b_;
};

enum class BinaryKind { kArithmetic, kCompare, kLogical };

template <class Op, BinaryKind kind>
std::unique_ptr<Kernel> MakeBinary(BuildContext &ctx, std::vector<TensorMeta> &out) {
  if (ctx.NumInputs() == 1 && (std::is_same_v<Op, MaxOp> || std::is_same_v<Op, MinOp>)) {
    // Variadic Max/Min with one input is an identity.
    out[0] = TensorMeta{ctx.In(0).dtype, ctx.In(0).dims, nullptr};
    class Copy final : public Kernel {
     public:
      explicit Copy(size_t n) : n_(n) {}
      void Run(const KernelArgs &a) const override { std::memcpy(a.outputs[0], a.inputs[0], n_); }
      size_t n_;
    };
    return std::make_unique<Copy>(ctx.In(0).Bytes());
  }
  if (ctx.NumInputs() != 2) ctx.Fail("the simulator supports this op with exactly two inputs");
  const TensorMeta &a = ctx.In(0);
  const TensorMeta &b = ctx.In(1);
  if (a.dtype != b.dtype) ctx.Fail(std::string("input types differ: ") + DataTypeName(a.dtype) + " and " + DataTypeName(b.dtype));
  Broadcast bc = MakeBroadcast(ctx, {&a.dims, &b.dims});
  const ge::DataType out_type = kind == BinaryKind::kArithmetic ? a.dtype : ge::DT_BOOL;
  out[0] = TensorMeta{out_type, bc.out_dims, nullptr};
  if constexpr (kind == BinaryKind::kLogical) {
    ctx.RequireType(0, {ge::DT_BOOL});
    return std::make_unique<BinaryKernel<uint8_t, uint8_t, Op>>(std::move(bc));
  } else {
    using R0 = std::conditional_t<kind == BinaryKind::kArithmetic, float, uint8_t>;
    using R1 = std::conditional_t<kind == BinaryKind::kArithmetic, int64_t, uint8_t>;
    using R2 = std::conditional_t<kind == BinaryKind::kArithmetic, int32_t, uint8_t>;
    using R3 = std::conditional_t<kind == BinaryKind::kArithmetic, double, uint8_t>;
    switch (a.dtype) {
      case ge::DT_FLOAT: return std::make_unique<BinaryKernel<float, R0, Op>>(std::move(bc));
      case ge::DT_INT64: return std::make_unique<BinaryKernel<int64_t, R1, Op>>(std::move(bc));
      case ge::DT_INT32: return std::make_unique<BinaryKernel<int32_t, R2, Op>>(std::move(bc));
      case ge::DT_DOUBLE: return std::make_unique<BinaryKernel<double, R3, Op>>(std::move(bc));
      default: ctx.Fail(std::string("type ") + DataTypeName(a.dtype) + " is not supported by the simulator");
    }
  }
}

GEMESH_REGISTER_KERNEL(Add, (MakeBinary<AddOp, BinaryKind::kArithmetic>));
GEMESH_REGISTER_KERNEL(Sub, (MakeBinary<SubOp, BinaryKind::kArithmetic>));
GEMESH_REGISTER_KERNEL(Mul, (MakeBinary<MulOp, BinaryKind::kArithmetic>));
GEMESH_REGISTER_KERNEL(Div, (MakeBinary<DivOp, BinaryKind::kArithmetic>));
GEMESH_REGISTER_KERNEL(Max, (MakeBinary<MaxOp, BinaryKind::kArithmetic>));
GEMESH_REGISTER_KERNEL(Min, (MakeBinary<MinOp, BinaryKind::kArithmetic>));
GEMESH_REGISTER_KERNEL(Equal, (MakeBinary<EqualOp, BinaryKind::kCompare>));
GEMESH_REGISTER_KERNEL(Less, (MakeBinary<LessOp, BinaryKind::kCompare>));
GEMESH_REGISTER_KERNEL(Greater, (MakeBinary<GreaterOp, BinaryKind::kCompare>));
GEMESH_REGISTER_KERNEL(LessOrEqual, (MakeBinary<LessEqOp, BinaryKind::kCompare>));
GEMESH_REGISTER_KERNEL(GreaterOrEqual, (MakeBinary<GreaterEqOp, BinaryKind::kCompare>));
GEMESH_REGISTER_KERNEL(And, (MakeBinary<AndOp, BinaryKind::kLogical>));
GEMESH_REGISTER_KERNEL(Or, (MakeBinary<OrOp, BinaryKind::kLogical>));
GEMESH_REGISTER_KERNEL(Xor, (MakeBinary<XorOp, BinaryKind::kLogical>));

// Pow: the exponent may have its own type; a constant scalar 2 or 0.5 takes a fast path.
class PowFloatKernel final : public Kernel {
 public:
  PowFloatKernel(Broadcast b, ge::DataType exp_type) : b_(std::move(b)), exp_type_(exp_type) {}
  void Run(const KernelArgs &args) const override {
    const float *A = static_cast<const float *>(args.inputs[0]);
    ForEachRun(b_, [&](int64_t o, const int64_t *off, int64_t n, const int64_t *st) {
      float *out = static_cast<float *>(args.outputs[0]) + o;
      for (int64_t i = 0; i < n; ++i) {
        const float x = A[off[0] + i * st[0]];
        const int64_t e = off[1] + i * st[1];
        double y = 0;
        switch (exp_type_) {
          case ge::DT_FLOAT: y = static_cast<const float *>(args.inputs[1])[e]; break;
          case ge::DT_INT64: y = static_cast<double>(static_cast<const int64_t *>(args.inputs[1])[e]); break;
          case ge::DT_INT32: y = static_cast<const int32_t *>(args.inputs[1])[e]; break;
          default: y = static_cast<const double *>(args.inputs[1])[e]; break;
        }
        out[i] = y == 2.0 ? x * x : (y == 0.5 ? std::sqrt(x) : static_cast<float>(std::pow(x, y)));
      }
    });
  }

 private:
  Broadcast b_;
  ge::DataType exp_type_;
};

std::unique_ptr<Kernel> MakePow(BuildContext &ctx, std::vector<TensorMeta> &out) {
  const TensorMeta &a = ctx.In(0);
  const TensorMeta &b = ctx.In(1);
  if (a.dtype != ge::DT_FLOAT) return MakeBinary<PowOp, BinaryKind::kArithmetic>(ctx, out);
  ctx.RequireType(1, {ge::DT_FLOAT, ge::DT_INT64, ge::DT_INT32, ge::DT_DOUBLE});
  Broadcast bc = MakeBroadcast(ctx, {&a.dims, &b.dims});
  out[0] = TensorMeta{ge::DT_FLOAT, bc.out_dims, nullptr};
  return std::make_unique<PowFloatKernel>(std::move(bc), b.dtype);
}
GEMESH_REGISTER_KERNEL(Pow, MakePow);

// ---- Where ---------------------------------------------------------------

template <class T>
class WhereKernel final : public Kernel {
 public:
  explicit WhereKernel(Broadcast b) : b_(std::move(b)) {}
  void Run(const KernelArgs &args) const override {
    const uint8_t *C = static_cast<const uint8_t *>(args.inputs[0]);
    const T *X = static_cast<const T *>(args.inputs[1]);
    const T *Y = static_cast<const T *>(args.inputs[2]);
    T *O = static_cast<T *>(args.outputs[0]);
    ForEachRun(b_, [&](int64_t o, const int64_t *off, int64_t n, const int64_t *st) {
      for (int64_t i = 0; i < n; ++i) {
        O[o + i] = C[off[0] + i * st[0]] ? X[off[1] + i * st[1]] : Y[off[2] + i * st[2]];
      }
    });
  }

 private:
  Broadcast b_;
};

std::unique_ptr<Kernel> MakeWhere(BuildContext &ctx, std::vector<TensorMeta> &out) {
  ctx.RequireType(0, {ge::DT_BOOL});
  const TensorMeta &x = ctx.In(1);
  const TensorMeta &y = ctx.In(2);
  if (x.dtype != y.dtype) ctx.Fail("X and Y types differ");
  Broadcast bc = MakeBroadcast(ctx, {&ctx.In(0).dims, &x.dims, &y.dims});
  out[0] = TensorMeta{x.dtype, bc.out_dims, nullptr};
  switch (ge::GetSizeByDataType(x.dtype)) {
    case 1: return std::make_unique<WhereKernel<uint8_t>>(std::move(bc));
    case 2: return std::make_unique<WhereKernel<uint16_t>>(std::move(bc));
    case 4: return std::make_unique<WhereKernel<uint32_t>>(std::move(bc));
    case 8: return std::make_unique<WhereKernel<uint64_t>>(std::move(bc));
    default: ctx.Fail("unsupported type");
  }
}
GEMESH_REGISTER_KERNEL(Where, MakeWhere);

// ---- unary ---------------------------------------------------------------

template <class T, class F>
class UnaryKernel final : public Kernel {
 public:
  UnaryKernel(int64_t n, F f) : n_(n), f_(f) {}
  void Run(const KernelArgs &args) const override {
    const T *x = static_cast<const T *>(args.inputs[0]);
    T *y = static_cast<T *>(args.outputs[0]);
    for (int64_t i = 0; i < n_; ++i) y[i] = f_(x[i]);
  }

 private:
  int64_t n_;
  F f_;
};

template <class F>
std::unique_ptr<Kernel> FloatUnary(BuildContext &ctx, std::vector<TensorMeta> &out, F f) {
  ctx.RequireType(0, {ge::DT_FLOAT});
  out[0] = TensorMeta{ge::DT_FLOAT, ctx.In(0).dims, nullptr};
  return std::make_unique<UnaryKernel<float, F>>(ctx.In(0).Elements(), f);
}

#define GEMESH_FLOAT_UNARY(op, expr)                                                       \
  std::unique_ptr<Kernel> Make##op(BuildContext &ctx, std::vector<TensorMeta> &out) {     \
    return FloatUnary(ctx, out, [](float x) -> float { return (expr); });                 \
  }                                                                                        \
  GEMESH_REGISTER_KERNEL(op, Make##op)

GEMESH_FLOAT_UNARY(Relu, x > 0.0f ? x : 0.0f);
GEMESH_FLOAT_UNARY(Sigmoid, 1.0f / (1.0f + std::exp(-x)));
GEMESH_FLOAT_UNARY(Tanh, std::tanh(x));
GEMESH_FLOAT_UNARY(Erf, std::erf(x));
GEMESH_FLOAT_UNARY(Sqrt, std::sqrt(x));
GEMESH_FLOAT_UNARY(Exp, std::exp(x));
GEMESH_FLOAT_UNARY(Log, std::log(x));
GEMESH_FLOAT_UNARY(Reciprocal, 1.0f / x);
GEMESH_FLOAT_UNARY(Floor, std::floor(x));
GEMESH_FLOAT_UNARY(Ceil, std::ceil(x));
GEMESH_FLOAT_UNARY(Round, std::nearbyint(x));
GEMESH_FLOAT_UNARY(Softplus, x > 20.0f ? x : std::log1p(std::exp(x)));
GEMESH_FLOAT_UNARY(HardSwish, x * std::max(0.0f, std::min(1.0f, x / 6.0f + 0.5f)));

template <class T>
std::unique_ptr<Kernel> SignedUnary(BuildContext &ctx, std::vector<TensorMeta> &out, bool neg) {
  out[0] = TensorMeta{ctx.In(0).dtype, ctx.In(0).dims, nullptr};
  if (neg) {
    auto f = [](T x) -> T { return static_cast<T>(-x); };
    return std::make_unique<UnaryKernel<T, decltype(f)>>(ctx.In(0).Elements(), f);
  }
  auto f = [](T x) -> T { return x < 0 ? static_cast<T>(-x) : x; };
  return std::make_unique<UnaryKernel<T, decltype(f)>>(ctx.In(0).Elements(), f);
}

std::unique_ptr<Kernel> MakeNegOrAbs(BuildContext &ctx, std::vector<TensorMeta> &out, bool neg) {
  ctx.RequireType(0, {ge::DT_FLOAT, ge::DT_INT64, ge::DT_INT32});
  switch (ctx.In(0).dtype) {
    case ge::DT_FLOAT: return SignedUnary<float>(ctx, out, neg);
    case ge::DT_INT64: return SignedUnary<int64_t>(ctx, out, neg);
    default: return SignedUnary<int32_t>(ctx, out, neg);
  }
}
std::unique_ptr<Kernel> MakeNeg(BuildContext &ctx, std::vector<TensorMeta> &out) { return MakeNegOrAbs(ctx, out, true); }
std::unique_ptr<Kernel> MakeAbs(BuildContext &ctx, std::vector<TensorMeta> &out) { return MakeNegOrAbs(ctx, out, false); }
GEMESH_REGISTER_KERNEL(Neg, MakeNeg);
GEMESH_REGISTER_KERNEL(Abs, MakeAbs);

std::unique_ptr<Kernel> MakeNot(BuildContext &ctx, std::vector<TensorMeta> &out) {
  ctx.RequireType(0, {ge::DT_BOOL});
  out[0] = TensorMeta{ge::DT_BOOL, ctx.In(0).dims, nullptr};
  auto f = [](uint8_t x) -> uint8_t { return x == 0; };
  return std::make_unique<UnaryKernel<uint8_t, decltype(f)>>(ctx.In(0).Elements(), f);
}
GEMESH_REGISTER_KERNEL(Not, MakeNot);

std::unique_ptr<Kernel> MakeLeakyRelu(BuildContext &ctx, std::vector<TensorMeta> &out) {
  const float alpha = ctx.Float("alpha", 0.01f);
  return FloatUnary(ctx, out, [alpha](float x) { return x >= 0.0f ? x : alpha * x; });
}
GEMESH_REGISTER_KERNEL(LeakyRelu, MakeLeakyRelu);

std::unique_ptr<Kernel> MakeHardSigmoid(BuildContext &ctx, std::vector<TensorMeta> &out) {
  const float alpha = ctx.Float("alpha", 0.2f);
  const float beta = ctx.Float("beta", 0.5f);
  return FloatUnary(ctx, out, [alpha, beta](float x) { return std::max(0.0f, std::min(1.0f, alpha * x + beta)); });
}
GEMESH_REGISTER_KERNEL(HardSigmoid, MakeHardSigmoid);

std::unique_ptr<Kernel> MakeGelu(BuildContext &ctx, std::vector<TensorMeta> &out) {
  if (ctx.Str("approximate", "none") == "tanh") {
    return FloatUnary(ctx, out, [](float x) {
      return 0.5f * x * (1.0f + std::tanh(0.7978845608f * (x + 0.044715f * x * x * x)));
    });
  }
  return FloatUnary(ctx, out, [](float x) { return 0.5f * x * (1.0f + std::erf(x * 0.70710678118f)); });
}
GEMESH_REGISTER_KERNEL(Gelu, MakeGelu);

std::unique_ptr<Kernel> MakeClip(BuildContext &ctx, std::vector<TensorMeta> &out) {
  float lo = -std::numeric_limits<float>::infinity();
  float hi = std::numeric_limits<float>::infinity();
  if (ctx.opset() < 11) {
    lo = ctx.Float("min", lo);
    hi = ctx.Float("max", hi);
  } else {
    if (ctx.HasInput(1)) lo = ctx.ConstFloats(1).at(0);
    if (ctx.HasInput(2)) hi = ctx.ConstFloats(2).at(0);
  }
  return FloatUnary(ctx, out, [lo, hi](float x) { return std::min(hi, std::max(lo, x)); });
}
GEMESH_REGISTER_KERNEL(Clip, MakeClip);

// ---- Cast ----------------------------------------------------------------

template <class From, class To>
void CastLoop(const void *in, void *out, int64_t n) {
  const From *x = static_cast<const From *>(in);
  To *y = static_cast<To *>(out);
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<To, bool>) {
      y[i] = x[i] != From(0);
    } else {
      y[i] = static_cast<To>(x[i]);
    }
  }
}

using CastFn = void (*)(const void *, void *, int64_t);

template <class From>
CastFn CastTo(ge::DataType to) {
  switch (to) {
    case ge::DT_FLOAT: return CastLoop<From, float>;
    case ge::DT_DOUBLE: return CastLoop<From, double>;
    case ge::DT_INT64: return CastLoop<From, int64_t>;
    case ge::DT_INT32: return CastLoop<From, int32_t>;
    case ge::DT_INT16: return CastLoop<From, int16_t>;
    case ge::DT_INT8: return CastLoop<From, int8_t>;
    case ge::DT_UINT8: return CastLoop<From, uint8_t>;
    case ge::DT_UINT16: return CastLoop<From, uint16_t>;
    case ge::DT_UINT32: return CastLoop<From, uint32_t>;
    case ge::DT_UINT64: return CastLoop<From, uint64_t>;
    case ge::DT_BOOL: return CastLoop<From, bool>;
    default: return nullptr;
  }
}

CastFn CastFrom(ge::DataType from, ge::DataType to) {
  switch (from) {
    case ge::DT_FLOAT: return CastTo<float>(to);
    case ge::DT_DOUBLE: return CastTo<double>(to);
    case ge::DT_INT64: return CastTo<int64_t>(to);
    case ge::DT_INT32: return CastTo<int32_t>(to);
    case ge::DT_INT16: return CastTo<int16_t>(to);
    case ge::DT_INT8: return CastTo<int8_t>(to);
    case ge::DT_UINT8: return CastTo<uint8_t>(to);
    case ge::DT_UINT16: return CastTo<uint16_t>(to);
    case ge::DT_UINT32: return CastTo<uint32_t>(to);
    case ge::DT_UINT64: return CastTo<uint64_t>(to);
    case ge::DT_BOOL: return CastTo<bool>(to);
    default: return nullptr;
  }
}

// ONNX TensorProto.DataType → ge::DataType for Cast's `to`.
ge::DataType OnnxType(int64_t t) {
  switch (t) {
    case 1: return ge::DT_FLOAT;
    case 2: return ge::DT_UINT8;
    case 3: return ge::DT_INT8;
    case 4: return ge::DT_UINT16;
    case 5: return ge::DT_INT16;
    case 6: return ge::DT_INT32;
    case 7: return ge::DT_INT64;
    case 9: return ge::DT_BOOL;
    case 11: return ge::DT_DOUBLE;
    case 12: return ge::DT_UINT32;
    case 13: return ge::DT_UINT64;
    default: return ge::DT_UNDEFINED;
  }
}

class CastKernel final : public Kernel {
 public:
  CastKernel(CastFn fn, int64_t n) : fn_(fn), n_(n) {}
  void Run(const KernelArgs &args) const override { fn_(args.inputs[0], args.outputs[0], n_); }

 private:
  CastFn fn_;
  int64_t n_;
};

std::unique_ptr<Kernel> MakeCast(BuildContext &ctx, std::vector<TensorMeta> &out) {
  const ge::DataType to = OnnxType(ctx.Int("to", 0));
  const CastFn fn = CastFrom(ctx.In(0).dtype, to);
  if (fn == nullptr) {
    ctx.Fail(std::string("cast from ") + DataTypeName(ctx.In(0).dtype) + " to ONNX type " +
             std::to_string(ctx.Int("to", 0)) + " is not supported by the simulator");
  }
  out[0] = TensorMeta{to, ctx.In(0).dims, nullptr};
  return std::make_unique<CastKernel>(fn, ctx.In(0).Elements());
}
GEMESH_REGISTER_KERNEL(Cast, MakeCast);

// ---- copies --------------------------------------------------------------

class CopyKernel final : public Kernel {
 public:
  explicit CopyKernel(size_t bytes) : bytes_(bytes) {}
  void Run(const KernelArgs &args) const override {
    if (bytes_ != 0) std::memcpy(args.outputs[0], args.inputs[0], bytes_);
  }

 private:
  size_t bytes_;
};

std::unique_ptr<Kernel> MakeIdentity(BuildContext &ctx, std::vector<TensorMeta> &out) {
  out[0] = TensorMeta{ctx.In(0).dtype, ctx.In(0).dims, nullptr};
  return std::make_unique<CopyKernel>(ctx.In(0).Bytes());
}
GEMESH_REGISTER_KERNEL(Identity, MakeIdentity);

std::unique_ptr<Kernel> MakeDropout(BuildContext &ctx, std::vector<TensorMeta> &out) {
  if (ctx.NumOutputs() > 1 && ctx.node().outputs[1] >= 0) ctx.Fail("the mask output is not supported (inference only)");
  out[0] = TensorMeta{ctx.In(0).dtype, ctx.In(0).dims, nullptr};
  return std::make_unique<CopyKernel>(ctx.In(0).Bytes());
}
GEMESH_REGISTER_KERNEL(Dropout, MakeDropout);

}  // namespace
}  // namespace gemesh::sim
