// Neural-network ops: Conv (im2col + GEMM), pooling, BatchNormalization,
// LayerNormalization, Softmax and LogSoftmax.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/kernel.h"

namespace gemesh::sim {
namespace {

// Spatial geometry shared by Conv and the pools (1-D is handled as H = 1).
struct Window {
  int64_t H{1}, W{1}, kH{1}, kW{1}, sH{1}, sW{1}, dH{1}, dW{1};
  int64_t pt{0}, pl{0}, pb{0}, pr{0};
  int64_t oH{1}, oW{1};
};

int64_t PoolOut(int64_t in, int64_t pad_total, int64_t k, int64_t s, int64_t d, bool ceil_mode, int64_t pad_begin) {
  const int64_t span = in + pad_total - d * (k - 1) - 1;
  int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  // A window that would start inside the end padding only is dropped.
  if (ceil_mode && (out - 1) * s >= in + pad_begin) --out;
  return out;
}

Window MakeWindow(const BuildContext &ctx, const std::vector<int64_t> &x_dims, const std::vector<int64_t> &kernel,
                  bool ceil_mode) {
  const size_t spatial = x_dims.size() - 2;
  if (spatial < 1 || spatial > 2) ctx.Fail("only 1-D and 2-D spatial inputs are supported, got " + DimsToString(x_dims));
  if (kernel.size() != spatial) ctx.Fail("kernel_shape does not match the input's spatial rank");
  const std::vector<int64_t> ones(spatial, 1);
  const std::vector<int64_t> zeros(spatial * 2, 0);
  const auto strides = ctx.Ints("strides", ones);
  const auto dil = ctx.Ints("dilations", ones);
  auto pads = ctx.Ints("pads", zeros);
  if (strides.size() != spatial || dil.size() != spatial || pads.size() != spatial * 2) {
    ctx.Fail("strides, dilations or pads have the wrong length");
  }
  const std::string auto_pad = ctx.Str("auto_pad", "NOTSET");
  std::vector<int64_t> in(x_dims.begin() + 2, x_dims.end());
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t i = 0; i < spatial; ++i) {
      const int64_t out = (in[i] + strides[i] - 1) / strides[i];
      const int64_t total = std::max<int64_t>(0, (out - 1) * strides[i] + dil[i] * (kernel[i] - 1) + 1 - in[i]);
      pads[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pads[i + spatial] = total - pads[i];
    }
  } else if (auto_pad == "VALID") {
    std::fill(pads.begin(), pads.end(), 0);
  } else if (auto_pad != "NOTSET") {
    ctx.Fail("unknown auto_pad " + auto_pad);
  }
  Window w;
  if (spatial == 1) {
    w.W = in[0];
    w.kW = kernel[0];
    w.sW = strides[0];
    w.dW = dil[0];
    w.pl = pads[0];
    w.pr = pads[1];
  } else {
    w.H = in[0];
    w.W = in[1];
    w.kH = kernel[0];
    w.kW = kernel[1];
    w.sH = strides[0];
    w.sW = strides[1];
    w.dH = dil[0];
    w.dW = dil[1];
    w.pt = pads[0];
    w.pl = pads[1];
    w.pb = pads[2];
    w.pr = pads[3];
  }
  w.oH = PoolOut(w.H, w.pt + w.pb, w.kH, w.sH, w.dH, ceil_mode, w.pt);
  w.oW = PoolOut(w.W, w.pl + w.pr, w.kW, w.sW, w.dW, ceil_mode, w.pl);
  if (w.oH <= 0 || w.oW <= 0) ctx.Fail("the window does not fit the input " + DimsToString(x_dims));
  return w;
}

std::vector<int64_t> OutDims(const std::vector<int64_t> &x, int64_t channels, const Window &w) {
  if (x.size() == 3) return {x[0], channels, w.oW};
  return {x[0], channels, w.oH, w.oW};
}

// ---- Conv ----------------------------------------------------------------

class ConvKernel final : public Kernel {
 public:
  int64_t N{0}, C{0}, M{0}, G{1};
  Window w;
  bool direct{false};  // 1x1, stride 1, no padding: the input already is the column matrix
  bool has_bias{false};
  CubePrecision precision;
  std::vector<float> rounded_w;  // constant weights in the input format
  void Run(const KernelArgs &args) const override {
    const FloatFormat in = precision.in;
    const float *X = static_cast<const float *>(args.inputs[0]);
    const float *Wt = rounded_w.empty() ? static_cast<const float *>(args.inputs[1]) : rounded_w.data();
    const float *B = has_bias ? static_cast<const float *>(args.inputs[2]) : nullptr;
    float *Y = static_cast<float *>(args.outputs[0]);
    float *col = static_cast<float *>(args.scratch);
    const int64_t Cg = C / G;
    const int64_t Mg = M / G;
    const int64_t K = Cg * w.kH * w.kW;
    const int64_t P = w.oH * w.oW;
    // Runtime weights in a low-precision mode are rounded once per run, after the column matrix.
    if (in != FloatFormat::kFp32 && rounded_w.empty()) Wt = RoundedCopy(in, Wt, M * K, col + K * P);
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t g = 0; g < G; ++g) {
        const float *x = X + (n * C + g * Cg) * w.H * w.W;
        const float *cols = x;
        if (!direct) {
          Im2Col(x, Cg, col);
          RoundInPlace(in, col, K * P);  // the same values as rounding X: padding zeros stay zero
          cols = col;
        } else if (in != FloatFormat::kFp32) {
          cols = RoundedCopy(in, x, K * P, col);
        }
        float *y = Y + (n * M + g * Mg) * P;
        Sgemm(Mg, P, K, 1.0f, Wt + g * Mg * K, K, cols, P, 0.0f, y, P);
        if (B != nullptr) {
          for (int64_t m = 0; m < Mg; ++m) {
            const float bias = RoundTo(in, B[g * Mg + m]);
            float *row = y + m * P;
            for (int64_t p = 0; p < P; ++p) row[p] += bias;
          }
        }
        RoundInPlace(precision.out, y, Mg * P);
      }
    }
  }

 private:
  void Im2Col(const float *x, int64_t Cg, float *col) const {
    const int64_t P = w.oH * w.oW;
    for (int64_t c = 0; c < Cg; ++c) {
      for (int64_t kh = 0; kh < w.kH; ++kh) {
        for (int64_t kw = 0; kw < w.kW; ++kw) {
          float *row = col + ((c * w.kH + kh) * w.kW + kw) * P;
          for (int64_t oh = 0; oh < w.oH; ++oh) {
            const int64_t ih = oh * w.sH - w.pt + kh * w.dH;
            float *dst = row + oh * w.oW;
            if (ih < 0 || ih >= w.H) {
              std::fill(dst, dst + w.oW, 0.0f);
              continue;
            }
            const float *src = x + (c * w.H + ih) * w.W;
            for (int64_t ow = 0; ow < w.oW; ++ow) {
              const int64_t iw = ow * w.sW - w.pl + kw * w.dW;
              dst[ow] = (iw >= 0 && iw < w.W) ? src[iw] : 0.0f;
            }
          }
        }
      }
    }
  }
};

std::unique_ptr<Kernel> MakeConv(BuildContext &ctx, std::vector<TensorMeta> &out) {
  ctx.RequireType(0, {ge::DT_FLOAT});
  ctx.RequireType(1, {ge::DT_FLOAT});
  const auto &x = ctx.In(0).dims;
  const auto &wd = ctx.In(1).dims;
  if (x.size() < 3 || wd.size() != x.size()) ctx.Fail("X " + DimsToString(x) + " and W " + DimsToString(wd) + " do not match");
  auto k = std::make_unique<ConvKernel>();
  k->N = x[0];
  k->C = x[1];
  k->M = wd[0];
  k->G = ctx.Int("group", 1);
  if (k->G <= 0 || k->C % k->G != 0 || k->M % k->G != 0 || wd[1] != k->C / k->G) {
    ctx.Fail("channels " + std::to_string(k->C) + " / weights " + DimsToString(wd) + " / group " + std::to_string(k->G) +
             " are inconsistent");
  }
  const std::vector<int64_t> kernel = ctx.Ints("kernel_shape", std::vector<int64_t>(wd.begin() + 2, wd.end()));
  k->w = MakeWindow(ctx, x, kernel, false);
  if (ctx.HasInput(2)) {
    ctx.RequireType(2, {ge::DT_FLOAT});
    if (ctx.In(2).Elements() != k->M) ctx.Fail("bias must have " + std::to_string(k->M) + " elements");
    k->has_bias = true;
  }
  const Window &w = k->w;
  k->direct = w.kH == 1 && w.kW == 1 && w.sH == 1 && w.sW == 1 && w.pt + w.pl + w.pb + w.pr == 0;
  const int64_t col_elements = (k->C / k->G) * w.kH * w.kW * w.oH * w.oW;
  k->precision = ctx.precision();
  if (k->precision.in == FloatFormat::kFp32) {
    if (!k->direct) k->scratch_bytes = sizeof(float) * static_cast<size_t>(col_elements);
  } else {
    // The column matrix always (a direct conv's input is rounded into it), plus runtime weights.
    const TensorMeta &wt = ctx.In(1);
    if (wt.data != nullptr) k->rounded_w = Rounded(k->precision.in, wt.data, wt.Elements());
    k->scratch_bytes = sizeof(float) * static_cast<size_t>(col_elements + (wt.data != nullptr ? 0 : wt.Elements()));
  }
  out[0] = TensorMeta{ge::DT_FLOAT, OutDims(x, k->M, w), nullptr};
  return k;
}
GEMESH_REGISTER_KERNEL(Conv, MakeConv);

// ---- pools ---------------------------------------------------------------

class PoolKernel final : public Kernel {
 public:
  int64_t planes{0};
  Window w;
  bool max{true};
  bool count_include_pad{false};
  void Run(const KernelArgs &args) const override {
    const float *X = static_cast<const float *>(args.inputs[0]);
    float *Y = static_cast<float *>(args.outputs[0]);
    for (int64_t p = 0; p < planes; ++p) {
      const float *x = X + p * w.H * w.W;
      float *y = Y + p * w.oH * w.oW;
      for (int64_t oh = 0; oh < w.oH; ++oh) {
        for (int64_t ow = 0; ow < w.oW; ++ow) {
          float acc = max ? -std::numeric_limits<float>::infinity() : 0.0f;
          int64_t count = 0;
          for (int64_t kh = 0; kh < w.kH; ++kh) {
            const int64_t ih = oh * w.sH - w.pt + kh * w.dH;
            for (int64_t kw = 0; kw < w.kW; ++kw) {
              const int64_t iw = ow * w.sW - w.pl + kw * w.dW;
              if (ih < 0 || ih >= w.H || iw < 0 || iw >= w.W) {
                // Padding counts for the average only when asked, and only inside the padded extent.
                if (count_include_pad && ih < w.H + w.pb && iw < w.W + w.pr) ++count;
                continue;
              }
              const float v = x[ih * w.W + iw];
              if (max) {
                acc = std::max(acc, v);
              } else {
                acc += v;
              }
              ++count;
            }
          }
          y[oh * w.oW + ow] = max ? acc : (count > 0 ? acc / static_cast<float>(count) : 0.0f);
        }
      }
    }
  }
};

std::unique_ptr<Kernel> MakePool(BuildContext &ctx, std::vector<TensorMeta> &out, bool max) {
  ctx.RequireType(0, {ge::DT_FLOAT});
  if (ctx.NumOutputs() > 1 && ctx.node().outputs[1] >= 0) ctx.Fail("the Indices output is not supported");
  const auto &x = ctx.In(0).dims;
  if (x.size() < 3) ctx.Fail("input must have rank >= 3");
  auto k = std::make_unique<PoolKernel>();
  k->max = max;
  k->count_include_pad = ctx.Int("count_include_pad", 0) != 0;
  k->w = MakeWindow(ctx, x, ctx.Ints("kernel_shape"), ctx.Int("ceil_mode", 0) != 0);
  k->planes = x[0] * x[1];
  out[0] = TensorMeta{ge::DT_FLOAT, OutDims(x, x[1], k->w), nullptr};
  return k;
}
std::unique_ptr<Kernel> MakeMaxPool(BuildContext &ctx, std::vector<TensorMeta> &out) { return MakePool(ctx, out, true); }
std::unique_ptr<Kernel> MakeAveragePool(BuildContext &ctx, std::vector<TensorMeta> &out) { return MakePool(ctx, out, false); }
GEMESH_REGISTER_KERNEL(MaxPool, MakeMaxPool);
GEMESH_REGISTER_KERNEL(AveragePool, MakeAveragePool);

class GlobalPoolKernel final : public Kernel {
 public:
  int64_t planes{0}, size{0};
  bool max{false};
  void Run(const KernelArgs &args) const override {
    const float *X = static_cast<const float *>(args.inputs[0]);
    float *Y = static_cast<float *>(args.outputs[0]);
    for (int64_t p = 0; p < planes; ++p) {
      const float *x = X + p * size;
      if (max) {
        float m = -std::numeric_limits<float>::infinity();
        for (int64_t i = 0; i < size; ++i) m = std::max(m, x[i]);
        Y[p] = m;
      } else {
        double s = 0;
        for (int64_t i = 0; i < size; ++i) s += x[i];
        Y[p] = static_cast<float>(s / static_cast<double>(size));
      }
    }
  }
};

std::unique_ptr<Kernel> MakeGlobalPool(BuildContext &ctx, std::vector<TensorMeta> &out, bool max) {
  ctx.RequireType(0, {ge::DT_FLOAT});
  const auto &x = ctx.In(0).dims;
  if (x.size() < 3) ctx.Fail("input must have rank >= 3");
  auto k = std::make_unique<GlobalPoolKernel>();
  k->max = max;
  k->planes = x[0] * x[1];
  k->size = 1;
  std::vector<int64_t> dims = {x[0], x[1]};
  for (size_t i = 2; i < x.size(); ++i) {
    k->size *= x[i];
    dims.push_back(1);
  }
  out[0] = TensorMeta{ge::DT_FLOAT, dims, nullptr};
  return k;
}
std::unique_ptr<Kernel> MakeGlobalAveragePool(BuildContext &ctx, std::vector<TensorMeta> &out) {
  return MakeGlobalPool(ctx, out, false);
}
std::unique_ptr<Kernel> MakeGlobalMaxPool(BuildContext &ctx, std::vector<TensorMeta> &out) {
  return MakeGlobalPool(ctx, out, true);
}
GEMESH_REGISTER_KERNEL(GlobalAveragePool, MakeGlobalAveragePool);
GEMESH_REGISTER_KERNEL(GlobalMaxPool, MakeGlobalMaxPool);

// ---- normalisation -------------------------------------------------------

class BatchNormKernel final : public Kernel {
 public:
  int64_t N{0}, C{0}, S{0};
  std::vector<float> scale, shift;  // folded: y = x * scale + shift
  void Run(const KernelArgs &args) const override {
    const float *X = static_cast<const float *>(args.inputs[0]);
    float *Y = static_cast<float *>(args.outputs[0]);
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t c = 0; c < C; ++c) {
        const float a = scale[c], b = shift[c];
        const float *x = X + (n * C + c) * S;
        float *y = Y + (n * C + c) * S;
        for (int64_t i = 0; i < S; ++i) y[i] = x[i] * a + b;
      }
    }
  }
};

std::unique_ptr<Kernel> MakeBatchNorm(BuildContext &ctx, std::vector<TensorMeta> &out) {
  ctx.RequireType(0, {ge::DT_FLOAT});
  for (size_t i = 1; i < ctx.NumOutputs(); ++i) {
    if (ctx.node().outputs[i] >= 0) ctx.Fail("training outputs are not supported (inference only)");
  }
  const auto &x = ctx.In(0).dims;
  if (x.size() < 2) ctx.Fail("input must have rank >= 2");
  auto k = std::make_unique<BatchNormKernel>();
  k->N = x[0];
  k->C = x[1];
  k->S = 1;
  for (size_t i = 2; i < x.size(); ++i) k->S *= x[i];
  const auto gamma = ctx.ConstFloats(1);
  const auto beta = ctx.ConstFloats(2);
  const auto mean = ctx.ConstFloats(3);
  const auto var = ctx.ConstFloats(4);
  const auto C = static_cast<size_t>(k->C);
  if (gamma.size() != C || beta.size() != C || mean.size() != C || var.size() != C) ctx.Fail("parameters must have C elements");
  const float eps = ctx.Float("epsilon", 1e-5f);
  k->scale.resize(C);
  k->shift.resize(C);
  for (size_t c = 0; c < C; ++c) {
    k->scale[c] = gamma[c] / std::sqrt(var[c] + eps);
    k->shift[c] = beta[c] - mean[c] * k->scale[c];
  }
  out[0] = TensorMeta{ge::DT_FLOAT, x, nullptr};
  return k;
}
GEMESH_REGISTER_KERNEL(BatchNormalization, MakeBatchNorm);

class LayerNormKernel final : public Kernel {
 public:
  int64_t rows{0}, cols{0};
  int64_t scale_len{0}, bias_len{0};  // elements of Scale / B, broadcast over the row
  float eps{1e-5f};
  void Run(const KernelArgs &args) const override {
    const float *X = static_cast<const float *>(args.inputs[0]);
    const float *scale = static_cast<const float *>(args.inputs[1]);
    const float *bias = bias_len > 0 ? static_cast<const float *>(args.inputs[2]) : nullptr;
    float *Y = static_cast<float *>(args.outputs[0]);
    for (int64_t r = 0; r < rows; ++r) {
      const float *x = X + r * cols;
      float *y = Y + r * cols;
      double sum = 0;
      for (int64_t i = 0; i < cols; ++i) sum += x[i];
      const double mean = sum / static_cast<double>(cols);
      double sq = 0;
      for (int64_t i = 0; i < cols; ++i) sq += (x[i] - mean) * (x[i] - mean);
      const double inv = 1.0 / std::sqrt(sq / static_cast<double>(cols) + eps);
      for (int64_t i = 0; i < cols; ++i) {
        float v = static_cast<float>((x[i] - mean) * inv) * scale[scale_len == 1 ? 0 : i];
        if (bias != nullptr) v += bias[bias_len == 1 ? 0 : i];
        y[i] = v;
      }
    }
  }
};

std::unique_ptr<Kernel> MakeLayerNorm(BuildContext &ctx, std::vector<TensorMeta> &out) {
  ctx.RequireType(0, {ge::DT_FLOAT});
  ctx.RequireType(1, {ge::DT_FLOAT});
  for (size_t i = 1; i < ctx.NumOutputs(); ++i) {
    if (ctx.node().outputs[i] >= 0) ctx.Fail("the Mean and InvStdDev outputs are not supported");
  }
  const auto &x = ctx.In(0).dims;
  const int64_t axis = NormalizeAxis(ctx, ctx.Int("axis", -1), static_cast<int64_t>(x.size()));
  auto k = std::make_unique<LayerNormKernel>();
  k->rows = 1;
  k->cols = 1;
  for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i) (i < axis ? k->rows : k->cols) *= x[i];
  k->eps = ctx.Float("epsilon", 1e-5f);
  k->scale_len = ctx.In(1).Elements();
  if (k->scale_len != 1 && k->scale_len != k->cols) ctx.Fail("Scale must cover the normalised dims");
  if (ctx.HasInput(2)) {
    ctx.RequireType(2, {ge::DT_FLOAT});
    k->bias_len = ctx.In(2).Elements();
    if (k->bias_len != 1 && k->bias_len != k->cols) ctx.Fail("B must cover the normalised dims");
  }
  out[0] = TensorMeta{ge::DT_FLOAT, x, nullptr};
  return k;
}
GEMESH_REGISTER_KERNEL(LayerNormalization, MakeLayerNorm);

// ---- softmax -------------------------------------------------------------

class SoftmaxKernel final : public Kernel {
 public:
  int64_t outer{1}, n{1}, inner{1};
  bool log{false};
  void Run(const KernelArgs &args) const override {
    const float *X = static_cast<const float *>(args.inputs[0]);
    float *Y = static_cast<float *>(args.outputs[0]);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t in = 0; in < inner; ++in) {
        const float *x = X + o * n * inner + in;
        float *y = Y + o * n * inner + in;
        float m = -std::numeric_limits<float>::infinity();
        for (int64_t i = 0; i < n; ++i) m = std::max(m, x[i * inner]);
        double sum = 0;
        for (int64_t i = 0; i < n; ++i) {
          const float e = std::exp(x[i * inner] - m);
          if (!log) y[i * inner] = e;
          sum += e;
        }
        if (log) {
          const float ls = static_cast<float>(std::log(sum));
          for (int64_t i = 0; i < n; ++i) y[i * inner] = x[i * inner] - m - ls;
        } else {
          const float inv = static_cast<float>(1.0 / sum);
          for (int64_t i = 0; i < n; ++i) y[i * inner] *= inv;
        }
      }
    }
  }
};

std::unique_ptr<Kernel> MakeSoftmaxLike(BuildContext &ctx, std::vector<TensorMeta> &out, bool log) {
  ctx.RequireType(0, {ge::DT_FLOAT});
  const auto &x = ctx.In(0).dims;
  const auto rank = static_cast<int64_t>(x.size());
  auto k = std::make_unique<SoftmaxKernel>();
  k->log = log;
  if (ctx.opset() < 13) {
    // Before opset 13 the input is flattened to 2-D at `axis` and normalised per row.
    const int64_t axis = NormalizeAxis(ctx, ctx.Int("axis", 1), rank);
    k->outer = 1;
    k->n = 1;
    for (int64_t i = 0; i < rank; ++i) (i < axis ? k->outer : k->n) *= x[i];
  } else {
    const int64_t axis = NormalizeAxis(ctx, ctx.Int("axis", -1), rank);
    for (int64_t i = 0; i < rank; ++i) {
      if (i < axis) k->outer *= x[i];
      if (i > axis) k->inner *= x[i];
    }
    k->n = x[axis];
  }
  out[0] = TensorMeta{ge::DT_FLOAT, x, nullptr};
  return k;
}
std::unique_ptr<Kernel> MakeSoftmax(BuildContext &ctx, std::vector<TensorMeta> &out) { return MakeSoftmaxLike(ctx, out, false); }
std::unique_ptr<Kernel> MakeLogSoftmax(BuildContext &ctx, std::vector<TensorMeta> &out) { return MakeSoftmaxLike(ctx, out, true); }
GEMESH_REGISTER_KERNEL(Softmax, MakeSoftmax);
GEMESH_REGISTER_KERNEL(LogSoftmax, MakeLogSoftmax);

}  // namespace
}  // namespace gemesh::sim
