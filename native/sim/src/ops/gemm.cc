// Matrix products: a blocked fp32 GEMM (the hot loop of Conv, MatMul and Gemm),
// plus the MatMul and Gemm ops.
#include <algorithm>

#include "ops/kernel.h"

namespace gemesh::sim {

namespace {

// C += alpha * A * B over a block of rows. Four rows of C share each B load,
// and N is tiled so those rows stay in L1 while K streams through. The inner
// loop is written for the compiler's vectoriser; target_clones adds an
// AVX2+FMA build chosen at load time where the CPU has it.
__attribute__((target_clones("arch=haswell", "default"))) void GemmAccumulate(int64_t M, int64_t N, int64_t K,
                                                                              float alpha, const float *A, int64_t lda,
                                                                              const float *B, int64_t ldb, float *C,
                                                                              int64_t ldc) {
  constexpr int64_t kNb = 256;
  constexpr int64_t kKb = 128;
  for (int64_t j0 = 0; j0 < N; j0 += kNb) {
    const int64_t nb = std::min(kNb, N - j0);
    for (int64_t k0 = 0; k0 < K; k0 += kKb) {
      const int64_t k1 = std::min(K, k0 + kKb);
      int64_t i = 0;
      for (; i + 4 <= M; i += 4) {
        float *__restrict c0 = C + i * ldc + j0;
        float *__restrict c1 = c0 + ldc;
        float *__restrict c2 = c1 + ldc;
        float *__restrict c3 = c2 + ldc;
        for (int64_t k = k0; k < k1; ++k) {
          const float a0 = alpha * A[i * lda + k];
          const float a1 = alpha * A[(i + 1) * lda + k];
          const float a2 = alpha * A[(i + 2) * lda + k];
          const float a3 = alpha * A[(i + 3) * lda + k];
          const float *__restrict b = B + k * ldb + j0;
          for (int64_t j = 0; j < nb; ++j) {
            const float bv = b[j];
            c0[j] += a0 * bv;
            c1[j] += a1 * bv;
            c2[j] += a2 * bv;
            c3[j] += a3 * bv;
          }
        }
      }
      for (; i < M; ++i) {
        float *__restrict c = C + i * ldc + j0;
        for (int64_t k = k0; k < k1; ++k) {
          const float a = alpha * A[i * lda + k];
          const float *__restrict b = B + k * ldb + j0;
          for (int64_t j = 0; j < nb; ++j) c[j] += a * b[j];
        }
      }
    }
  }
}

void Transpose2D(const float *src, int64_t rows, int64_t cols, float *dst) {
  constexpr int64_t kT = 32;
  for (int64_t r0 = 0; r0 < rows; r0 += kT) {
    for (int64_t c0 = 0; c0 < cols; c0 += kT) {
      const int64_t r1 = std::min(rows, r0 + kT);
      const int64_t c1 = std::min(cols, c0 + kT);
      for (int64_t r = r0; r < r1; ++r) {
        for (int64_t c = c0; c < c1; ++c) dst[c * rows + r] = src[r * cols + c];
      }
    }
  }
}

}  // namespace

void Sgemm(int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
           float beta, float *C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i) {
    float *c = C + i * ldc;
    if (beta == 0.0f) {
      std::fill(c, c + N, 0.0f);
    } else if (beta != 1.0f) {
      for (int64_t j = 0; j < N; ++j) c[j] *= beta;
    }
  }
  if (K > 0 && alpha != 0.0f) GemmAccumulate(M, N, K, alpha, A, lda, B, ldb, C, ldc);
}

namespace {

// ---- MatMul --------------------------------------------------------------

class MatMulKernel final : public Kernel {
 public:
  int64_t M{0}, N{0}, K{0};
  std::vector<std::pair<int64_t, int64_t>> batches;  // element offsets into A and B per output matrix
  CubePrecision precision;
  int64_t a_elements{0}, b_elements{0};
  std::vector<float> rounded[2];  // constant operands already in the input format
  void Run(const KernelArgs &args) const override {
    const float *A = Operand(args, 0, a_elements, static_cast<float *>(args.scratch));
    const float *B = Operand(args, 1, b_elements, static_cast<float *>(args.scratch) + a_elements);
    float *Y = static_cast<float *>(args.outputs[0]);
    for (size_t b = 0; b < batches.size(); ++b) {
      Sgemm(M, N, K, 1.0f, A + batches[b].first, K, B + batches[b].second, N, 0.0f, Y + static_cast<int64_t>(b) * M * N,
            N);
    }
    RoundInPlace(precision.out, Y, static_cast<int64_t>(batches.size()) * M * N);
  }

 private:
  const float *Operand(const KernelArgs &args, int i, int64_t n, float *scratch) const {
    if (!rounded[i].empty()) return rounded[i].data();
    return RoundedCopy(precision.in, static_cast<const float *>(args.inputs[i]), n, scratch);
  }
};

std::unique_ptr<Kernel> MakeMatMul(BuildContext &ctx, std::vector<TensorMeta> &out) {
  ctx.RequireType(0, {ge::DT_FLOAT});
  ctx.RequireType(1, {ge::DT_FLOAT});
  std::vector<int64_t> a = ctx.In(0).dims;
  std::vector<int64_t> b = ctx.In(1).dims;
  if (a.empty() || b.empty()) ctx.Fail("MatMul inputs must have rank >= 1");
  const bool a_vec = a.size() == 1;
  const bool b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  auto k = std::make_unique<MatMulKernel>();
  k->M = a[a.size() - 2];
  k->K = a[a.size() - 1];
  k->N = b[b.size() - 1];
  if (b[b.size() - 2] != k->K) {
    ctx.Fail("inner dims differ: " + DimsToString(ctx.In(0).dims) + " x " + DimsToString(ctx.In(1).dims));
  }
  const std::vector<int64_t> a_batch(a.begin(), a.end() - 2);
  const std::vector<int64_t> b_batch(b.begin(), b.end() - 2);
  Broadcast bc = MakeBroadcast(ctx, {&a_batch, &b_batch});
  ForEachRun(bc, [&](int64_t, const int64_t *off, int64_t n, const int64_t *st) {
    for (int64_t i = 0; i < n; ++i) {
      k->batches.emplace_back((off[0] + i * st[0]) * k->M * k->K, (off[1] + i * st[1]) * k->K * k->N);
    }
  });
  k->precision = ctx.precision();
  k->a_elements = ctx.In(0).Elements();
  k->b_elements = ctx.In(1).Elements();
  if (k->precision.in != FloatFormat::kFp32) {
    // Constant operands are rounded once here; runtime ones into scratch (A's slot first, then B's).
    for (size_t i = 0; i < 2; ++i) {
      const TensorMeta &t = ctx.In(i);
      if (t.data != nullptr) k->rounded[i] = Rounded(k->precision.in, t.data, t.Elements());
    }
    k->scratch_bytes = sizeof(float) * static_cast<size_t>(k->a_elements + k->b_elements);
  }
  std::vector<int64_t> dims = bc.out_dims;
  if (!a_vec) dims.push_back(k->M);
  if (!b_vec) dims.push_back(k->N);
  out[0] = TensorMeta{ge::DT_FLOAT, dims, nullptr};
  return k;
}
GEMESH_REGISTER_KERNEL(MatMul, MakeMatMul);

// ---- Gemm ----------------------------------------------------------------

class GemmKernel final : public Kernel {
 public:
  int64_t M{0}, N{0}, K{0};
  float alpha{1}, beta{1};
  bool trans_a{false};
  bool trans_b{false};              // B given as [N,K] and not pre-transposed
  std::vector<float> packed_b;      // constant B already laid out as [K,N] (and rounded)
  bool has_c{false};
  int64_t c_rows{1}, c_cols{1};     // C broadcast to [M,N]
  CubePrecision precision;
  void Run(const KernelArgs &args) const override {
    const FloatFormat in = precision.in;
    const float *A = static_cast<const float *>(args.inputs[0]);
    const float *B = packed_b.empty() ? static_cast<const float *>(args.inputs[1]) : packed_b.data();
    float *Y = static_cast<float *>(args.outputs[0]);
    float *scratch = static_cast<float *>(args.scratch);
    if (trans_a) {
      Transpose2D(A, K, M, scratch);
      RoundInPlace(in, scratch, M * K);
      A = scratch;
      scratch += M * K;
    } else if (in != FloatFormat::kFp32) {
      A = RoundedCopy(in, A, M * K, scratch);
      scratch += M * K;
    }
    if (trans_b) {
      Transpose2D(B, N, K, scratch);
      RoundInPlace(in, scratch, K * N);
      B = scratch;
    } else if (in != FloatFormat::kFp32 && packed_b.empty()) {
      B = RoundedCopy(in, B, K * N, scratch);
    }
    float beta_eff = 0.0f;
    if (has_c && beta != 0.0f) {
      const float *C = static_cast<const float *>(args.inputs[2]);
      for (int64_t i = 0; i < M; ++i) {
        for (int64_t j = 0; j < N; ++j) {
          Y[i * N + j] = beta * RoundTo(in, C[(c_rows == 1 ? 0 : i) * c_cols + (c_cols == 1 ? 0 : j)]);
        }
      }
      beta_eff = 1.0f;
    }
    Sgemm(M, N, K, alpha, A, K, B, N, beta_eff, Y, N);
    RoundInPlace(precision.out, Y, M * N);
  }
};

std::unique_ptr<Kernel> MakeGemm(BuildContext &ctx, std::vector<TensorMeta> &out) {
  ctx.RequireType(0, {ge::DT_FLOAT});
  ctx.RequireType(1, {ge::DT_FLOAT});
  const TensorMeta &a = ctx.In(0);
  const TensorMeta &b = ctx.In(1);
  if (a.dims.size() != 2 || b.dims.size() != 2) ctx.Fail("Gemm inputs must be 2-D");
  auto k = std::make_unique<GemmKernel>();
  k->trans_a = ctx.Int("transA", 0) != 0;
  const bool trans_b = ctx.Int("transB", 0) != 0;
  k->alpha = ctx.Float("alpha", 1.0f);
  k->beta = ctx.Float("beta", 1.0f);
  k->M = k->trans_a ? a.dims[1] : a.dims[0];
  k->K = k->trans_a ? a.dims[0] : a.dims[1];
  k->N = trans_b ? b.dims[0] : b.dims[1];
  const int64_t kb = trans_b ? b.dims[1] : b.dims[0];
  if (kb != k->K) ctx.Fail("inner dims differ: " + DimsToString(a.dims) + " x " + DimsToString(b.dims));
  k->precision = ctx.precision();
  const bool round_in = k->precision.in != FloatFormat::kFp32;
  if (trans_b && b.data != nullptr) {
    k->packed_b.resize(static_cast<size_t>(k->K * k->N));
    Transpose2D(reinterpret_cast<const float *>(b.data), k->N, k->K, k->packed_b.data());
    RoundInPlace(k->precision.in, k->packed_b.data(), k->K * k->N);
  } else if (round_in && b.data != nullptr) {
    k->packed_b = Rounded(k->precision.in, b.data, k->K * k->N);
  } else {
    k->trans_b = trans_b;
  }
  if (ctx.HasInput(2)) {
    ctx.RequireType(2, {ge::DT_FLOAT});
    const auto &c = ctx.In(2).dims;
    k->has_c = true;
    if (c.size() > 2) ctx.Fail("C must have rank <= 2");
    k->c_rows = c.size() == 2 ? c[0] : 1;
    k->c_cols = c.empty() ? 1 : c.back();
    if ((k->c_rows != 1 && k->c_rows != k->M) || (k->c_cols != 1 && k->c_cols != k->N)) {
      ctx.Fail("C " + DimsToString(c) + " cannot be broadcast to [" + std::to_string(k->M) + "," + std::to_string(k->N) + "]");
    }
  }
  // A and a runtime B are copied (transposed and/or rounded) into scratch when needed.
  const bool copy_a = k->trans_a || round_in;
  const bool copy_b = k->trans_b || (round_in && k->packed_b.empty());
  k->scratch_bytes = sizeof(float) * static_cast<size_t>((copy_a ? k->M * k->K : 0) + (copy_b ? k->N * k->K : 0));
  out[0] = TensorMeta{ge::DT_FLOAT, {k->M, k->N}, nullptr};
  return k;
}
GEMESH_REGISTER_KERNEL(Gemm, MakeGemm);

}  // namespace
}  // namespace gemesh::sim
