// The decode product over quantised weights (ops/cpu/quant/quant_gemv.h) and linear(x, QuantizedTensor):
// activation quantisation bit for bit against the reference Q8_0 rows, the per-block dot products
// (AVX2 and portable) against the formulas of quant_blocks.h decoded here independently, the product
// against x's quantised values times the decoded weight in f64, and against the f32 linear within
// the error that quantising x allows; odd shapes, thread counts, bias and gradients.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/parallel.h"
#include "nanoformer/ops/quantized.h"
#include "ops/cpu/quant/activation_quant.h"
#include "ops/cpu/quant/quant_blocks.h"
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

using cpu::QuantizedActivations;

using testing::DecodedRow;
using testing::decode_row;
using testing::random_weight;
using testing::scale_offsets;

// ---- activation quantisation ----

TEST(QuantActivations, Block32EqualsTheReferenceQ8_0RowsBitForBit) {
  Generator gen(1);
  Tensor x = randn({3, 256}, gen);
  float* p = x.data<float>();
  for (int j = 0; j < 32; ++j) p[32 + j] = 0.0f;  // an all-zero block: d = 0, q = 0
  // a block with max 127 (d = 1): the ties x.5 round away from zero as roundf (not to even)
  const float ties[] = {127.0f, 2.5f, -3.5f, 0.5f, -0.5f, 1.5f, -126.5f};
  for (int j = 0; j < 32; ++j) p[64 + j] = j < 7 ? ties[j] : static_cast<float>(j) - 16.25f;
  for (bool scalar : {false, true}) {
    SCOPED_TRACE(scalar ? "scalar" : "as built");
    QuantizedActivations a;
    cpu::quantize_activations(x.data<float>(), 256, 3, 256, 32, a, scalar);
    for (int64_t r = 0; r < 3; ++r) {
      std::vector<cpu::BlockQ8_0> ref(8);
      cpu::quantize_row(QuantType::q8_0, p + r * 256, ref.data(), 256);
      for (int64_t b = 0; b < 8; ++b) {
        EXPECT_EQ(a.row_d(r)[b], f16_bits_to_float(ref[static_cast<size_t>(b)].d)) << "row " << r << " block " << b;
        int32_t sum = 0;
        for (int j = 0; j < 32; ++j) {
          ASSERT_EQ(a.row_q(r)[b * 32 + j], ref[static_cast<size_t>(b)].qs[j]) << "row " << r << " value " << b * 32 + j;
          sum += a.row_q(r)[b * 32 + j];
        }
        EXPECT_EQ(a.row_s(r)[b], a.row_d(r)[b] * static_cast<float>(sum));
      }
    }
    const int8_t expected_ties[] = {127, 3, -4, 1, -1, 2, -127};
    for (int j = 0; j < 7; ++j) EXPECT_EQ(a.row_q(0)[64 + j], expected_ties[j]) << "tie " << ties[j];
  }
}

TEST(QuantActivations, Block256EqualsTheReferenceQ8_KRowsBitForBit) {
  Generator gen(2);
  Tensor x = randn({2, 768}, gen);
  float* p = x.data<float>();
  for (int j = 256; j < 512; ++j) p[j] = 0.0f;  // an all-zero block: d = 0, q = 0
  p[0] = 3.5f, p[1] = -3.5f;                    // ties of largest magnitude: the first, with its sign
  p[512] = -2.0f;                               // the other sign: d < 0
  for (int j = 513; j < 768; ++j) p[j] = static_cast<float>(j % 9) * 0.25f - 1.0f;
  for (bool scalar : {false, true}) {
    SCOPED_TRACE(scalar ? "scalar" : "as built");
    QuantizedActivations a;
    cpu::quantize_activations(p, 768, 2, 768, 256, a, scalar);
    for (int64_t r = 0; r < 2; ++r) {
      std::vector<cpu::BlockQ8_K> ref(3);
      cpu::quantize_row(QuantType::q8_k, p + r * 768, ref.data(), 768);
      for (int64_t b = 0; b < 3; ++b) {
        const cpu::BlockQ8_K& blk = ref[static_cast<size_t>(b)];
        EXPECT_EQ(a.row_d(r)[b], blk.d) << "row " << r << " block " << b;
        for (int j = 0; j < 256; ++j) ASSERT_EQ(a.row_q(r)[b * 256 + j], blk.qs[j]) << "row " << r << " value " << b * 256 + j;
        for (int g = 0; g < 16; ++g) EXPECT_EQ(a.row_sums(r)[b * 16 + g], blk.bsums[g]) << "row " << r << " group " << b * 16 + g;
      }
    }
  }
}

// ---- per-block dot products ----
// (through the product itself, quant_linear_gemv, as built and with its portable kernels: each
// output is one weight row's per-block dot products with one row of x, summed)

// x (m, cols) of integers that quantise to themselves (q = x, d = 1): each block's first value is
// 127 (32 values: d = 127 / 127) or -127 (256 values, Q8_K's signed max: d = 1 / (-127 / -127));
// the others |x| <= qmax
Tensor integer_activations(int64_t m, int64_t cols, int64_t block, int qmax, std::mt19937& rng) {
  Tensor x = Tensor::empty({m, cols});
  float* p = x.data<float>();
  std::uniform_int_distribution<int> value(-qmax, qmax);
  for (int64_t i = 0; i < m * cols; ++i) p[i] = i % block == 0 ? (block == 32 ? 127.0f : -127.0f) : static_cast<float>(value(rng));
  return x;
}

// y = x W^T by quant_linear_gemv (`scalar`: its portable kernels), y (m, n)
Tensor gemv(const Tensor& x, const QuantizedTensor& w, bool scalar) {
  const Tensor y = Tensor::empty({x.size(0), w.rows()});
  cpu::quant_linear_gemv(y, x, w, Tensor(), scalar);
  return y;
}

// (the tests below run on each int8 instruction set the CPU has, testing::all_int8_isas: the K
// types' tiles take AVX512-VNNI's where it is chosen, tiles_k_vnni.cpp; the others stay on AVX2's)
std::string isa_trace(cpu::Int8Isa isa) { return std::string(cpu::int8_isa_name(isa)); }

// check(y, row c of W decoded, c, r) for y = x W^T on each int8 instruction set, each row c of W and r of x
template <class Check>
void on_each_isa_and_row(const Tensor& x, const QuantizedTensor& w, Check check) {
  for (cpu::Int8Isa isa : testing::all_int8_isas()) {
    SCOPED_TRACE(isa_trace(isa));
    const Tensor y = testing::on_int8_isa(isa, [&] { return gemv(x, w, false); });
    for (int64_t c = 0; c < w.rows(); ++c) {
      const DecodedRow row = decode_row(w.type(), w.row(c), w.cols());
      for (int64_t r = 0; r < x.size(0); ++r) check(y, row, c, r);
    }
  }
}

const std::vector<QuantType> kTypes{QuantType::q8_0, QuantType::q4_0, QuantType::q4_1, QuantType::q5_0,
                                    QuantType::q5_1, QuantType::q4_k, QuantType::q6_k, QuantType::q5_k,
                                    QuantType::q3_k};

TEST(QuantDot, IntegerSumsAreExactWithUnitScales) {
  // every f16 scale 1 and d_x = 1: the dot is sum_k w_k q_k, an integer below 2^24 (|q| <= 127 for
  // the 32-value types; for the K types, whose sub-block scales reach 63 / 128, 7 but for one -127
  // a block), exact in f32; for 5 rows of W (four streams and the row left over) and 1 or 3 rows of x
  std::mt19937 rng(3);
  for (QuantType type : kTypes)
    for (int64_t m : {1, 3}) {
      SCOPED_TRACE(std::string(quant_type_name(type)) + " m " + std::to_string(m));
      const int64_t k = 512, n = 5, block = cpu::activation_block(type);
      const QuantizedTensor w = random_weight(type, n, k, rng, true);
      const Tensor x = integer_activations(m, k, block, block == 32 ? 127 : 7, rng);
      QuantizedActivations a;  // (x quantises to itself)
      cpu::quantize_activations(x.data<float>(), k, m, k, block, a);
      for (int64_t i = 0; i < m * k; ++i) ASSERT_EQ(static_cast<float>(a.q[static_cast<size_t>(i)]), x.data<float>()[i]) << "value " << i;
      for (int64_t i = 0; i < m * k / block; ++i) ASSERT_EQ(a.d[static_cast<size_t>(i)], 1.0f) << "block " << i;
      const Tensor y_scalar = gemv(x, w, /*scalar=*/true);
      on_each_isa_and_row(x, w, [&](const Tensor& y, const DecodedRow& row, int64_t c, int64_t r) {
        int64_t expected = 0;
        for (int64_t i = 0; i < k; ++i) expected += static_cast<int64_t>(row.value[static_cast<size_t>(i)]) * a.row_q(r)[i];
        ASSERT_LT(std::abs(expected), int64_t{1} << 24);
        EXPECT_EQ(y.at({r, c}), static_cast<float>(expected)) << "row " << c << " x row " << r;
        EXPECT_EQ(y_scalar.at({r, c}), static_cast<float>(expected)) << "scalar, row " << c << " x row " << r;
      });
    }
}

// |f32 dot - f64 dot| for nb blocks: each block's scale product and its product with the exact
// integer sum round once each, and the 8 lanes (AVX2), 16 (AVX512-VNNI) or the blocks are summed in f32: at most
// (nb + 12) u times the sum of the magnitudes of the block terms (u = 2^-24)
double dot_bound(int64_t nb, double magnitude) { return static_cast<double>(nb + 12) * std::ldexp(1.0, -24) * magnitude + 1e-30; }

TEST(QuantDot, RandomScalesMatchTheDecodedFormulasInF64) {
  std::mt19937 rng(4);
  Generator gen(4);
  for (QuantType type : kTypes)
    for (int64_t k : {32, 96, 256, 4096}) {
      const int64_t block = cpu::activation_block(type);
      if (k % block != 0) continue;
      SCOPED_TRACE(std::string(quant_type_name(type)) + " k " + std::to_string(k));
      const QuantizedTensor w = random_weight(type, 3, k, rng);
      const Tensor x = randn({2, k}, gen);
      QuantizedActivations a;  // as the product quantises x (either way: the same bits)
      cpu::quantize_activations(x.data<float>(), k, 2, k, block, a);
      const Tensor y_scalar = gemv(x, w, /*scalar=*/true);
      on_each_isa_and_row(x, w, [&](const Tensor& y, const DecodedRow& row, int64_t n, int64_t r) {
        double expected = 0, magnitude = 0;  // sum of w x, x = d_x q_x
        for (int64_t j = 0; j < k; ++j) {
          const double x_j = static_cast<double>(a.row_d(r)[j / block]) * a.row_q(r)[j];
          expected += row.value[static_cast<size_t>(j)] * x_j;
          magnitude += row.magnitude[static_cast<size_t>(j)] * std::abs(x_j);
        }
        const double bound = dot_bound(k / 32, magnitude);
        EXPECT_NEAR(y.at({r, n}), expected, bound) << "row " << n << " x row " << r;
        EXPECT_NEAR(y_scalar.at({r, n}), expected, bound) << "scalar, row " << n << " x row " << r;
      });
    }
}

// The K types' tiles on each instruction set (AVX512-VNNI's in tiles_k_vnni.cpp) at their extremes:
// every stored integer at its largest and the scales' bytes all ones (Q4_K / Q5_K: sc = mn = 63),
// or bytes drawn from {0, 0x7f, 0x80, 0xff} (Q6_K's scales -128 and 127 among them), against x of
// +-127 (d_x = 1): 4 products of a lane reach 4 * 63 * 127, near the int16 the VNNI tiles pack
// them into. Within the f32 rounding of the decoded formulas in f64, for 7 rows of W (four
// streams and the rows left over) and 1 or 5 rows of x.
TEST(QuantDot, KTypesAtTheirExtremeIntegersAndScales) {
  std::mt19937 rng(7);
  for (QuantType type : {QuantType::q4_k, QuantType::q6_k, QuantType::q5_k, QuantType::q3_k})
    for (bool all_ones : {true, false})
      for (int64_t m : {1, 5}) {
        SCOPED_TRACE(std::string(quant_type_name(type)) + (all_ones ? " all ones" : " extreme bytes") + " m " + std::to_string(m));
        const int64_t k = 512, n = 7;
        QuantizedTensor w = random_weight(type, n, k, rng, true);
        auto* bytes = static_cast<unsigned char*>(w.mutable_data());
        const size_t block_bytes = static_cast<size_t>(quant_type_info(type).block_bytes);
        const unsigned char choices[] = {0x00, 0x7f, 0x80, 0xff};
        std::uniform_int_distribution<int> pick(0, 3);
        for (size_t i = 0; i < w.nbytes(); ++i) {
          bool scale_byte = false;  // keep the f16 scales (1.0)
          for (size_t off : scale_offsets(type)) scale_byte |= i % block_bytes == off || i % block_bytes == off + 1;
          if (!scale_byte) bytes[i] = all_ones ? 0xff : choices[pick(rng)];
        }
        Tensor x = Tensor::empty({m, k});
        std::uniform_int_distribution<int> sign(0, 1);
        for (int64_t i = 0; i < m * k; ++i) x.data<float>()[i] = m == 1 || i / k == 1 ? 127.0f : (sign(rng) ? 127.0f : -127.0f);
        if (m > 1) for (int64_t i = 0; i < k; ++i) x.data<float>()[2 * k + i] = -127.0f;
        on_each_isa_and_row(x, w, [&](const Tensor& y, const DecodedRow& row, int64_t c, int64_t r) {
          double expected = 0, magnitude = 0;
          for (int64_t i = 0; i < k; ++i) {
            expected += row.value[static_cast<size_t>(i)] * x.data<float>()[r * k + i];
            magnitude += row.magnitude[static_cast<size_t>(i)] * 127.0;
          }
          EXPECT_NEAR(y.at({r, c}), expected, dot_bound(k / 32, magnitude)) << "row " << c << " x row " << r;
        });
      }
}

// A K type's row gives the same bits alone as among others (rows of x 4 at a time, and the one
// row of decode, whose tiles run a thread's range in one call) and at any thread count (W's rows
// cut differently into streams and rows left over), on each instruction set.
TEST(QuantLinear, KTypesBitsDoNotDependOnTheRowsBesideThemOrTheThreads) {
  std::mt19937 rng(8);
  Generator gen(8);
  for (QuantType type : {QuantType::q4_k, QuantType::q6_k, QuantType::q5_k, QuantType::q3_k}) {
    const QuantizedTensor w = random_weight(type, 1001, 512, rng);
    const Tensor x = randn({9, 512}, gen), b = randn({1001}, gen);
    for (cpu::Int8Isa isa : testing::all_int8_isas()) {
      SCOPED_TRACE(std::string(quant_type_name(type)) + " " + isa_trace(isa));
      testing::on_int8_isa(isa, [&] {
        const Tensor one = testing::at_threads(1, [&] { return linear(x, w, b); });
        const Tensor three = testing::at_threads(3, [&] { return linear(x, w, b); });
        EXPECT_TENSOR_CLOSE(one, three, 0.0, 0.0);
        EXPECT_TENSOR_CLOSE(linear(narrow(x, 0, 6, 1), w, b), narrow(one, 0, 6, 1), 0.0, 0.0);
        for (int64_t r : {0, 7}) EXPECT_TENSOR_CLOSE(linear(narrow(x, 0, r, 1), w, b), narrow(one, 0, r, 1), 0.0, 0.0);
        return 0;
      });
    }
  }
}

// ---- the product ----

// y = x^ W^T + b in f64, x^ = x quantised as the kernel quantises it, W decoded by the formulas;
// bound[i] = 1e-5 of the sum of |x^_k| times the magnitude of w_k's terms (the f32 error of a
// k-term dot stays below it for k <= 4096: (k/32 + 12) 2^-24 < 1e-5)
struct Expected {
  std::vector<double> y, bound;
};

// W's rows decoded by the formulas (quantised types) or converted (float types)
std::vector<DecodedRow> decode_weight(const QuantizedTensor& w) {
  std::vector<DecodedRow> rows(static_cast<size_t>(w.rows()));
  for (int64_t n = 0; n < w.rows(); ++n) {
    DecodedRow& row = rows[static_cast<size_t>(n)];
    if (cpu::activation_block(w.type()) != 0) {
      row = decode_row(w.type(), w.row(n), w.cols());
    } else {
      std::vector<float> f(static_cast<size_t>(w.cols()));
      cpu::dequantize_row(w.type(), w.row(n), f.data(), w.cols());
      for (float v : f) row.value.push_back(v), row.magnitude.push_back(std::abs(v));
    }
  }
  return rows;
}

Expected quantised_reference(const Tensor& x, const QuantizedTensor& w, const std::vector<DecodedRow>& wv, const Tensor& bias) {
  const int64_t m = x.size(0), k = x.size(1);
  std::vector<double> xq(static_cast<size_t>(m * k));
  const int64_t block = cpu::activation_block(w.type());
  const Tensor xc = contiguous(x);
  QuantizedActivations a;
  if (block != 0) cpu::quantize_activations(xc.data<float>(), k, m, k, block, a);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t i = 0; i < k; ++i)
      xq[static_cast<size_t>(r * k + i)] = block != 0 ? static_cast<double>(a.row_d(r)[i / block]) * a.row_q(r)[i]
                                                      : xc.data<float>()[r * k + i];
  Expected e;
  for (int64_t r = 0; r < m; ++r)
    for (int64_t n = 0; n < w.rows(); ++n) {
      const DecodedRow& wn = wv[static_cast<size_t>(n)];
      double s = bias.defined() ? bias.at({n}) : 0.0, magnitude = std::abs(s);
      for (int64_t i = 0; i < k; ++i) {
        s += xq[static_cast<size_t>(r * k + i)] * wn.value[static_cast<size_t>(i)];
        magnitude += std::abs(xq[static_cast<size_t>(r * k + i)]) * wn.magnitude[static_cast<size_t>(i)];
      }
      e.y.push_back(s);
      e.bound.push_back(1e-5 * magnitude + 1e-30);
    }
  return e;
}

void expect_matches(const Tensor& y, const Expected& e, const std::string& what) {
  const Tensor flat = contiguous(y).reshape({-1});
  ASSERT_EQ(flat.numel(), static_cast<int64_t>(e.y.size())) << what;
  for (int64_t i = 0; i < flat.numel(); ++i)
    ASSERT_NEAR(flat.at({i}), e.y[static_cast<size_t>(i)], e.bound[static_cast<size_t>(i)]) << what << ", element " << i;
}

QuantizedTensor float_weight(QuantType type, int64_t rows, int64_t cols, Generator& gen) {
  return quantize(uniform({rows, cols}, -2.0, 2.0, gen), type);  // f32 / f16 / bf16 rows
}

TEST(QuantLinear, EqualsQuantisedActivationsTimesDecodedWeightAtOddShapes) {
  std::mt19937 rng(5);
  Generator gen(5);
  std::vector<QuantType> types = kTypes;
  types.insert(types.end(), {QuantType::f16, QuantType::bf16, QuantType::f32});
  for (QuantType type : types)
    for (int64_t k : {32, 256, 4096})
      for (int64_t n : {1, 3, 7, 33, 130}) {
        if (k % quant_type_info(type).block_size != 0 || (k != 32 && n > 33) || (k == 32 && n < 7)) continue;  // keeps it quick
        const QuantizedTensor w = cpu::activation_block(type) != 0 ? random_weight(type, n, k, rng) : float_weight(type, n, k, gen);
        const std::vector<DecodedRow> decoded = decode_weight(w);
        for (int64_t m = 1; m <= 9; ++m) {
          const bool with_bias = m % 2 == 1;
          const Tensor x = uniform({m, k}, -2.0, 2.0, gen), b = with_bias ? uniform({n}, -1.0, 1.0, gen) : Tensor();
          ASSERT_TRUE(cpu::quant_gemv_applies(x, w));
          expect_matches(linear(x, w, b), quantised_reference(x, w, decoded, b),
                         std::string(quant_type_name(type)) + " m " + std::to_string(m) + " n " + std::to_string(n) +
                             " k " + std::to_string(k) + (with_bias ? " with bias" : ""));
        }
      }
}

TEST(QuantLinear, ThreadCountDoesNotChangeTheBitsAndRowsAreIndependent) {
  std::mt19937 rng(6);
  Generator gen(6);
  const QuantizedTensor w = random_weight(QuantType::q4_0, 1001, 320, rng);
  const Tensor x = randn({9, 320}, gen), b = randn({1001}, gen);
  const Tensor one = testing::at_threads(1, [&] { return linear(x, w, b); });
  const Tensor three = testing::at_threads(3, [&] { return linear(x, w, b); });
  EXPECT_TENSOR_CLOSE(one, three, 0.0, 0.0);
  // a row alone gives the bits it gives among 9 (each pass of rows is independent)
  EXPECT_TENSOR_CLOSE(linear(narrow(x, 0, 6, 1), w, b), narrow(one, 0, 6, 1), 0.0, 0.0);
}

// A block holding an infinity quantises to scales that are not finite, and no integer overflows
// (a fuzz finding: inf * 0 levels are INT_MIN, and the two halves' sums overflowed an int, which
// UBSan reports in make test-asan).
TEST(QuantActivations, InfiniteValuesGiveScalesThatAreNotFinite) {
  std::vector<float> x(32, 1.0f);
  x[0] = x[16] = std::numeric_limits<float>::infinity();
  cpu::QuantizedActivations a;
  cpu::quantize_activations(x.data(), 32, 1, 32, 32, a);
  EXPECT_FALSE(std::isfinite(a.d[0]));
  EXPECT_FALSE(std::isfinite(a.s[0]));
}

// Prefill's quantisation of x into Q8_0 blocks, threaded over rows, gives quantize_activations'
// integers and scales (as f16 bits), at any thread count.
TEST(QuantActivations, BlocksEqualTheActivationsAtAnyThreadCount) {
  Generator gen(9);
  const int64_t m = 37, k = 320, nb = k / 32;
  const Tensor x = mul(randn({m, k}, gen), full({m, k}, 3.0f));
  cpu::QuantizedActivations a;
  cpu::quantize_activations(x.data<float>(), k, m, k, 32, a);
  for (int threads : {1, 3}) {
    std::vector<cpu::BlockQ8_0> blocks(static_cast<size_t>(m * nb));
    testing::at_threads(threads, [&] { cpu::quantize_activation_blocks(x.data<float>(), k, m, k, 32, blocks.data()); return 0; });
    for (int64_t i = 0; i < m * nb; ++i) {
      ASSERT_EQ(blocks[i].d, float_to_f16_bits(a.d[i])) << "block " << i << " threads " << threads;
      ASSERT_EQ(std::memcmp(blocks[i].qs, a.q.data() + i * 32, 32), 0) << "block " << i << " threads " << threads;
    }
  }
}

// q, k and v (or gate and up) of one x in one hand-off: each output the bits linear gives alone, at
// any thread count, for shapes whose rows split unevenly between threads (a 4-row matrix among them)
TEST(QuantLinear, TogetherEqualsEachAloneBitForBit) {
  std::mt19937 rng(8);
  Generator gen(8);
  for (QuantType type : {QuantType::q8_0, QuantType::q4_0, QuantType::q4_k, QuantType::f16}) {
    const int64_t k = 256;
    std::vector<QuantizedTensor> weights;
    std::vector<Tensor> biases;
    for (int64_t n : {136, 4, 67}) {
      weights.push_back(cpu::activation_block(type) != 0 ? random_weight(type, n, k, rng) : float_weight(type, n, k, gen));
      biases.push_back(n == 4 ? Tensor() : randn({n}, gen));
    }
    const std::vector<const QuantizedTensor*> pointers{&weights[0], &weights[1], &weights[2]};
    for (int64_t m : {1, 3, 6, 17, 50}) {  // 17 and 50: prefill's path, x quantised once for the GEMMs
      const Tensor x = randn({1, m, k}, gen);
      for (int threads : {1, 2, 3}) {
        // (alone at the same thread count: the f32 GEMM of the types quant_gemm does not take may
        // split its work by the thread count)
        const auto [together, alone] = testing::at_threads(threads, [&] {
          NoGradGuard no_grad;
          std::vector<Tensor> each;
          for (size_t i = 0; i < 3; ++i) each.push_back(linear(x, weights[i], biases[i]));
          return std::pair(linear_together(x, pointers, biases), each);
        });
        ASSERT_EQ(together.size(), 3u);
        for (size_t i = 0; i < 3; ++i) {
          const std::string what = std::string(quant_type_name(type)) + " m " + std::to_string(m) + " threads " +
                                   std::to_string(threads) + " weight " + std::to_string(i);
          EXPECT_EQ(together[i].shape(), (Shape{1, m, weights[i].rows()})) << what;
          EXPECT_TENSOR_CLOSE(together[i], alone[i], 0.0, 0.0) << what;
        }
      }
    }
  }
}

// Weights of different types in one hand-off (a Q4_K q and k with a Q6_K v, as llama-quantize's
// mixes make; and with a Q8_0 one, whose x is quantised apart): each output the bits linear gives alone.
TEST(QuantLinear, MixedTypesTogetherEqualEachAloneBitForBit) {
  std::mt19937 rng(12);
  Generator gen(12);
  const int64_t k = 512;
  for (const auto& types : std::vector<std::vector<QuantType>>{{QuantType::q4_k, QuantType::q4_k, QuantType::q6_k},
                                                              {QuantType::q4_k, QuantType::q6_k, QuantType::q8_0}}) {
    std::vector<QuantizedTensor> weights;
    for (size_t i = 0; i < types.size(); ++i) weights.push_back(random_weight(types[i], 40 + 9 * static_cast<int64_t>(i), k, rng));
    const std::vector<const QuantizedTensor*> pointers{&weights[0], &weights[1], &weights[2]};
    const std::vector<Tensor> biases(3);
    for (int64_t m : {3, 40}) {
      NoGradGuard no_grad;
      const Tensor x = randn({1, m, k}, gen);
      const std::vector<Tensor> together = linear_together(x, pointers, biases);
      for (size_t i = 0; i < 3; ++i)
        EXPECT_TENSOR_CLOSE(together[i], linear(x, weights[i]), 0.0, 0.0) << quant_type_name(types[i]) << " m " << m;
    }
  }
}

// Against the f32 linear on the dequantised weight: x^ - x per value is at most d (1/2 + 127 2^-11)
// (q rounds to nearest: d/2; d itself rounds to f16, off by up to 2^-11 d, times |q| <= 127), so
// |y_q - y_f32| <= sum over blocks of that times sum_{k in block} |w_k|, plus f32 rounding.
TEST(QuantLinear, AgreesWithF32LinearWithinTheActivationQuantisationBound) {
  Generator gen(7);
  for (QuantType type : {QuantType::q8_0, QuantType::q4_0})
    for (int64_t m : {1, 4, 8}) {
      const int64_t n = 70, k = 512;
      const Tensor weight = randn({n, k}, gen, DType::f32), x = randn({2, m / 2 + 1, k}, gen), b = randn({n}, gen);
      const QuantizedTensor w = quantize(weight, type);
      const Tensor wd = dequantize(w);
      const Tensor y = linear(x, w, b), y32 = linear(x, wd, b);
      ASSERT_EQ(y.shape(), y32.shape());
      const Tensor x2 = x.reshape({-1, k});
      for (int64_t r = 0; r < x2.size(0); ++r)
        for (int64_t j = 0; j < n; ++j) {
          double bound = 0, magnitude = 0;
          for (int64_t blk = 0; blk < k / 32; ++blk) {
            double amax = 0, wsum = 0;
            for (int64_t i = blk * 32; i < blk * 32 + 32; ++i) {
              amax = std::max(amax, std::abs(static_cast<double>(x2.at({r, i}))));
              wsum += std::abs(wd.at({j, i}));
              magnitude += std::abs(x2.at({r, i}) * wd.at({j, i}));
            }
            bound += amax / 127 * (0.5 + 127 * std::ldexp(1.0, -11)) * wsum;
          }
          bound += 1e-5 * magnitude;
          ASSERT_NEAR(y.reshape({-1, n}).at({r, j}), y32.reshape({-1, n}).at({r, j}), bound)
              << quant_type_name(type) << " row " << r << " output " << j;
        }
    }
}

// Many rows (prefill): x quantised once (Q8_0, or Q8_K for the K types), then the integer GEMM
// (cpu::quant_gemm) for the types it takes, which equals the f32 product of the rounded x and the
// dequantised W to f32 rounding; the other types take the dequantised f32 path, equal to linear on
// dequantize(W).
TEST(QuantLinear, ManyRowsTakeTheIntegerGEMMOrTheDequantisedPath) {
  std::mt19937 rng(8);
  Generator gen(8);
  for (QuantType type : kTypes) {
    const QuantizedTensor w = random_weight(type, 40, 256, rng);
    const Tensor x = randn({cpu::kQuantGemvMaxRows + 1, 256}, gen), b = randn({40}, gen);
    EXPECT_FALSE(cpu::quant_gemv_applies(x, w));
    const QuantType xtype = cpu::activation_block(type) == 256 ? QuantType::q8_k : QuantType::q8_0;
    const Tensor rounded_x = cpu::quant_gemm_supports(type) ? dequantize(quantize(x, xtype)) : x;
    EXPECT_TENSOR_CLOSE(linear(x, w, b), linear(rounded_x, dequantize(w), b), 1e-4, 1e-4) << quant_type_name(type);
  }
}

TEST(QuantLinear, GradientsEqualThoseOfF32LinearOnTheDequantisedWeight) {
  Generator gen(9);
  // 300 x 4096 is more than one backward tile of W (2^20 values): dx sums over tiles
  for (int64_t rows : {3, 20})
    for (auto [n, k] : {std::pair<int64_t, int64_t>{37, 64}, {300, 4096}}) {
      const QuantizedTensor w = quantize(randn({n, k}, gen), QuantType::q4_0);
      const Tensor x0 = randn({rows, k}, gen), b0 = randn({n}, gen), g = randn({rows, n}, gen);
      const Tensor x = clone(x0).set_requires_grad(), b = clone(b0).set_requires_grad();
      linear(x, w, b).backward(g);
      const Tensor xr = clone(x0).set_requires_grad(), br = clone(b0).set_requires_grad();
      linear(xr, dequantize(w), br).backward(g);
      EXPECT_TENSOR_CLOSE(x.grad(), xr.grad(), 1e-5, 1e-5);
      EXPECT_TENSOR_CLOSE(b.grad(), br.grad(), 1e-5, 1e-5);
    }
}

TEST(QuantLinear, BadOperandsNameTheShapes) {
  Generator gen(10);
  const QuantizedTensor w = quantize(randn({8, 64}, gen), QuantType::q8_0);
  EXPECT_THROW_WITH(linear(randn({2, 32}, gen), w), "linear: input (2, 32) does not match the q8_0 weight (8, 64)");
  EXPECT_THROW_WITH(linear(randn({2, 64}, gen, DType::f64), w), "linear: input must be f32", "f64");
  EXPECT_THROW_WITH(linear(randn({2, 64}, gen), w, randn({7}, gen)), "linear: bias f32 (7)", "(8, 64)");
}

}  // namespace
}  // namespace nf
