// The prefill product over quantised weights (ops/cpu/quant_gemm.h) against the blockwise formula
// in f64, y[i, j] = sum_b d_x d_w sum_t q_x q_w, within the rounding of its f32 sum, at shapes that
// are not multiples of the kernel's tiles, at the extreme integers of each type (where an i16
// partial sum would overflow or saturate), across thread counts, into a strided y.
#include <cmath>
#include <cstring>
#include <random>

#include "nanoformer/core/parallel.h"
#include "ops/cpu/quant_gemm.h"
#include "ops/cpu/quant_rows.h"
#include "support/testing.h"

namespace nf {
namespace {

using cpu::BlockQ4_0;
using cpu::BlockQ8_0;

// rows x cols values quantised row by row to `type`
std::vector<uint8_t> quantized(QuantType type, const std::vector<float>& values, int64_t rows, int64_t cols) {
  const size_t row_bytes = quant_row_bytes(type, cols);
  std::vector<uint8_t> out(row_bytes * static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) cpu::quantize_row(type, values.data() + r * cols, out.data() + r * row_bytes, cols);
  return out;
}

std::vector<float> normal_values(int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> v(static_cast<size_t>(count));
  for (float& x : v) x = normal(rng);
  return v;
}

std::vector<BlockQ8_0> quantized_x(const std::vector<float>& values, int64_t m, int64_t k) {
  const std::vector<uint8_t> bytes = quantized(QuantType::q8_0, values, m, k);
  std::vector<BlockQ8_0> x(static_cast<size_t>(m * k / 32));
  std::memcpy(x.data(), bytes.data(), bytes.size());
  return x;
}

// The scale and integer of value t of a weight row, read from the blocks as quant_blocks.h lays them out.
double weight_scale(QuantType type, const uint8_t* row, int64_t block) {
  return type == QuantType::q8_0 ? f16_bits_to_float(reinterpret_cast<const BlockQ8_0*>(row)[block].d)
                                 : f16_bits_to_float(reinterpret_cast<const BlockQ4_0*>(row)[block].d);
}
int weight_int(QuantType type, const uint8_t* row, int64_t block, int t) {
  if (type == QuantType::q8_0) return reinterpret_cast<const BlockQ8_0*>(row)[block].qs[t];
  const uint8_t byte = reinterpret_cast<const BlockQ4_0*>(row)[block].qs[t % 16];
  return (t < 16 ? byte & 0x0f : byte >> 4) - 8;
}

// y from quant_gemm equals sum_b d_x d_w (integer dot of block b) within 1.01 (nb + 2) u sum_b |term|
// (u = 2^-24: the f32 product of the two scales and one rounding per block's accumulation).
void expect_matches_reference(QuantType type, const std::vector<uint8_t>& w, int64_t n, int64_t k,
                              const std::vector<BlockQ8_0>& x, int64_t m, const std::vector<float>& y, int64_t ldy) {
  const int64_t nb = k / 32;
  const size_t row_bytes = quant_row_bytes(type, k);
  const double u = std::ldexp(1.0, -24);
  int failures = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const uint8_t* row = w.data() + static_cast<size_t>(j) * row_bytes;
      double sum = 0.0, magnitude = 0.0;
      for (int64_t b = 0; b < nb; ++b) {
        const BlockQ8_0& xb = x[static_cast<size_t>(i * nb + b)];
        int64_t dot = 0;
        for (int t = 0; t < 32; ++t) dot += xb.qs[t] * weight_int(type, row, b, t);
        const double term = f16_bits_to_float(xb.d) * weight_scale(type, row, b) * static_cast<double>(dot);
        sum += term;
        magnitude += std::abs(term);
      }
      const double got = y[static_cast<size_t>(i * ldy + j)];
      if (std::abs(got - sum) > 1.01 * static_cast<double>(nb + 2) * u * magnitude && ++failures <= 5)
        ADD_FAILURE() << quant_type_name(type) << " m " << m << " n " << n << " k " << k << ": y[" << i << ", " << j
                      << "] = " << got << ", reference " << sum;
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
        const auto w = quantized(type, normal_values(n * k, static_cast<uint32_t>(n * k)), n, k);
        const auto x = quantized_x(normal_values(m * k, static_cast<uint32_t>(m + k)), m, k);
        expect_matches_reference(type, w, n, k, x, m, run_gemm(type, w, n, k, x, m, n), n);
      }
}

// Every integer at its type's extremes (Q8_0's -128 included, which a file may hold though
// quantising never writes it), with signs that make whole blocks add up: where a product pair or
// a block's i16 lane would saturate or overflow in a kernel that let it.
TEST_P(QuantGemm, ExactAtTheExtremeIntegers) {
  const QuantType type = GetParam();
  const int64_t m = 9, n = 19, k = 256, nb = k / 32;
  std::mt19937 rng(7);
  std::vector<uint8_t> w(quant_row_bytes(type, k) * n);
  for (int64_t j = 0; j < n * nb; ++j) {
    if (type == QuantType::q8_0) {
      auto& block = reinterpret_cast<BlockQ8_0*>(w.data())[j];
      block.d = float_to_f16_bits(0.5f);
      const int8_t pick[] = {-128, -127, 127};
      for (int8_t& q : block.qs) q = j % 3 < 2 ? pick[j % 3 * 2] : pick[rng() % 3];
    } else {
      auto& block = reinterpret_cast<BlockQ4_0*>(w.data())[j];
      block.d = float_to_f16_bits(0.5f);
      for (uint8_t& q : block.qs) q = j % 3 == 0 ? 0x00 : j % 3 == 1 ? 0xff : static_cast<uint8_t>(rng() % 2 ? 0x0f : 0xf0);
    }
  }
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
  const auto w = quantized(type, normal_values(n * k, 1), n, k);
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
  const auto w = quantized(type, normal_values(n * k, 3), n, k);
  const auto x = quantized_x(normal_values(m * k, 4), m, k);
  const int saved = num_threads();
  set_num_threads(1);
  const std::vector<float> one = run_gemm(type, w, n, k, x, m, n);
  set_num_threads(3);
  const std::vector<float> three = run_gemm(type, w, n, k, x, m, n);
  set_num_threads(saved);
  EXPECT_EQ(one, three);
}

INSTANTIATE_TEST_SUITE_P(Types, QuantGemm, ::testing::Values(QuantType::q8_0, QuantType::q4_0),
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
