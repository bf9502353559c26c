// Reference quantising and dequantising of the super-blocks of 256 (Q3_K, Q4_K, Q5_K, Q6_K, Q8_K):
// bit-identical to llama.cpp's quantize_row_*_ref (ggml/src/ggml-quants.c of llama.cpp 0c1e570; what
// llama-quantize runs without an importance matrix) and to gguf.quants' dequantisers. f32 arithmetic in
// the reference's order, compiled with -ffp-contract=off (CMakeLists.txt). Formulas: quant_blocks.h.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "nanoformer/core/dtype.h"
#include "ops/cpu/quant/k_blocks.h"
#include "ops/cpu/quant/quant_blocks.h"
#include "ops/cpu/quant/quant_math.h"
#include "ops/cpu/quant/type_kernels.h"

namespace nf::cpu {
namespace {

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

namespace {

// Q4_K's and Q5_K's common part: one super-block's 8 sub-blocks of 32 fitted to levels in [0, nmax]
// (weights sqrt(mean x^2) + |x|; trial inverse scales from rmin in 0.1 steps, nstep of them), their
// scales and mins as 6-bit multiples of d and dmin (packed into `scales`), and the levels L again
// against the rounded scales (a sub-block whose scale rounds to 0 keeps its fit).
void fit_scales_and_mins(const float* x, int nmax, float rmin, int nstep, uint8_t* packed, uint16_t* d_bits,
                         uint16_t* dmin_bits, uint8_t* L) {
  constexpr int kSub = 32, kSubs = kQK_K / kSub;
  float scales[kSubs], mins[kSubs], weights[kSub];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < kSubs; ++j) {
    const float* xs = x + kSub * j;
    float sum_x2 = 0;
    for (int l = 0; l < kSub; ++l) sum_x2 += xs[l] * xs[l];
    const float av_x = std::sqrt(sum_x2 / kSub);
    for (int l = 0; l < kSub; ++l) weights[l] = av_x + std::fabs(xs[l]);
    scales[j] = fit_scale_and_min(kSub, nmax, xs, weights, L + kSub * j, &mins[j], rmin, 0.1f, nstep);
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
  for (int j = 0; j < kSubs; ++j) {
    const uint8_t ls = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_scale * scales[j])));
    const uint8_t lm = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_min * mins[j])));
    if (j < 4) {
      packed[j] = ls;
      packed[j + 4] = lm;
    } else {
      packed[j + 4] = static_cast<uint8_t>((ls & 0x0f) | ((lm & 0x0f) << 4));
      packed[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
      packed[j] |= static_cast<uint8_t>((lm >> 4) << 6);
    }
  }
  *d_bits = float_to_f16_bits(max_scale / 63.0f);
  *dmin_bits = float_to_f16_bits(max_min / 63.0f);
  for (int j = 0; j < kSubs; ++j) {
    uint8_t sc, m;
    q4_k_scale_min(j, packed, &sc, &m);
    const float d = f16_bits_to_float(*d_bits) * static_cast<float>(sc);
    if (d == 0.0f) continue;
    const float dm = f16_bits_to_float(*dmin_bits) * static_cast<float>(m);
    for (int l = 0; l < kSub; ++l)
      L[kSub * j + l] = static_cast<uint8_t>(std::clamp(nearest_int((x[kSub * j + l] + dm) / d), 0, nmax));
  }
}

}  // namespace

void quantize_q4_k(const float* x, void* blocks, int64_t nb) {
  auto* y = static_cast<BlockQ4_K*>(blocks);
  for (int64_t b = 0; b < nb; ++b, x += kQK_K) {
    uint8_t L[kQK_K];
    fit_scales_and_mins(x, 15, -1.0f, 20, y[b].scales, &y[b].d, &y[b].dmin, L);
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

void quantize_q5_k(const float* x, void* blocks, int64_t nb) {
  auto* y = static_cast<BlockQ5_K*>(blocks);
  for (int64_t b = 0; b < nb; ++b, x += kQK_K) {
    uint8_t L[kQK_K];
    fit_scales_and_mins(x, 31, -0.5f, 15, y[b].scales, &y[b].d, &y[b].dmin, L);
    std::memset(y[b].qh, 0, sizeof(y[b].qh));
    for (int g = 0; g < kQK_K / 64; ++g)
      for (int l = 0; l < 32; ++l) {
        const uint8_t lo = L[64 * g + l], hi = L[64 * g + l + 32];
        y[b].qs[32 * g + l] = static_cast<uint8_t>((lo & 0x0f) | ((hi & 0x0f) << 4));
        y[b].qh[l] |= static_cast<uint8_t>((lo >> 4) << (2 * g) | (hi >> 4) << (2 * g + 1));
      }
  }
}

void dequantize_q5_k(const void* blocks, float* y, int64_t nb) {
  const auto* x = static_cast<const BlockQ5_K*>(blocks);
  for (int64_t b = 0; b < nb; ++b) {
    const float d = f16_bits_to_float(x[b].d), dmin = f16_bits_to_float(x[b].dmin);
    uint8_t u[kQK_K];
    q5_k_values(x[b], u);
    for (int j = 0; j < kQK_K / 32; ++j, y += 32) {
      uint8_t sc, m;
      q4_k_scale_min(j, x[b].scales, &sc, &m);
      const float dj = d * static_cast<float>(sc), mj = dmin * static_cast<float>(m);
      for (int l = 0; l < 32; ++l) y[l] = dj * static_cast<float>(u[32 * j + l]) - mj;
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

namespace {

// One group of 16 -> levels L in [0, 7] (q + 4) and the scale with x ~ scale * q, q in [-4, 3]
// (llama.cpp's make_q3_quants with do_rmse): q = clamp(nearest(-4 x / max)), then up to 5 sweeps
// that move one level to nearest(x sum(w l^2) / sum(w x l)) (the sums without it) whenever
// sum(w x l)^2 / sum(w l^2) grows, w = x^2; scale = sum(w x l) / sum(w l^2). A group below
// kGroupMaxEps: levels 0 (not 4, as the reference leaves them) and scale 0.
float fit_q3_scale(const float* x, int8_t* L) {
  constexpr int n = 16, nmax = 4;
  const float max = signed_absmax(x, n);
  if (std::fabs(max) < kGroupMaxEps) {
    std::fill(L, L + n, int8_t{0});
    return 0.0f;
  }
  const float iscale = -static_cast<float>(nmax) / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
    L[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * static_cast<float>(l);
    suml2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  for (int sweep = 0; sweep < 5; ++sweep) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i], li = static_cast<float>(L[i]);
      float slx = sumlx - w * x[i] * li;
      if (!(slx > 0)) continue;
      float sl2 = suml2 - w * li * li;
      const int l = std::clamp(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
      if (l == L[i]) continue;
      const float lf = static_cast<float>(l);
      slx += w * x[i] * lf;
      sl2 += w * lf * lf;
      if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
        L[i] = static_cast<int8_t>(l);
        sumlx = slx;
        suml2 = sl2;
        ++changed;
      }
    }
    if (changed == 0) break;
  }
  for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + nmax);
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

}  // namespace

void quantize_q3_k(const float* x, void* blocks, int64_t nb) {
  auto* y = static_cast<BlockQ3_K*>(blocks);
  constexpr int kGroups = kQK_K / 16;
  for (int64_t b = 0; b < nb; ++b, x += kQK_K) {
    int8_t L[kQK_K];
    float scales[kGroups];
    float max_scale = 0, max_abs_scale = 0;  // the scale of largest magnitude, with its sign
    for (int g = 0; g < kGroups; ++g) {
      scales[g] = fit_q3_scale(x + 16 * g, L + 16 * g);
      if (std::fabs(scales[g]) > max_abs_scale) max_abs_scale = std::fabs(scales[g]), max_scale = scales[g];
    }
    std::memset(y[b].scales, 0, sizeof(y[b].scales));
    if (max_scale != 0.0f) {
      const float iscale = -32.0f / max_scale;
      for (int g = 0; g < kGroups; ++g) {
        // the reference keeps nearest_int's result in an int8_t before clamping (|iscale * s| <= 32 here)
        const int l = std::clamp<int>(static_cast<int8_t>(nearest_int(iscale * scales[g])), -32, 31) + 32;
        if (g < 8) y[b].scales[g] = static_cast<uint8_t>(l & 0x0f);
        else y[b].scales[g - 8] |= static_cast<uint8_t>((l & 0x0f) << 4);
        y[b].scales[8 + g % 4] |= static_cast<uint8_t>((l >> 4) << (2 * (g / 4)));
      }
      y[b].d = float_to_f16_bits(1 / iscale);
    } else {
      y[b].d = float_to_f16_bits(0.0f);
    }
    // the levels again against the rounded scales (a group whose scale rounds to 0 keeps its fit)
    int8_t sc[kGroups];
    q3_k_scales(y[b].scales, sc);
    for (int g = 0; g < kGroups; ++g) {
      const float d = f16_bits_to_float(y[b].d) * static_cast<float>(sc[g]);
      if (d == 0.0f) continue;
      for (int i = 0; i < 16; ++i)
        L[16 * g + i] = static_cast<int8_t>(std::clamp(nearest_int(x[16 * g + i] / d), -4, 3) + 4);
    }
    // the third bit of value i in bit i / 32 of hmask[i % 32]; the low 2 bits of 128h + 32k + l at
    // 2k of qs[32h + l]
    std::memset(y[b].hmask, 0, sizeof(y[b].hmask));
    for (int i = 0; i < kQK_K; ++i)
      if (L[i] > 3) {
        y[b].hmask[i % 32] |= static_cast<uint8_t>(1 << (i / 32));
        L[i] = static_cast<int8_t>(L[i] - 4);
      }
    for (int h = 0; h < 2; ++h)
      for (int l = 0; l < 32; ++l) {
        const int8_t* q = L + 128 * h + l;
        y[b].qs[32 * h + l] = static_cast<uint8_t>(q[0] | (q[32] << 2) | (q[64] << 4) | (q[96] << 6));
      }
  }
}

void dequantize_q3_k(const void* blocks, float* y, int64_t nb) {
  const auto* x = static_cast<const BlockQ3_K*>(blocks);
  for (int64_t b = 0; b < nb; ++b, y += kQK_K) {
    const float d = f16_bits_to_float(x[b].d);
    int8_t sc[16];
    uint8_t u[kQK_K];
    q3_k_scales(x[b].scales, sc);
    q3_k_values(x[b], u);
    for (int i = 0; i < kQK_K; ++i) y[i] = (d * static_cast<float>(sc[i / 16])) * static_cast<float>(u[i] - 4);
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

}  // namespace nf::cpu
