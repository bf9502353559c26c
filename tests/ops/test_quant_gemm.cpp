// The prefill product over quantised weights (ops/cpu/quant/quant_gemm.h) against the blockwise formula
// in f64, y[i, j] = sum_b d_x (d_w sum_t q_x w_t + m_w sum_t q_x) (m_w: Q4_1's min, else 0),
// within the rounding of its f32 sum, for Q8_0, Q4_0, Q5_0 and Q4_1 weights, at shapes that
// are not multiples of the kernel's tiles, at the extreme integers of each type (where an i16
// partial sum would overflow or saturate), across thread counts, into a strided y.
#include <array>
#include <cmath>
#include <cstring>
#include <random>

#include "nanoformer/core/parallel.h"
#include "ops/cpu/quant/quant_gemm.h"
#include "ops/cpu/quant/quant_rows.h"
#include "support/int8_isas.h"
#include "support/testing.h"
#include "support/threads.h"

namespace nf {
namespace {

using cpu::BlockQ4_0;
using cpu::BlockQ4_1;
using cpu::BlockQ5_0;
using cpu::BlockQ8_0;

std::vector<float> normal_values(int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> v(static_cast<size_t>(count));
  for (float& x : v) x = normal(rng);
  return v;
}

// m rows of k values quantised to Q8_0 as the activations are
std::vector<BlockQ8_0> quantized_x(const std::vector<float>& values, int64_t m, int64_t k) {
  std::vector<BlockQ8_0> x(static_cast<size_t>(m * k / 32));
  for (int64_t r = 0; r < m; ++r) cpu::quantize_row(QuantType::q8_0, values.data() + r * k, x.data() + r * k / 32, k);
  return x;
}

// n rows of k values of `type` with random integers (every bit pattern a file may hold) and
// scales (and mins) of a trained layer's size
std::vector<uint8_t> random_weights(QuantType type, int64_t n, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> w(quant_row_bytes(type, k) * static_cast<size_t>(n));
  for (uint8_t& byte : w) byte = static_cast<uint8_t>(rng());
  std::normal_distribution<float> scale(0.0f, 0.01f);
  const size_t block_bytes = static_cast<size_t>(quant_type_info(type).block_bytes);
  for (size_t at = 0; at < w.size(); at += block_bytes) {  // d (and m for Q4_1) lead every block
    const uint16_t d = float_to_f16_bits(scale(rng)), min = float_to_f16_bits(scale(rng));
    std::memcpy(&w[at], &d, 2);
    if (type == QuantType::q4_1) std::memcpy(&w[at + 2], &min, 2);
  }
  return w;
}

// A weight block's d, m (0 without one) and integer w_t with value = d w_t + m, read as
// quant_blocks.h lays the blocks out.
struct WeightBlock {
  double d = 0, m = 0;
  int w[32] = {};
};
WeightBlock weight_block(QuantType type, const uint8_t* row, int64_t b) {
  WeightBlock out;
  const auto nibbles = [&](const uint8_t* qs, int offset) {
    for (int t = 0; t < 32; ++t) out.w[t] = (t < 16 ? qs[t] & 0x0f : qs[t - 16] >> 4) - offset;
  };
  switch (type) {
    case QuantType::q8_0: {
      const auto& block = reinterpret_cast<const BlockQ8_0*>(row)[b];
      out.d = f16_bits_to_float(block.d);
      for (int t = 0; t < 32; ++t) out.w[t] = block.qs[t];
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
      const uint32_t qh = block.qh[0] | block.qh[1] << 8 | block.qh[2] << 16 | static_cast<uint32_t>(block.qh[3]) << 24;
      for (int t = 0; t < 32; ++t) out.w[t] += static_cast<int>(qh >> t & 1) << 4;
      break;
    }
    default: ADD_FAILURE() << "no reference for " << quant_type_name(type);
  }
  return out;
}

// y from quant_gemm equals sum_b d_x (d_w dot_b(q_x, w) + m_w sum q_x) within 1.01 (2 nb + 2) u
// sum_b |term| (u = 2^-24: the f32 products of the scales and two roundings per block's
// accumulation).
void expect_matches_reference(QuantType type, const std::vector<uint8_t>& w, int64_t n, int64_t k,
                              const std::vector<BlockQ8_0>& x, int64_t m, const std::vector<float>& y, int64_t ldy) {
  const int64_t nb = k / 32;
  const size_t row_bytes = quant_row_bytes(type, k);
  const double u = std::ldexp(1.0, -24);
  int failures = 0;
  for (int64_t j = 0; j < n; ++j) {
    std::vector<WeightBlock> row(static_cast<size_t>(nb));
    for (int64_t b = 0; b < nb; ++b) row[static_cast<size_t>(b)] = weight_block(type, w.data() + j * row_bytes, b);
    for (int64_t i = 0; i < m; ++i) {
      double sum = 0.0, magnitude = 0.0;
      for (int64_t b = 0; b < nb; ++b) {
        const BlockQ8_0& xb = x[static_cast<size_t>(i * nb + b)];
        const WeightBlock& wb = row[static_cast<size_t>(b)];
        int32_t dot = 0, xsum = 0;
        for (int t = 0; t < 32; ++t) dot += xb.qs[t] * wb.w[t], xsum += xb.qs[t];
        const double dx = f16_bits_to_float(xb.d);
        const double term = dx * wb.d * static_cast<double>(dot), min_term = dx * wb.m * static_cast<double>(xsum);
        sum += term + min_term;
        magnitude += std::abs(term) + std::abs(min_term);
      }
      const double got = y[static_cast<size_t>(i * ldy + j)];
      if (!(std::abs(got - sum) <= 1.01 * static_cast<double>(2 * nb + 2) * u * magnitude) && ++failures <= 5)
        ADD_FAILURE() << quant_type_name(type) << " m " << m << " n " << n << " k " << k << ": y[" << i << ", " << j
                      << "] = " << got << ", reference " << sum;
    }
  }
  EXPECT_EQ(failures, 0);
}

std::vector<float> run_gemm(QuantType type, const std::vector<uint8_t>& w, int64_t n, int64_t k,
                            const std::vector<BlockQ8_0>& x, int64_t m, int64_t ldy) {
  std::vector<float> y(static_cast<size_t>(m * ldy), -7.0f);
  cpu::quant_gemm(type, w.data(), n, k, x.data(), m, y.data(), ldy);
  return y;
}

class QuantGemm : public ::testing::TestWithParam<QuantType> {};

TEST_P(QuantGemm, MatchesTheBlockwiseReferenceAtShapesOffTheTiles) {
  const QuantType type = GetParam();
  for (const int64_t k : {32, 64, 768, 2048})
    for (const int64_t m : {1, 3, 5, 17, 64, 130})
      for (const int64_t n : {1, 3, 5, 17, 64, 130}) {
        const auto w = random_weights(type, n, k, static_cast<uint32_t>(n * k));
        const auto x = quantized_x(normal_values(m * k, static_cast<uint32_t>(m + k)), m, k);
        expect_matches_reference(type, w, n, k, x, m, run_gemm(type, w, n, k, x, m, n), n);
      }
}

// Sets value t of a block to its type's lowest or highest integer (Q8_0: -128, which a file may
// hold though quantising never writes it, or 127; the others: u = 0 or the largest u).
void set_extreme(QuantType type, uint8_t* block, int t, bool high) {
  if (type == QuantType::q8_0) {
    block[2 + t] = high ? 127 : 0x80;
    return;
  }
  uint8_t* qs = block + (type == QuantType::q4_0 ? 2 : type == QuantType::q4_1 ? 4 : 6);
  const int shift = t < 16 ? 0 : 4;
  qs[t % 16] = static_cast<uint8_t>((qs[t % 16] & ~(0x0f << shift)) | (high ? 0x0f << shift : 0));
  if (type == QuantType::q5_0) block[2 + t / 8] = static_cast<uint8_t>((block[2 + t / 8] & ~(1 << t % 8)) | (high << t % 8));
}

// Every integer at its type's extremes against x at +-127, in blocks all low, all high or mixed,
// with signs that make whole blocks add up: where a product pair or a block's i16 lane would
// saturate or overflow in a kernel that let it.
TEST_P(QuantGemm, ExactAtTheExtremeIntegers) {
  const QuantType type = GetParam();
  const int64_t m = 9, n = 19, k = 256, nb = k / 32;
  std::mt19937 rng(7);
  std::vector<uint8_t> w = random_weights(type, n, k, 5);
  const size_t block_bytes = static_cast<size_t>(quant_type_info(type).block_bytes);
  for (int64_t j = 0; j < n * nb; ++j)
    for (int t = 0; t < 32; ++t) set_extreme(type, &w[static_cast<size_t>(j) * block_bytes], t, j % 3 == 2 ? rng() % 2 : j % 3);
  std::vector<BlockQ8_0> x(static_cast<size_t>(m * nb));
  for (size_t b = 0; b < x.size(); ++b) {
    x[b].d = float_to_f16_bits(0.25f);
    for (int8_t& q : x[b].qs) q = b % 3 == 0 ? 127 : b % 3 == 1 ? -127 : static_cast<int8_t>(rng() % 2 ? 127 : -127);
  }
  expect_matches_reference(type, w, n, k, x, m, run_gemm(type, w, n, k, x, m, n), n);
}

TEST_P(QuantGemm, WritesOnlyItsColumnsOfAStridedY) {
  const QuantType type = GetParam();
  const int64_t m = 7, n = 13, k = 96, ldy = n + 5;
  const auto w = random_weights(type, n, k, 1);
  const auto x = quantized_x(normal_values(m * k, 2), m, k);
  const std::vector<float> y = run_gemm(type, w, n, k, x, m, ldy);
  expect_matches_reference(type, w, n, k, x, m, y, ldy);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = n; j < ldy; ++j) EXPECT_EQ(y[static_cast<size_t>(i * ldy + j)], -7.0f) << i << ", " << j;
}

// Each y is one tile's sum in one order, whichever thread computes it.
TEST_P(QuantGemm, SameBitsOnAnyThreadCount) {
  const QuantType type = GetParam();
  const int64_t m = 150, n = 70, k = 320;
  const auto w = random_weights(type, n, k, 3);
  const auto x = quantized_x(normal_values(m * k, 4), m, k);
  const std::vector<float> one = testing::at_threads(1, [&] { return run_gemm(type, w, n, k, x, m, n); });
  const std::vector<float> three = testing::at_threads(3, [&] { return run_gemm(type, w, n, k, x, m, n); });
  EXPECT_EQ(one, three);
}

// The VNNI kernels (AVX512-VNNI: 16-row panels, 12-row tiles; AVX-VNNI: AVX2's panels with
// vpdpbusd) give the AVX2 kernels' y bit for bit: all sum the integers exactly and scale them in the
// same f32 steps. Shapes off every tiling.
TEST_P(QuantGemm, VnniEqualsAvx2BitForBit) {
  const std::vector<cpu::Int8Isa> isas = testing::vnni_isas();
  if (isas.empty()) GTEST_SKIP() << "this CPU has neither AVX512-VNNI nor AVX-VNNI";
  const QuantType type = GetParam();
  for (const auto& [m, n, k] : std::vector<std::array<int64_t, 3>>{{1, 1, 32}, {13, 17, 96}, {49, 33, 768}, {130, 130, 2048}}) {
    const auto w = random_weights(type, n, k, static_cast<uint32_t>(n + k));
    const auto x = quantized_x(normal_values(m * k, static_cast<uint32_t>(m * k)), m, k);
    const std::vector<float> avx2 = testing::on_int8_isa(cpu::Int8Isa::avx2, [&] { return run_gemm(type, w, n, k, x, m, n); });
    for (cpu::Int8Isa isa : isas) {
      const std::vector<float> vnni = testing::on_int8_isa(isa, [&] { return run_gemm(type, w, n, k, x, m, n); });
      EXPECT_EQ(vnni, avx2) << cpu::int8_isa_name(isa) << " " << quant_type_name(type) << " m " << m << " n " << n << " k " << k;
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

INSTANTIATE_TEST_SUITE_P(Types, QuantGemm, ::testing::Values(QuantType::q8_0, QuantType::q4_0, QuantType::q5_0, QuantType::q4_1),
                         [](const auto& info) { return std::string(quant_type_name(info.param)); });

TEST(QuantGemmErrors, NameTheTypeAndTheShape) {
  std::vector<BlockQ8_0> x(2);
  std::vector<uint8_t> w(64);
  std::vector<float> y(4);
  EXPECT_THROW_WITH(cpu::quant_gemm(QuantType::q6_k, w.data(), 1, 64, x.data(), 1, y.data(), 1), "quant_gemm", "q6_k");
  EXPECT_THROW_WITH(cpu::quant_gemm(QuantType::q8_0, w.data(), 1, 48, x.data(), 1, y.data(), 1), "quant_gemm", "k = 48");
}

}  // namespace
}  // namespace nf
