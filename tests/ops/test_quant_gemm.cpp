// The prefill product over quantised weights (ops/cpu/quant/quant_gemm.h) against the blockwise formula
// in f64, y[i, j] = sum_b d_x (d_w sum_t q_x a_t + m_w sum_t q_x c_t) with each type's integers a_t,
// c_t and scales decoded here from quant_blocks.h's layouts (Q4_1 / Q5_1: a = q, c = 1, m_w = m;
// Q4_K: a = sc_j q, c = mn_j, m_w = -dmin; Q6_K: a = sc_j (q - 32), c = 0), within the rounding of
// its f32 sum, for every type the GEMM takes, at shapes that are not multiples of the kernel's
// tiles, at the extreme integers of each type (where an i16 partial sum would overflow or
// saturate), on AVX2 and each VNNI form the CPU has, across thread counts, into a strided y; every
// VNNI form against AVX2 bit for bit; and
// prefill's rows against decode's product of each row alone.
#include <array>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <random>

#include "nanoformer/core/parallel.h"
#include "nanoformer/ops/quantized.h"
#include "ops/cpu/quant/activation_quant.h"
#include "ops/cpu/quant/quant_gemm.h"
#include "ops/cpu/quant/quant_gemv.h"
#include "ops/cpu/quant/quant_rows.h"
#include "ops/cpu/quant/type_traits.h"
#include "support/int8_isas.h"
#include "support/quant_weights.h"
#include "support/testing.h"
#include "support/threads.h"

namespace nf {
namespace {

using cpu::BlockQ4_0;
using cpu::BlockQ4_1;
using cpu::BlockQ4_K;
using cpu::BlockQ5_0;
using cpu::BlockQ5_1;
using cpu::BlockQ6_K;
using cpu::BlockQ5_K;
using cpu::BlockQ3_K;
using cpu::BlockQ8_0;
using cpu::BlockQ8_K;

std::vector<float> normal_values(int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> v(static_cast<size_t>(count));
  for (float& x : v) x = normal(rng);
  return v;
}

// m rows of k values quantised as the activations of `wtype` are: Q8_0 or Q8_K blocks of B values
// (B = activation_block), by the reference quantize_row
struct QuantizedX {
  int64_t block = 32, nb = 0;  // nb: blocks per row
  std::vector<BlockQ8_0> q8_0;
  std::vector<BlockQ8_K> q8_k;
  const void* data() const { return block == 32 ? static_cast<const void*>(q8_0.data()) : q8_k.data(); }
  double d(int64_t i, int64_t b) const {
    return block == 32 ? f16_bits_to_float(q8_0[static_cast<size_t>(i * nb + b)].d) : q8_k[static_cast<size_t>(i * nb + b)].d;
  }
  const int8_t* q(int64_t i, int64_t b) const {
    return block == 32 ? q8_0[static_cast<size_t>(i * nb + b)].qs : q8_k[static_cast<size_t>(i * nb + b)].qs;
  }
};

QuantizedX quantized_x(QuantType wtype, const std::vector<float>& values, int64_t m, int64_t k) {
  QuantizedX x;
  x.block = cpu::activation_block(wtype), x.nb = k / x.block;
  if (x.block == 32) x.q8_0.resize(static_cast<size_t>(m * x.nb));
  else x.q8_k.resize(static_cast<size_t>(m * x.nb));
  for (int64_t r = 0; r < m; ++r) {
    void* row = x.block == 32 ? static_cast<void*>(x.q8_0.data() + r * x.nb) : x.q8_k.data() + r * x.nb;
    cpu::quantize_row(x.block == 32 ? QuantType::q8_0 : QuantType::q8_k, values.data() + r * k, row, k);
  }
  return x;
}

// the byte offsets of a block's f16 scales: d, and m or dmin
std::vector<size_t> scale_offsets(QuantType type) {
  switch (type) {
    case QuantType::q4_1:
    case QuantType::q5_1:
    case QuantType::q4_k:
    case QuantType::q5_k: return {0, 2};
    case QuantType::q6_k: return {offsetof(BlockQ6_K, d)};
    case QuantType::q3_k: return {offsetof(BlockQ3_K, d)};
    default: return {0};
  }
}

// n rows of k values of `type` with random integers (every bit pattern a file may hold) and
// scales (and mins) of a trained layer's size
std::vector<uint8_t> random_weights(QuantType type, int64_t n, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> w(quant_row_bytes(type, k) * static_cast<size_t>(n));
  for (uint8_t& byte : w) byte = static_cast<uint8_t>(rng());
  std::normal_distribution<float> scale(0.0f, 0.01f);
  const size_t block_bytes = static_cast<size_t>(quant_type_info(type).block_bytes);
  for (size_t at = 0; at < w.size(); at += block_bytes)
    for (size_t offset : scale_offsets(type)) {
      const uint16_t h = float_to_f16_bits(scale(rng));
      std::memcpy(&w[at + offset], &h, 2);
    }
  return w;
}

// A weight block of B values as value t = d a_t + m c_t (integers a_t, c_t), read as quant_blocks.h
// lays the blocks out.
struct WeightBlock {
  double d = 0, m = 0;
  std::vector<int> a, c;
};
WeightBlock weight_block(QuantType type, const uint8_t* row, int64_t b) {
  WeightBlock out;
  const auto nibbles = [&](const uint8_t* qs, int offset) {
    for (int t = 0; t < 32; ++t) out.a.push_back((t < 16 ? qs[t] & 0x0f : qs[t - 16] >> 4) - offset);
  };
  const auto fifth_bits = [&](const uint8_t* qh_bytes) {
    const uint32_t qh = qh_bytes[0] | qh_bytes[1] << 8 | qh_bytes[2] << 16 | static_cast<uint32_t>(qh_bytes[3]) << 24;
    for (int t = 0; t < 32; ++t) out.a[static_cast<size_t>(t)] += static_cast<int>(qh >> t & 1) << 4;
  };
  switch (type) {
    case QuantType::q8_0: {
      const auto& block = reinterpret_cast<const BlockQ8_0*>(row)[b];
      out.d = f16_bits_to_float(block.d);
      for (int t = 0; t < 32; ++t) out.a.push_back(block.qs[t]);
      break;
    }
    case QuantType::q4_0: {
      const auto& block = reinterpret_cast<const BlockQ4_0*>(row)[b];
      out.d = f16_bits_to_float(block.d);
      nibbles(block.qs, 8);
      break;
    }
    case QuantType::q4_1: {
      const auto& block = reinterpret_cast<const BlockQ4_1*>(row)[b];
      out.d = f16_bits_to_float(block.d);
      out.m = f16_bits_to_float(block.m);
      nibbles(block.qs, 0);
      break;
    }
    case QuantType::q5_0: {
      const auto& block = reinterpret_cast<const BlockQ5_0*>(row)[b];
      out.d = f16_bits_to_float(block.d);
      nibbles(block.qs, 16);
      fifth_bits(block.qh);
      break;
    }
    case QuantType::q5_1: {
      const auto& block = reinterpret_cast<const BlockQ5_1*>(row)[b];
      out.d = f16_bits_to_float(block.d);
      out.m = f16_bits_to_float(block.m);
      nibbles(block.qs, 0);
      fifth_bits(block.qh);
      break;
    }
    case QuantType::q4_k: {  // ggml's get_scale_min_k4 and dequantize_row_q4_K: sub-blocks of 32
      const auto& block = reinterpret_cast<const BlockQ4_K*>(row)[b];
      out.d = f16_bits_to_float(block.d);
      out.m = -f16_bits_to_float(block.dmin);
      const uint8_t* q = block.scales;
      for (int j = 0; j < 8; ++j) {
        const auto [sc, mn] = testing::k4_scale_min(q, j);
        for (int l = 0; l < 32; ++l) {
          const uint8_t byte = block.qs[32 * (j / 2) + l];
          out.a.push_back(sc * (j % 2 == 0 ? byte & 0xf : byte >> 4));
          out.c.push_back(mn);
        }
      }
      break;
    }
    case QuantType::q6_k: {  // dequantize_row_q6_K: two halves of 128, four runs of 32 each; sub-blocks of 16
      const auto& block = reinterpret_cast<const BlockQ6_K*>(row)[b];
      out.d = f16_bits_to_float(block.d);
      out.a.resize(256);
      for (int h = 0; h < 2; ++h)
        for (int l = 0; l < 32; ++l) {
          const uint8_t* ql = block.ql + 64 * h;
          const uint8_t qh = block.qh[32 * h + l];
          const int q[4] = {(ql[l] & 0xf) | ((qh & 3) << 4), (ql[l + 32] & 0xf) | (((qh >> 2) & 3) << 4),
                            (ql[l] >> 4) | (((qh >> 4) & 3) << 4), (ql[l + 32] >> 4) | (((qh >> 6) & 3) << 4)};
          for (int r = 0; r < 4; ++r) {
            const int i = 128 * h + 32 * r + l;
            out.a[static_cast<size_t>(i)] = block.scales[i / 16] * (q[r] - 32);
          }
        }
      break;
    }
    case QuantType::q5_k: {  // dequantize_row_q5_K: Q4_K's scales, a fifth bit j of qh[l] for value l of sub-block j
      const auto& block = reinterpret_cast<const BlockQ5_K*>(row)[b];
      out.d = f16_bits_to_float(block.d);
      out.m = -f16_bits_to_float(block.dmin);
      const uint8_t* q = block.scales;
      for (int j = 0; j < 8; ++j) {
        const auto [sc, mn] = testing::k4_scale_min(q, j);
        for (int l = 0; l < 32; ++l) {
          const uint8_t byte = block.qs[32 * (j / 2) + l];
          const int value = (j % 2 == 0 ? byte & 0xf : byte >> 4) | ((block.qh[l] >> j) & 1) << 4;
          out.a.push_back(sc * value);
          out.c.push_back(mn);
        }
      }
      break;
    }
    case QuantType::q3_k: {  // dequantize_row_q3_K: 16 sub-blocks of 16, 6-bit scales less 32, q = 2 bits + 4 hmask - 4
      const auto& block = reinterpret_cast<const BlockQ3_K*>(row)[b];
      out.d = f16_bits_to_float(block.d);
      out.a.resize(256);
      for (int i = 0; i < 256; ++i) {
        const int j = i / 16, h = i / 128, k = (i / 32) % 4, l = i % 32;
        const int low = j < 8 ? block.scales[j] & 0xf : block.scales[j - 8] >> 4;
        const int sc = (low | ((block.scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4) - 32;
        const int u = ((block.qs[32 * h + l] >> (2 * k)) & 3) | ((block.hmask[l] >> (4 * h + k)) & 1) << 2;
        out.a[static_cast<size_t>(i)] = sc * (u - 4);
      }
      break;
    }
    default: ADD_FAILURE() << "no reference for " << quant_type_name(type);
  }
  if (out.c.empty()) out.c.assign(out.a.size(), out.m != 0 ? 1 : 0);
  return out;
}

// The reference y[i, j] in f64, the sum of its blocks' terms' magnitudes, and the sum of every
// product's (|d_x d_w a_t q_t| + |d_x m_w c_t q_t|): what bounds a sum of partial sums in any order.
struct Reference {
  double y = 0, magnitude = 0, products = 0;
};
Reference reference(const std::vector<WeightBlock>& row, const QuantizedX& x, int64_t i) {
  Reference out;
  for (int64_t b = 0; b < x.nb; ++b) {
    const WeightBlock& wb = row[static_cast<size_t>(b)];
    const int8_t* q = x.q(i, b);
    int64_t dot = 0, dot_c = 0, abs_dot = 0, abs_dot_c = 0;
    for (size_t t = 0; t < wb.a.size(); ++t) {
      dot += q[t] * wb.a[t], dot_c += q[t] * wb.c[t];
      abs_dot += std::abs(q[t] * wb.a[t]), abs_dot_c += std::abs(q[t] * wb.c[t]);
    }
    out.products += std::abs(x.d(i, b)) * (std::abs(wb.d) * static_cast<double>(abs_dot) + std::abs(wb.m) * static_cast<double>(abs_dot_c));
    const double term = x.d(i, b) * wb.d * static_cast<double>(dot), min_term = x.d(i, b) * wb.m * static_cast<double>(dot_c);
    out.y += term + min_term;
    out.magnitude += std::abs(term) + std::abs(min_term);
  }
  return out;
}

std::vector<WeightBlock> weight_row(QuantType type, const std::vector<uint8_t>& w, int64_t k, int64_t j) {
  const int64_t nb = k / quant_type_info(type).block_size;
  std::vector<WeightBlock> row;
  for (int64_t b = 0; b < nb; ++b) row.push_back(weight_block(type, w.data() + static_cast<size_t>(j) * quant_row_bytes(type, k), b));
  return row;
}

// y from quant_gemm equals the reference within 1.01 (2 nb + 2) u sum_b |term| (u = 2^-24: the f32
// products of the scales and two roundings per block's accumulation).
void expect_matches_reference(QuantType type, const std::vector<uint8_t>& w, int64_t n, int64_t k, const QuantizedX& x,
                              int64_t m, const std::vector<float>& y, int64_t ldy) {
  const double u = std::ldexp(1.0, -24);
  int failures = 0;
  for (int64_t j = 0; j < n; ++j) {
    const std::vector<WeightBlock> row = weight_row(type, w, k, j);
    for (int64_t i = 0; i < m; ++i) {
      const Reference ref = reference(row, x, i);
      const double got = y[static_cast<size_t>(i * ldy + j)];
      if (!(std::abs(got - ref.y) <= 1.01 * static_cast<double>(2 * x.nb + 2) * u * ref.magnitude) && ++failures <= 5)
        ADD_FAILURE() << quant_type_name(type) << " m " << m << " n " << n << " k " << k << ": y[" << i << ", " << j
                      << "] = " << got << ", reference " << ref.y;
    }
  }
  EXPECT_EQ(failures, 0);
}

std::vector<float> run_gemm(QuantType type, const std::vector<uint8_t>& w, int64_t n, int64_t k, const QuantizedX& x,
                            int64_t m, int64_t ldy) {
  std::vector<float> y(static_cast<size_t>(m * ldy), -7.0f);
  cpu::quant_gemm(type, w.data(), n, k, x.data(), m, y.data(), ldy);
  return y;
}

// (the reference tests hold every path to the formula: testing::all_int8_isas)

// expect_matches_reference for the y of every ISA
void expect_every_isa_matches(QuantType type, const std::vector<uint8_t>& w, int64_t n, int64_t k, const QuantizedX& x,
                              int64_t m) {
  for (cpu::Int8Isa isa : testing::all_int8_isas()) {
    SCOPED_TRACE(std::string(cpu::int8_isa_name(isa)));
    expect_matches_reference(type, w, n, k, x, m, testing::on_int8_isa(isa, [&] { return run_gemm(type, w, n, k, x, m, n); }), n);
  }
}

bool is_k_type(QuantType type) { return quant_type_info(type).block_size == 256; }

class QuantGemm : public ::testing::TestWithParam<QuantType> {};

// k: the multiples of the type's block to try
std::vector<int64_t> ks(QuantType type, std::initializer_list<int64_t> blocks32, std::initializer_list<int64_t> blocks256) {
  return is_k_type(type) ? std::vector<int64_t>(blocks256) : std::vector<int64_t>(blocks32);
}

TEST_P(QuantGemm, MatchesTheBlockwiseReferenceAtShapesOffTheTiles) {
  const QuantType type = GetParam();
  for (const int64_t k : ks(type, {32, 64, 768, 2048}, {256, 768, 2048}))
    for (const int64_t m : {1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 13, 16, 17, 64, 130})
      for (const int64_t n : {1, 3, 5, 17, 64, 130}) {
        if (k > 768 && m < 17 && m != 5) continue;  // keeps it quick: every m (each tile's tail) at the smaller k
        const auto w = random_weights(type, n, k, static_cast<uint32_t>(n * k));
        const auto x = quantized_x(type, normal_values(m * k, static_cast<uint32_t>(m + k)), m, k);
        expect_every_isa_matches(type, w, n, k, x, m);
      }
}

// Sets value t of a block to its type's lowest or highest integer (Q8_0: -128, which a file may
// hold though quantising never writes it, or 127; the others: u = 0 or the largest u); the K
// types' whole block at once (t = 0): integers, and scales at their largest (Q4_K, Q5_K: sc = mn = 63;
// Q6_K: +127 high, -128 low; Q3_K: +31 high, -32 low).
void set_extreme(QuantType type, uint8_t* block, int t, bool high) {
  if (type == QuantType::q8_0) {
    block[2 + t] = high ? 127 : 0x80;
    return;
  }
  if (type == QuantType::q4_k) {
    auto& b = *reinterpret_cast<BlockQ4_K*>(block);
    std::memset(b.scales, 0xff, sizeof b.scales);
    std::memset(b.qs, high ? 0xff : 0, sizeof b.qs);
    return;
  }
  if (type == QuantType::q5_k) {
    auto& b = *reinterpret_cast<BlockQ5_K*>(block);
    std::memset(b.scales, 0xff, sizeof b.scales);
    std::memset(b.qs, high ? 0xff : 0, sizeof b.qs);
    std::memset(b.qh, high ? 0xff : 0, sizeof b.qh);
    return;
  }
  if (type == QuantType::q3_k) {  // u = 7 or 0; scales +31 (stored 63) high, -32 (stored 0) low
    auto& b = *reinterpret_cast<BlockQ3_K*>(block);
    std::memset(b.scales, high ? 0xff : 0, sizeof b.scales);
    std::memset(b.qs, high ? 0xff : 0, sizeof b.qs);
    std::memset(b.hmask, high ? 0xff : 0, sizeof b.hmask);
    return;
  }
  if (type == QuantType::q6_k) {
    auto& b = *reinterpret_cast<BlockQ6_K*>(block);
    std::memset(b.ql, high ? 0xff : 0, sizeof b.ql);
    std::memset(b.qh, high ? 0xff : 0, sizeof b.qh);
    for (int8_t& sc : b.scales) sc = high ? 127 : -128;
    return;
  }
  const bool min = type == QuantType::q4_1 || type == QuantType::q5_1, five = type == QuantType::q5_0 || type == QuantType::q5_1;
  uint8_t* qs = block + 2 + (min ? 2 : 0) + (five ? 4 : 0);
  const int shift = t < 16 ? 0 : 4;
  qs[t % 16] = static_cast<uint8_t>((qs[t % 16] & ~(0x0f << shift)) | (high ? 0x0f << shift : 0));
  uint8_t* qh = block + 2 + (min ? 2 : 0);
  if (five) qh[t / 8] = static_cast<uint8_t>((qh[t / 8] & ~(1 << t % 8)) | (high << t % 8));
}

// Every integer at its type's extremes against x at +-127, in blocks all low, all high or mixed,
// with signs that make whole blocks add up: where a product pair or a block's i16 lane would
// saturate or overflow in a kernel that let it.
TEST_P(QuantGemm, ExactAtTheExtremeIntegers) {
  const QuantType type = GetParam();
  const int64_t m = 9, n = 19, k = 512, block = quant_type_info(type).block_size, nb = k / block;
  std::mt19937 rng(7);
  std::vector<uint8_t> w = random_weights(type, n, k, 5);
  const size_t block_bytes = static_cast<size_t>(quant_type_info(type).block_bytes);
  for (int64_t j = 0; j < n * nb; ++j)
    for (int t = 0; t < (is_k_type(type) ? 1 : 32); ++t)
      set_extreme(type, &w[static_cast<size_t>(j) * block_bytes], t, j % 3 == 2 ? rng() % 2 : j % 3);
  QuantizedX x = quantized_x(type, std::vector<float>(static_cast<size_t>(m * k), 1.0f), m, k);
  const int64_t xblocks = m * (k / x.block);
  for (int64_t b = 0; b < xblocks; ++b) {
    int8_t* q = const_cast<int8_t*>(x.q(b / x.nb, b % x.nb));
    for (int t = 0; t < x.block; ++t) q[t] = b % 3 == 0 ? 127 : b % 3 == 1 ? -127 : static_cast<int8_t>(rng() % 2 ? 127 : -127);
    if (x.block == 32) {
      x.q8_0[static_cast<size_t>(b)].d = float_to_f16_bits(0.25f);
    } else {
      BlockQ8_K& xb = x.q8_k[static_cast<size_t>(b)];
      xb.d = 0.25f;
      for (int g = 0; g < 16; ++g) {
        xb.bsums[g] = 0;
        for (int t = 16 * g; t < 16 * g + 16; ++t) xb.bsums[g] = static_cast<int16_t>(xb.bsums[g] + xb.qs[t]);
      }
    }
  }
  expect_every_isa_matches(type, w, n, k, x, m);
}

TEST_P(QuantGemm, WritesOnlyItsColumnsOfAStridedY) {
  const QuantType type = GetParam();
  const int64_t m = 7, n = 13, k = is_k_type(type) ? 256 : 96, ldy = n + 5;
  const auto w = random_weights(type, n, k, 1);
  const auto x = quantized_x(type, normal_values(m * k, 2), m, k);
  const std::vector<float> y = run_gemm(type, w, n, k, x, m, ldy);
  expect_matches_reference(type, w, n, k, x, m, y, ldy);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = n; j < ldy; ++j) EXPECT_EQ(y[static_cast<size_t>(i * ldy + j)], -7.0f) << i << ", " << j;
}

// Each y is one tile's sum in one order, whichever thread computes it.
TEST_P(QuantGemm, SameBitsOnAnyThreadCount) {
  const QuantType type = GetParam();
  const int64_t m = 150, n = 70, k = is_k_type(type) ? 512 : 320;
  const auto w = random_weights(type, n, k, 3);
  const auto x = quantized_x(type, normal_values(m * k, 4), m, k);
  const std::vector<float> one = testing::at_threads(1, [&] { return run_gemm(type, w, n, k, x, m, n); });
  const std::vector<float> three = testing::at_threads(3, [&] { return run_gemm(type, w, n, k, x, m, n); });
  EXPECT_EQ(one, three);
}

// The VNNI kernels (AVX512-VNNI: 16-row panels; AVX-VNNI: AVX2's panels, with vpdpbusd for Q8_0)
// give the AVX2 kernels' y bit for bit: all sum the integers exactly and scale them in the same
// f32 steps. Shapes off every tiling, every m of 1 .. 17 (each tail of the tiles).
TEST_P(QuantGemm, VnniEqualsAvx2BitForBit) {
  const std::vector<cpu::Int8Isa> isas = testing::vnni_isas();
  if (isas.empty()) GTEST_SKIP() << "this CPU has neither AVX512-VNNI nor AVX-VNNI";
  const QuantType type = GetParam();
  std::vector<std::array<int64_t, 3>> shapes{{49, 33, 768}, {130, 130, 2048}};
  for (int64_t m = 1; m <= 17; ++m) shapes.push_back({m, 2 * m + 1, is_k_type(type) ? 256 : 96});
  for (const auto& [m, n, k] : shapes) {
    const auto w = random_weights(type, n, k, static_cast<uint32_t>(n + k));
    const auto x = quantized_x(type, normal_values(m * k, static_cast<uint32_t>(m * k)), m, k);
    const std::vector<float> avx2 = testing::on_int8_isa(cpu::Int8Isa::avx2, [&] { return run_gemm(type, w, n, k, x, m, n); });
    for (cpu::Int8Isa isa : isas) {
      const std::vector<float> vnni = testing::on_int8_isa(isa, [&] { return run_gemm(type, w, n, k, x, m, n); });
      EXPECT_EQ(vnni, avx2) << cpu::int8_isa_name(isa) << " " << quant_type_name(type) << " m " << m << " n " << n << " k " << k;
    }
  }
}

// A prompt's row through prefill (linear over many rows: x quantised once, the integer GEMM) and
// the same row alone through decode (quant_gemv's tiles) agree within 2 (2 nb + 8) u times the sum of
// the products' magnitudes: both sum the same integers of the same quantised x exactly and differ
// only in the f32 steps (decode scales each super-block's partial sums in 8 lanes, which may
// cancel only when the lanes are added at the end).
TEST_P(QuantGemm, PrefillRowsAgreeWithDecodeOfEachRow) {
  const QuantType type = GetParam();
  Generator gen(11);
  const int64_t m = cpu::kQuantGemvMaxRows + 9, n = 45, k = 768;
  const auto w = random_weights(type, n, k, 12);
  QuantizedTensor weight = QuantizedTensor::empty(type, n, k);
  std::memcpy(weight.mutable_data(), w.data(), w.size());
  const Tensor x = randn({m, k}, gen);
  const Tensor prefill = linear(x, weight);
  const std::vector<float> values(x.data<float>(), x.data<float>() + m * k);
  const QuantizedX xq = quantized_x(type, values, m, k);
  const double u = std::ldexp(1.0, -24);
  for (int64_t j = 0; j < n; ++j) {
    const std::vector<WeightBlock> row = weight_row(type, w, k, j);
    for (int64_t i = 0; i < m; i += 4) {
      const Tensor decode = linear(narrow(x, 0, i, 1), weight);
      const Reference ref = reference(row, xq, i);
      ASSERT_NEAR(prefill.at({i, j}), decode.at({0, j}), 2.0 * static_cast<double>(2 * xq.nb + 8) * u * ref.products)
          << quant_type_name(type) << " row " << i << " output " << j;
    }
  }
}

// NANOFORMER_INT8's values, and forcing what the CPU lacks, are one-line errors naming them.
TEST(Int8Isa, NamesAreParsedAndWhatTheCpuLacksIsRefused) {
  EXPECT_EQ(cpu::parse_int8_isa("avx2", "NANOFORMER_INT8"), cpu::Int8Isa::avx2);
  EXPECT_EQ(cpu::parse_int8_isa("avx-vnni", "NANOFORMER_INT8"), cpu::Int8Isa::avx_vnni);
  EXPECT_EQ(cpu::parse_int8_isa("avx512-vnni", "NANOFORMER_INT8"), cpu::Int8Isa::avx512_vnni);
  EXPECT_THROW_WITH(cpu::parse_int8_isa("vnni", "NANOFORMER_INT8"), "NANOFORMER_INT8", "'vnni'", "avx512-vnni");
  EXPECT_TRUE(cpu::int8_isa_available(cpu::Int8Isa::avx2));
  EXPECT_TRUE(cpu::int8_isa_available(cpu::int8_isa_of_cpu()));
  for (cpu::Int8Isa isa : {cpu::Int8Isa::avx_vnni, cpu::Int8Isa::avx512_vnni})
    if (!cpu::int8_isa_available(isa)) {
      EXPECT_THROW_WITH(cpu::force_int8_isa(isa), "this CPU has no", std::string(cpu::int8_isa_name(isa)));
      EXPECT_EQ(cpu::int8_isa(), cpu::int8_isa_of_cpu());
    }
}

INSTANTIATE_TEST_SUITE_P(Types, QuantGemm,
                         ::testing::Values(QuantType::q8_0, QuantType::q4_0, QuantType::q5_0, QuantType::q4_1, QuantType::q5_1,
                                           QuantType::q4_k, QuantType::q6_k, QuantType::q5_k, QuantType::q3_k),
                         [](const auto& info) { return std::string(quant_type_name(info.param)); });

TEST(QuantGemmErrors, NameTheTypeAndTheShape) {
  std::vector<BlockQ8_0> x(2);
  std::vector<uint8_t> w(64);
  std::vector<float> y(4);
  EXPECT_THROW_WITH(cpu::quant_gemm(QuantType::q8_1, w.data(), 1, 64, x.data(), 1, y.data(), 1), "quant_gemm", "q8_1");
  EXPECT_THROW_WITH(cpu::quant_gemm(QuantType::q8_0, w.data(), 1, 48, x.data(), 1, y.data(), 1), "quant_gemm", "k = 48");
  EXPECT_THROW_WITH(cpu::quant_gemm(QuantType::q4_k, w.data(), 1, 288, x.data(), 1, y.data(), 1), "quant_gemm", "k = 288",
                    "q4_k", "256");
}

}  // namespace
}  // namespace nf
