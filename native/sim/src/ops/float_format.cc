#include <cmath>
#include <cstring>

#include "ops/kernel.h"

namespace gemesh::sim {
namespace {

uint32_t Bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof(u));
  return u;
}

float FromBits(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof(x));
  return x;
}

// fp16: 1 sign, 5 exponent, 10 fraction bits; max 65504, smallest normal 2^-14,
// subnormal quantum 2^-24. Ties go to even, as the NPU's conversion does.
float RoundHalf(float x) {
  const uint32_t u = Bits(x);
  const uint32_t sign = u & 0x80000000u;
  uint32_t a = u ^ sign;
  if (a >= 0x7f800000u) return x;                            // inf, NaN
  if (a >= 0x477ff000u) return FromBits(sign | 0x7f800000u);  // >= 65520 rounds past 65504: inf
  if (a < 0x38800000u) {
    // Below 2^-14: a multiple of 2^-24. Scaling by powers of two is exact and
    // nearbyint rounds ties to even in the default rounding mode.
    return std::nearbyint(x * 16777216.0f) * (1.0f / 16777216.0f);
  }
  a += 0x0fffu + ((a >> 13) & 1u);  // drop 13 of 23 fraction bits, ties to even
  return FromBits(sign | (a & ~0x1fffu));
}

// bf16: fp32's exponent with 7 fraction bits.
float RoundBf16(float x) {
  const uint32_t u = Bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return x;  // NaN
  return FromBits((u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u);
}

}  // namespace

float RoundTo(FloatFormat format, float x) {
  switch (format) {
    case FloatFormat::kFp16:
      return RoundHalf(x);
    case FloatFormat::kBf16:
      return RoundBf16(x);
    case FloatFormat::kFp32:
      break;
  }
  return x;
}

void RoundInPlace(FloatFormat format, float *data, int64_t n) {
  if (format == FloatFormat::kFp32) return;
  for (int64_t i = 0; i < n; ++i) data[i] = RoundTo(format, data[i]);
}

const float *RoundedCopy(FloatFormat format, const float *src, int64_t n, float *dst) {
  if (format == FloatFormat::kFp32) return src;
  for (int64_t i = 0; i < n; ++i) dst[i] = RoundTo(format, src[i]);
  return dst;
}

std::vector<float> Rounded(FloatFormat format, const uint8_t *data, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  std::memcpy(out.data(), data, out.size() * sizeof(float));
  RoundInPlace(format, out.data(), n);
  return out;
}

const char *FloatFormatName(FloatFormat format) {
  switch (format) {
    case FloatFormat::kFp16:
      return "fp16";
    case FloatFormat::kBf16:
      return "bf16";
    case FloatFormat::kFp32:
      break;
  }
  return "fp32";
}

}  // namespace gemesh::sim
