// Reference quantising and dequantising of rows, bit-identical to gguf.quants (and, for Q4_K / Q6_K /
// Q8_K, which gguf.quants cannot quantise, to llama.cpp's quantize_row_*_ref): f32 arithmetic in the
// reference's order, compiled with -ffp-contract=off (CMakeLists.txt) so that no a * b + c is fused.
// Formulas per type: src/ops/cpu/quant/quant_blocks.h.
#include "ops/cpu/quant/quant_rows.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "nanoformer/core/dtype.h"
#include "nanoformer/core/error.h"
#include "ops/cpu/quant/quant_blocks.h"
#include "ops/cpu/quant/type_kernels.h"
#include "ops/cpu/quant/type_traits.h"

namespace nf::cpu {
namespace {

// ---- 32-value blocks: gguf.quants' formulas ---------------------------------------------------

// The value of largest magnitude, with its sign; the first one when two tie.
float signed_absmax(const float* x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < n; ++j)
    if (std::fabs(x[j]) > amax) amax = std::fabs(x[j]), max = x[j];
  return max;
}

// q = min(top, trunc(v)) for v >= 0, as gguf's np.trunc(...).astype(np.uint8).clip(0, top)
uint8_t trunc_clamped(float v, int top) { return static_cast<uint8_t>(std::min(top, static_cast<int>(v))); }

// 32 values of 5 bits -> 16 bytes of low nibbles (q[j] | q[j + 16] << 4) and the fifth bits, bit j of qh.
void pack_5bit(const uint8_t* q, uint8_t* qs, uint8_t* qh) {
  uint32_t high = 0;
  for (int j = 0; j < 16; ++j) {
    qs[j] = static_cast<uint8_t>((q[j] & 0x0f) | (q[j + 16] << 4));
    high |= static_cast<uint32_t>(q[j] >> 4) << j | static_cast<uint32_t>(q[j + 16] >> 4) << (j + 16);
  }
  for (int b = 0; b < 4; ++b) qh[b] = static_cast<uint8_t>(high >> (8 * b));
}

uint32_t load_qh(const uint8_t* qh) {
  return static_cast<uint32_t>(qh[0]) | static_cast<uint32_t>(qh[1]) << 8 | static_cast<uint32_t>(qh[2]) << 16 |
         static_cast<uint32_t>(qh[3]) << 24;
}

// Q8_0's levels of 32 values: q = round(x * id), id = 1 / d; returns d = max|x| / 127 (unrounded)
float q8_0_levels(const float* x, int8_t* q) {
  float amax = 0.0f;
  for (int j = 0; j < kQK8_0; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < kQK8_0; ++j) q[j] = static_cast<int8_t>(std::roundf(x[j] * id));
  return d;
}

// Q8_0 and Q8_1: x = d q
template <class Block>
void dequantize_8bit(const void* blocks, float* y, int64_t nb) {
  const auto* x = static_cast<const Block*>(blocks);
  for (int64_t b = 0; b < nb; ++b, y += kQK8_0) {
    const float d = f16_bits_to_float(x[b].d);
    for (int j = 0; j < kQK8_0; ++j) y[j] = static_cast<float>(x[b].qs[j]) * d;
  }
}

}  // namespace

void quantize_q8_0(const float* x, void* blocks, int64_t nb) {
  auto* y = static_cast<BlockQ8_0*>(blocks);
  for (int64_t b = 0; b < nb; ++b, x += kQK8_0) y[b].d = float_to_f16_bits(q8_0_levels(x, y[b].qs));
}

void dequantize_q8_0(const void* blocks, float* y, int64_t nb) { dequantize_8bit<BlockQ8_0>(blocks, y, nb); }

void quantize_q8_1(const float* x, void* blocks, int64_t nb) {
  auto* y = static_cast<BlockQ8_1*>(blocks);
  for (int64_t b = 0; b < nb; ++b, x += kQK8_0) {
    const float d = q8_0_levels(x, y[b].qs);
    int sum = 0;
    for (int j = 0; j < kQK8_0; ++j) sum += y[b].qs[j];
    y[b].d = float_to_f16_bits(d);
    y[b].s = float_to_f16_bits(static_cast<float>(sum) * d);
  }
}

void dequantize_q8_1(const void* blocks, float* y, int64_t nb) { dequantize_8bit<BlockQ8_1>(blocks, y, nb); }

void quantize_q4_0(const float* x, void* blocks, int64_t nb) {
  auto* y = static_cast<BlockQ4_0*>(blocks);
  for (int64_t b = 0; b < nb; ++b, x += kQK4_0) {
    const float d = signed_absmax(x, kQK4_0) / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = float_to_f16_bits(d);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      const uint8_t q0 = trunc_clamped(x[j] * id + 8.5f, 15);
      const uint8_t q1 = trunc_clamped(x[j + kQK4_0 / 2] * id + 8.5f, 15);
      y[b].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void dequantize_q4_0(const void* blocks, float* y, int64_t nb) {
  const auto* x = static_cast<const BlockQ4_0*>(blocks);
  for (int64_t b = 0; b < nb; ++b, y += kQK4_0) {
    const float d = f16_bits_to_float(x[b].d);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      y[j] = d * static_cast<float>((x[b].qs[j] & 0x0f) - 8);
      y[j + kQK4_0 / 2] = d * static_cast<float>((x[b].qs[j] >> 4) - 8);
    }
  }
}

void quantize_q4_1(const float* x, void* blocks, int64_t nb) {
  auto* y = static_cast<BlockQ4_1*>(blocks);
  for (int64_t b = 0; b < nb; ++b, x += kQK4_1) {
    const auto [lo, hi] = std::minmax_element(x, x + kQK4_1);
    const float min = *lo, d = (*hi - min) / 15.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = float_to_f16_bits(d);
    y[b].m = float_to_f16_bits(min);
    for (int j = 0; j < kQK4_1 / 2; ++j) {
      const uint8_t q0 = trunc_clamped((x[j] - min) * id + 0.5f, 15);
      const uint8_t q1 = trunc_clamped((x[j + kQK4_1 / 2] - min) * id + 0.5f, 15);
      y[b].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void dequantize_q4_1(const void* blocks, float* y, int64_t nb) {
  const auto* x = static_cast<const BlockQ4_1*>(blocks);
  for (int64_t b = 0; b < nb; ++b, y += kQK4_1) {
    const float d = f16_bits_to_float(x[b].d), m = f16_bits_to_float(x[b].m);
    for (int j = 0; j < kQK4_1 / 2; ++j) {
      y[j] = d * static_cast<float>(x[b].qs[j] & 0x0f) + m;
      y[j + kQK4_1 / 2] = d * static_cast<float>(x[b].qs[j] >> 4) + m;
    }
  }
}

void quantize_q5_0(const float* x, void* blocks, int64_t nb) {
  auto* y = static_cast<BlockQ5_0*>(blocks);
  for (int64_t b = 0; b < nb; ++b, x += kQK5_0) {
    const float d = signed_absmax(x, kQK5_0) / -16.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = float_to_f16_bits(d);
    uint8_t q[kQK5_0];
    for (int j = 0; j < kQK5_0; ++j) q[j] = trunc_clamped(x[j] * id + 16.5f, 31);
    pack_5bit(q, y[b].qs, y[b].qh);
  }
}

void dequantize_q5_0(const void* blocks, float* y, int64_t nb) {
  const auto* x = static_cast<const BlockQ5_0*>(blocks);
  for (int64_t b = 0; b < nb; ++b, y += kQK5_0) {
    const float d = f16_bits_to_float(x[b].d);
    const uint32_t qh = load_qh(x[b].qh);
    for (int j = 0; j < kQK5_0 / 2; ++j) {
      const int q0 = (x[b].qs[j] & 0x0f) | static_cast<int>((qh >> j) & 1) << 4;
      const int q1 = (x[b].qs[j] >> 4) | static_cast<int>((qh >> (j + 16)) & 1) << 4;
      y[j] = d * static_cast<float>(q0 - 16);
      y[j + kQK5_0 / 2] = d * static_cast<float>(q1 - 16);
    }
  }
}

void quantize_q5_1(const float* x, void* blocks, int64_t nb) {
  auto* y = static_cast<BlockQ5_1*>(blocks);
  for (int64_t b = 0; b < nb; ++b, x += kQK5_1) {
    const auto [lo, hi] = std::minmax_element(x, x + kQK5_1);
    const float min = *lo, d = (*hi - min) / 31.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = float_to_f16_bits(d);
    y[b].m = float_to_f16_bits(min);
    uint8_t q[kQK5_1];
    for (int j = 0; j < kQK5_1; ++j) q[j] = trunc_clamped((x[j] - min) * id + 0.5f, 31);
    pack_5bit(q, y[b].qs, y[b].qh);
  }
}

void dequantize_q5_1(const void* blocks, float* y, int64_t nb) {
  const auto* x = static_cast<const BlockQ5_1*>(blocks);
  for (int64_t b = 0; b < nb; ++b, y += kQK5_1) {
    const float d = f16_bits_to_float(x[b].d), m = f16_bits_to_float(x[b].m);
    const uint32_t qh = load_qh(x[b].qh);
    for (int j = 0; j < kQK5_1 / 2; ++j) {
      const int q0 = (x[b].qs[j] & 0x0f) | static_cast<int>((qh >> j) & 1) << 4;
      const int q1 = (x[b].qs[j] >> 4) | static_cast<int>((qh >> (j + 16)) & 1) << 4;
      y[j] = d * static_cast<float>(q0) + m;
      y[j + kQK5_1 / 2] = d * static_cast<float>(q1) + m;
    }
  }
}

// ---- super-blocks of 256: llama.cpp's reference quantisers ------------------------------------

namespace {

// Rounds to the nearest integer, ties to even, as llama.cpp's nearest_int: adding 1.5 * 2^23 leaves
// the rounded value in the low 22 mantissa bits (exact for |v| < 2^22; beyond, the same bits as it).
int nearest_int(float v) {
  const uint32_t bits = std::bit_cast<uint32_t>(v + 12582912.0f);
  return static_cast<int>(bits & 0x007fffffu) - 0x00400000;
}

// One sub-block of n values -> its levels L in [0, nmax] with x ~ scale * L - the_min (the_min >= 0):
// weighted least squares over the grid of inverse scales (rmin + rdelta * is + nmax) / (max - min),
// is = 0..nstep, starting from the plain min/max fit (llama.cpp's make_qkx2_quants, squared error).
float fit_scale_and_min(int n, int nmax, const float* x, const float* w, uint8_t* L, float* the_min, float rmin,
                        float rdelta, int nstep) {
  float min = x[0], max = x[0];
  float sum_w = w[0], sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    min = x[i] < min ? x[i] : min;
    max = x[i] > max ? x[i] : max;
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    std::fill(L, L + n, uint8_t{0});
    *the_min = -min;
    return 0.0f;
  }
  float iscale = static_cast<float>(nmax) / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    L[i] = static_cast<uint8_t>(std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax));
    const float diff = scale * static_cast<float>(L[i]) + min - x[i];
    best_error += w[i] * (diff * diff);
  }
  uint8_t candidate[32];
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax);
      candidate[i] = static_cast<uint8_t>(l);
      const float wl = w[i] * static_cast<float>(l);
      sum_l += wl;
      sum_l2 += wl * static_cast<float>(l);
      sum_xl += wl * x[i];
    }
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (!(det > 0)) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (this_min > 0) {
      this_min = 0;
      this_scale = sum_xl / sum_l2;
    }
    float error = 0;
    for (int i = 0; i < n; ++i) {
      const float diff = this_scale * static_cast<float>(candidate[i]) + this_min - x[i];
      error += w[i] * (diff * diff);
    }
    if (error < best_error) {
      std::copy(candidate, candidate + n, L);
      best_error = error;
      scale = this_scale;
      min = this_min;
    }
  }
  *the_min = -min;
  return scale;
}

// Sub-block j's 6-bit scale and min from Q4_K's 12 packed bytes.
void q4_k_scale_min(int j, const uint8_t* packed, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = packed[j] & 63;
    *m = packed[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((packed[j + 4] & 0x0f) | ((packed[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((packed[j + 4] >> 4) | ((packed[j] >> 6) << 4));
  }
}

}  // namespace

void quantize_q4_k(const float* x, void* blocks, int64_t nb) {
  auto* y = static_cast<BlockQ4_K*>(blocks);
  constexpr int kSub = 32, kSubs = kQK_K / kSub;
  for (int64_t b = 0; b < nb; ++b, x += kQK_K) {
    uint8_t L[kQK_K];
    float scales[kSubs], mins[kSubs], weights[kSub];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < kSubs; ++j) {
      const float* xs = x + kSub * j;
      float sum_x2 = 0;
      for (int l = 0; l < kSub; ++l) sum_x2 += xs[l] * xs[l];
      const float av_x = std::sqrt(sum_x2 / kSub);
      for (int l = 0; l < kSub; ++l) weights[l] = av_x + std::fabs(xs[l]);
      scales[j] = fit_scale_and_min(kSub, 15, xs, weights, L + kSub * j, &mins[j], -1.0f, 0.1f, 20);
      max_scale = std::max(max_scale, scales[j]);
      max_min = std::max(max_min, mins[j]);
    }
    const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
    const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
    for (int j = 0; j < kSubs; ++j) {
      const uint8_t ls = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_scale * scales[j])));
      const uint8_t lm = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_min * mins[j])));
      if (j < 4) {
        y[b].scales[j] = ls;
        y[b].scales[j + 4] = lm;
      } else {
        y[b].scales[j + 4] = static_cast<uint8_t>((ls & 0x0f) | ((lm & 0x0f) << 4));
        y[b].scales[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
        y[b].scales[j] |= static_cast<uint8_t>((lm >> 4) << 6);
      }
    }
    y[b].d = float_to_f16_bits(max_scale / 63.0f);
    y[b].dmin = float_to_f16_bits(max_min / 63.0f);
    // the levels again against the rounded scales (a sub-block whose scale rounds to 0 keeps its fit)
    for (int j = 0; j < kSubs; ++j) {
      uint8_t sc, m;
      q4_k_scale_min(j, y[b].scales, &sc, &m);
      const float d = f16_bits_to_float(y[b].d) * static_cast<float>(sc);
      if (d == 0.0f) continue;
      const float dm = f16_bits_to_float(y[b].dmin) * static_cast<float>(m);
      for (int l = 0; l < kSub; ++l)
        L[kSub * j + l] = static_cast<uint8_t>(std::clamp(nearest_int((x[kSub * j + l] + dm) / d), 0, 15));
    }
    for (int g = 0; g < kQK_K / 64; ++g)
      for (int l = 0; l < 32; ++l)
        y[b].qs[32 * g + l] = static_cast<uint8_t>(L[64 * g + l] | (L[64 * g + l + 32] << 4));
  }
}

void dequantize_q4_k(const void* blocks, float* y, int64_t nb) {
  const auto* x = static_cast<const BlockQ4_K*>(blocks);
  for (int64_t b = 0; b < nb; ++b) {
    const float d = f16_bits_to_float(x[b].d), dmin = f16_bits_to_float(x[b].dmin);
    for (int j = 0; j < kQK_K / 32; ++j, y += 32) {
      uint8_t sc, m;
      q4_k_scale_min(j, x[b].scales, &sc, &m);
      const float dj = d * static_cast<float>(sc), mj = dmin * static_cast<float>(m);
      const uint8_t* q = x[b].qs + 32 * (j / 2);
      const int shift = 4 * (j % 2);
      for (int l = 0; l < 32; ++l) y[l] = dj * static_cast<float>((q[l] >> shift) & 0x0f) - mj;
    }
  }
}

namespace {

constexpr float kGroupMaxEps = 1e-15f;  // llama.cpp's GROUP_MAX_EPS: a group below it is all zeros

// One group of 16 -> levels L in [0, 63] (q + 32, q in [-32, 31]) and the scale with x ~ scale * q:
// weights x^2, and the best of the inverse scales -(32 + 0.1 is) / max, is = -9..9
// (llama.cpp's make_qx_quants with rmse_type 1).
float fit_symmetric_scale(const float* x, int8_t* L) {
  constexpr int n = 16, nmax = 32;
  const float max = signed_absmax(x, n);
  if (std::fabs(max) < kGroupMaxEps) {
    std::fill(L, L + n, int8_t{0});
    return 0.0f;
  }
  const auto level = [&](float iscale, int i) { return std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1); };
  const auto sums = [&](float iscale, float* sumlx, float* suml2) {
    *sumlx = *suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const float l = static_cast<float>(level(iscale, i)), w = x[i] * x[i];
      *sumlx += w * x[i] * l;
      *suml2 += w * l * l;
    }
  };
  float iscale = -static_cast<float>(nmax) / max;
  for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(level(iscale, i) + nmax);
  float sumlx, suml2;
  sums(iscale, &sumlx, &suml2);
  float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
    sums(iscale, &sumlx, &suml2);
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(level(iscale, i) + nmax);
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

}  // namespace

void quantize_q6_k(const float* x, void* blocks, int64_t nb) {
  auto* y = static_cast<BlockQ6_K*>(blocks);
  constexpr int kGroups = kQK_K / 16;
  for (int64_t b = 0; b < nb; ++b, x += kQK_K) {
    int8_t L[kQK_K];
    float scales[kGroups];
    float max_scale = 0, max_abs_scale = 0;  // the scale of largest magnitude, with its sign
    for (int g = 0; g < kGroups; ++g) {
      scales[g] = fit_symmetric_scale(x + 16 * g, L + 16 * g);
      if (std::fabs(scales[g]) > max_abs_scale) max_abs_scale = std::fabs(scales[g]), max_scale = scales[g];
    }
    if (max_abs_scale < kGroupMaxEps) {
      std::memset(&y[b], 0, sizeof(BlockQ6_K));
      continue;
    }
    const float iscale = -128.0f / max_scale;
    y[b].d = float_to_f16_bits(1 / iscale);
    for (int g = 0; g < kGroups; ++g)
      y[b].scales[g] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[g])));
    // the levels again against the rounded scales (a group whose scale rounds to 0 keeps its fit)
    for (int g = 0; g < kGroups; ++g) {
      const float d = f16_bits_to_float(y[b].d) * static_cast<float>(y[b].scales[g]);
      if (d == 0.0f) continue;
      for (int i = 0; i < 16; ++i)
        L[16 * g + i] = static_cast<int8_t>(std::clamp(nearest_int(x[16 * g + i] / d), -32, 31) + 32);
    }
    for (int half = 0; half < 2; ++half) {
      const int8_t* q = L + 128 * half;
      uint8_t* ql = y[b].ql + 64 * half;
      uint8_t* qh = y[b].qh + 32 * half;
      for (int l = 0; l < 32; ++l) {
        ql[l] = static_cast<uint8_t>((q[l] & 0x0f) | ((q[l + 64] & 0x0f) << 4));
        ql[l + 32] = static_cast<uint8_t>((q[l + 32] & 0x0f) | ((q[l + 96] & 0x0f) << 4));
        qh[l] = static_cast<uint8_t>((q[l] >> 4) | ((q[l + 32] >> 4) << 2) | ((q[l + 64] >> 4) << 4) |
                                     ((q[l + 96] >> 4) << 6));
      }
    }
  }
}

void dequantize_q6_k(const void* blocks, float* y, int64_t nb) {
  const auto* x = static_cast<const BlockQ6_K*>(blocks);
  for (int64_t b = 0; b < nb; ++b, y += kQK_K) {
    const float d = f16_bits_to_float(x[b].d);
    for (int i = 0; i < kQK_K; ++i) {
      // value i: half h = i / 128, quarter k = (i % 128) / 32, lane l = i % 32
      const int h = i / 128, k = (i % 128) / 32, l = i % 32;
      const int low = (x[b].ql[64 * h + 32 * (k % 2) + l] >> (4 * (k / 2))) & 0x0f;
      const int high = (x[b].qh[32 * h + l] >> (2 * k)) & 3;
      y[i] = d * static_cast<float>(x[b].scales[i / 16]) * static_cast<float>((low | high << 4) - 32);
    }
  }
}

void quantize_q8_k(const float* x, void* blocks, int64_t nb) {
  auto* y = static_cast<BlockQ8_K*>(blocks);
  for (int64_t b = 0; b < nb; ++b, x += kQK_K) {
    const float max = signed_absmax(x, kQK_K);
    if (max == 0.0f) {
      std::memset(&y[b], 0, sizeof(BlockQ8_K));
      continue;
    }
    const float iscale = -127.0f / max;
    for (int j = 0; j < kQK_K; ++j) y[b].qs[j] = static_cast<int8_t>(std::min(127, nearest_int(iscale * x[j])));
    for (int g = 0; g < kQK_K / 16; ++g) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += y[b].qs[16 * g + i];
      y[b].bsums[g] = static_cast<int16_t>(sum);
    }
    y[b].d = 1 / iscale;
  }
}

void dequantize_q8_k(const void* blocks, float* y, int64_t nb) {
  const auto* x = static_cast<const BlockQ8_K*>(blocks);
  for (int64_t b = 0; b < nb; ++b, y += kQK_K)
    for (int j = 0; j < kQK_K; ++j) y[j] = x[b].d * static_cast<float>(x[b].qs[j]);
}

// ---- the float types: one value a block -------------------------------------------------------

void quantize_f32(const float* x, void* blocks, int64_t nb) { std::memcpy(blocks, x, static_cast<size_t>(nb) * 4); }
void dequantize_f32(const void* blocks, float* y, int64_t nb) { std::memcpy(y, blocks, static_cast<size_t>(nb) * 4); }
void quantize_f64(const float* x, void* blocks, int64_t nb) { std::copy_n(x, nb, static_cast<double*>(blocks)); }
void dequantize_f64(const void* blocks, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) y[i] = static_cast<float>(static_cast<const double*>(blocks)[i]);
}
void quantize_f16(const float* x, void* blocks, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) static_cast<uint16_t*>(blocks)[i] = float_to_f16_bits(x[i]);
}
void dequantize_f16(const void* blocks, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) y[i] = f16_bits_to_float(static_cast<const uint16_t*>(blocks)[i]);
}
void quantize_bf16(const float* x, void* blocks, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) static_cast<uint16_t*>(blocks)[i] = float_to_bf16_bits(x[i]);
}
void dequantize_bf16(const void* blocks, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) y[i] = bf16_bits_to_float(static_cast<const uint16_t*>(blocks)[i]);
}

// ---- by type: the traits table's kernels ------------------------------------------------------

namespace {

// n values of `type` as whole blocks: their count
int64_t blocks_of(const QuantTypeTraits& traits, int64_t n, const char* what) {
  const QuantTypeInfo& info = traits.info();
  NF_CHECK(n % info.block_size == 0, what, ": ", n, " values are not whole blocks of ", info.name);
  return n / info.block_size;
}

}  // namespace

void quantize_row(QuantType type, const float* x, void* blocks, int64_t n) {
  const QuantTypeTraits& traits = quant_traits(type);
  traits.quantize(x, blocks, blocks_of(traits, n, "quantize"));
}

void dequantize_row(QuantType type, const void* blocks, float* y, int64_t n) {
  const QuantTypeTraits& traits = quant_traits(type);
  traits.dequantize(blocks, y, blocks_of(traits, n, "dequantize"));
}

// the loops of ops/quantized.cpp, threaded over rows when the work is large enough
void quantize_rows(QuantizedTensor& out, const Tensor& weight) {
  const QuantTypeTraits& traits = quant_traits(out.type());
  const int64_t rows = out.rows(), cols = out.cols(), nb = blocks_of(traits, cols, "quantize");
  const float* src = weight.data<float>();
  auto* dst = static_cast<unsigned char*>(out.mutable_data());
  const size_t row_bytes = out.row_bytes();
#pragma omp parallel for schedule(static) if (rows * cols > 65536)
  for (int64_t r = 0; r < rows; ++r) traits.quantize(src + r * cols, dst + row_bytes * r, nb);
}

void dequantize_rows(const Tensor& out, const QuantizedTensor& w, int64_t begin, int64_t end) {
  const QuantTypeTraits& traits = quant_traits(w.type());
  const int64_t cols = w.cols(), nb = blocks_of(traits, cols, "dequantize");
  float* dst = out.data<float>();
#pragma omp parallel for schedule(static) if ((end - begin) * cols > 65536)
  for (int64_t r = begin; r < end; ++r) traits.dequantize(w.row(r), dst + (r - begin) * cols, nb);
}

void gather_rows(const Tensor& out, const QuantizedTensor& w, const int64_t* ids, int64_t n) {
  const QuantTypeTraits& traits = quant_traits(w.type());
  const int64_t cols = w.cols(), nb = blocks_of(traits, cols, "dequantize");
  float* dst = out.data<float>();
  for (int64_t i = 0; i < n; ++i) traits.dequantize(w.row(ids[i]), dst + i * cols, nb);
}

}  // namespace nf::cpu
