// Panels (ops/cpu/quant/panels.h): a Q8_0 / Q4_0 / Q4_1 / Q5_0 / Q5_1 / Q4_K / Q5_K / Q6_K weight's rows
// interleaved by 16, made at load.
// Decode on them (AVX512-VNNI where the CPU has it, and the portable tile) against the formulas of
// quant_blocks.h decoded independently: exact with unit scales, within the f32 rounding bound with
// random ones, and the two tiles bit for bit; prefill's GEMM on them bit for bit the GEMM on the
// rows; odd shapes (partial panels, odd block counts), several rows of x, bias, several products;
// a row read back from them (the embedding's look-up) the file's row.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <random>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/dtype.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/quantized.h"
#include "ops/cpu/quant/activation_quant.h"
#include "ops/cpu/quant/int8_isa.h"
#include "ops/cpu/quant/panels.h"
#include "ops/cpu/quant/quant_gemv.h"
#include "ops/cpu/quant/type_traits.h"
#include "support/int8_isas.h"
#include "support/quant_weights.h"
#include "support/testing.h"
#include "support/threads.h"

namespace nf {
namespace {

using testing::random_weight;

const std::vector<QuantType> kPanelTypes{QuantType::q8_0, QuantType::q4_0, QuantType::q4_1, QuantType::q5_0,
                                         QuantType::q5_1, QuantType::q4_k, QuantType::q5_k, QuantType::q6_k};

// The tiles each check runs: each int8 ISA's (the panels' AVX2 tiles where the type has them,
// else the portable one) and the portable tile itself
std::vector<std::pair<cpu::Int8Isa, bool>> tiles_to_test() {
  std::vector<std::pair<cpu::Int8Isa, bool>> tiles;
  for (cpu::Int8Isa isa : testing::all_int8_isas()) tiles.push_back({isa, false});
  tiles.push_back({cpu::int8_isa_of_cpu(), true});
  return tiles;
}

// w carrying panels packed by its traits, whatever panels_pay says (so the portable tile is tested
// on every CPU)
QuantizedTensor with_panels(const QuantizedTensor& w) {
  const cpu::QuantTypeTraits& traits = cpu::quant_traits(w.type());
  const int64_t count = (w.rows() + cpu::kPanelRows - 1) / cpu::kPanelRows;
  auto panels = std::make_shared<Storage>(static_cast<size_t>(count) * cpu::panel_bytes_of(w.type(), w.cols()), Device{});
  traits.pack_panels(w.data(), w.rows(), w.cols(), panels->data());
  return w.with_panels(panels);
}

Tensor gemv(const Tensor& x, const QuantizedTensor& w, bool scalar, const Tensor& bias = {}) {
  const Tensor y = Tensor::empty({x.size(0), w.rows()});
  cpu::quant_linear_gemv(y, x, w, bias, scalar);
  return y;
}

std::vector<float> values(const Tensor& t) { return {t.data<float>(), t.data<float>() + t.numel()}; }

TEST(QuantPanels, AFullPanelHoldsItsRowsBytes) {
  // 16 rows of an even number of blocks: the file's bytes exactly (scales as f16, no padding)
  EXPECT_EQ(cpu::panel_bytes({8, 1}, 512), 16u * 16 * sizeof(cpu::BlockQ8_0));
  EXPECT_EQ(cpu::panel_bytes({4, 1}, 1408), 16u * 44 * sizeof(cpu::BlockQ4_0));
  EXPECT_EQ(cpu::panel_bytes({4, 1}, 96) % 64, 0u);  // 3 blocks: padded to keep the next panel's lines aligned
  EXPECT_EQ(cpu::panel_bytes_of(QuantType::q4_1, 512), 16u * 16 * sizeof(cpu::BlockQ4_1));
  EXPECT_EQ(cpu::panel_bytes_of(QuantType::q5_0, 512), 16u * 16 * sizeof(cpu::BlockQ5_0));
  EXPECT_EQ(cpu::panel_bytes_of(QuantType::q5_1, 512), 16u * 16 * sizeof(cpu::BlockQ5_1));
  EXPECT_EQ(cpu::panel_bytes_of(QuantType::q4_k, 512), 16u * 2 * sizeof(cpu::BlockQ4_K) + 2 * 64);  // + scales a byte each
  EXPECT_EQ(cpu::panel_bytes_of(QuantType::q5_k, 512), 16u * 2 * sizeof(cpu::BlockQ5_K) + 2 * 64);
  EXPECT_EQ(cpu::panel_bytes_of(QuantType::q6_k, 512), 16u * 2 * sizeof(cpu::BlockQ6_K) + 2 * 32);  // + 32 to a whole line
}

TEST(QuantPanels, DecodeIsExactWithUnitScales) {
  // every scale 1 and x integers that quantise to themselves: each output is sum_k w_k q_k exactly
  std::mt19937 rng(5);
  for (QuantType type : kPanelTypes)
    for (int64_t n : {1, 16, 21, 40, 300})  // 300: 19 panels, decode's streams (panels_driver.h) on 1 or 2 threads
      for (int64_t m : {1, 2, 3, 6}) {
        SCOPED_TRACE(std::string(quant_type_name(type)) + " n " + std::to_string(n) + " m " + std::to_string(m));
        // (Q8_K's blocks of 256 quantise to themselves from a -127; their values kept small, so the
        // sub-block scales' products stay below 2^24)
        const int64_t block = cpu::activation_block(type), k = block == 32 ? 160 : 512;
        const QuantizedTensor w = with_panels(random_weight(type, n, k, rng, true));
        Tensor x = Tensor::empty({m, k});
        std::uniform_int_distribution<int> value(block == 32 ? -127 : -7, block == 32 ? 127 : 7);
        for (int64_t i = 0; i < m * k; ++i)
          x.data<float>()[i] = i % block == 0 ? (block == 32 ? 127.0f : -127.0f) : static_cast<float>(value(rng));
        for (const auto& [isa, scalar] : tiles_to_test()) {
          const Tensor y = testing::on_int8_isa(isa, [&] { return gemv(x, w, scalar); });
          for (int64_t c = 0; c < n; ++c) {
            const testing::DecodedRow row = testing::decode_row(type, w.row(c), k);
            for (int64_t r = 0; r < m; ++r) {
              double expected = 0;
              for (int64_t i = 0; i < k; ++i) expected += row.value[static_cast<size_t>(i)] * x.data<float>()[r * k + i];
              ASSERT_EQ(y.at({r, c}), static_cast<float>(expected))
                  << (scalar ? "portable" : cpu::int8_isa_name(isa)) << " row " << c << " x row " << r;
            }
          }
        }
      }
}

TEST(QuantPanels, DecodeMatchesTheFormulasAndTheTilesAgreeBitForBit) {
  std::mt19937 rng(6);
  Generator gen(6);
  for (QuantType type : kPanelTypes)
    for (int64_t k : {32, 96, 512, 768})
      for (int64_t m : {1, 2, 4, 5, 16}) {
        const int64_t block = cpu::activation_block(type);
        if (k % block != 0) continue;
        // n = 300 at m <= 2: decode's streams at m = 1 (panels_driver.h); several panels a thread
        const int64_t n = m <= 2 ? 300 : 35;
        SCOPED_TRACE(std::string(quant_type_name(type)) + " k " + std::to_string(k) + " m " + std::to_string(m));
        const QuantizedTensor w = with_panels(random_weight(type, n, k, rng));
        const Tensor x = randn({m, k}, gen), bias = randn({n}, gen);
        const Tensor y = gemv(x, w, false, bias), portable = gemv(x, w, true, bias);
        EXPECT_EQ(values(y), values(portable));
        for (cpu::Int8Isa isa : testing::all_int8_isas())  // AVX2's tiles as well as the CPU's own
          EXPECT_EQ(testing::on_int8_isa(isa, [&] { return values(gemv(x, w, false, bias)); }), values(portable))
              << cpu::int8_isa_name(isa);
        cpu::QuantizedActivations a;
        cpu::quantize_activations(x.data<float>(), k, m, k, block, a);
        for (int64_t c = 0; c < n; ++c) {
          const testing::DecodedRow row = testing::decode_row(type, w.row(c), k);
          for (int64_t r = 0; r < m; ++r) {
            double expected = bias.data<float>()[c], magnitude = std::abs(bias.data<float>()[c]);
            for (int64_t j = 0; j < k; ++j) {
              const double x_j = static_cast<double>(a.row_d(r)[j / block]) * a.row_q(r)[j];
              expected += row.value[static_cast<size_t>(j)] * x_j;
              magnitude += row.magnitude[static_cast<size_t>(j)] * std::abs(x_j);
            }
            // each block: d_w d_x rounds once, the fma once (Q4_K: twice each, and the sum of its
            // scaled sub-blocks converts to f32 once); the bias's addition once
            EXPECT_NEAR(y.at({r, c}), expected, static_cast<double>(k / 32 + 8) * std::ldexp(1.0, -24) * magnitude)
                << "row " << c << " x row " << r;
          }
        }
      }
}

TEST(QuantPanels, TheTilesSumsHoldTheLargestValues) {
  // every value and 6-bit scale at its largest (Q8_0 at -127) and x constant, which quantises to
  // 127 (q8_0, q8_1) or -128 (q8_k) everywhere: the AVX2 tiles' 16-bit sums of a block's or
  // sub-block's lines at their bound (2^15 would overflow), each ISA's tiles equal to the portable one
  std::mt19937 rng(12);
  for (QuantType type : kPanelTypes) {
    const int64_t k = 512, n = 40;
    QuantizedTensor w = random_weight(type, n, k, rng);
    auto* bytes = static_cast<unsigned char*>(w.mutable_data());
    const size_t block_bytes = static_cast<size_t>(quant_type_info(type).block_bytes);
    const std::vector<size_t> scales = testing::scale_offsets(type);
    for (size_t i = 0; i < w.nbytes(); ++i) {
      const size_t at = i % block_bytes;
      if (std::none_of(scales.begin(), scales.end(), [&](size_t off) { return at == off || at == off + 1; }))
        bytes[i] = type == QuantType::q8_0 ? 0x81 : 0xff;
    }
    const QuantizedTensor panels = with_panels(w);
    for (const float value : {1.0f, -1.0f}) {
      const Tensor x = full({2, k}, value);
      const std::vector<float> portable = values(gemv(x, panels, true));
      for (cpu::Int8Isa isa : testing::all_int8_isas())
        EXPECT_EQ(testing::on_int8_isa(isa, [&] { return values(gemv(x, panels, false)); }), portable)
            << quant_type_name(type) << " " << cpu::int8_isa_name(isa) << " x " << value;
    }
  }
}

TEST(QuantPanels, SeveralProductsTogetherEqualEachAloneOnAnyThreadCount) {
  std::mt19937 rng(7);
  Generator gen(7);
  for (QuantType type : kPanelTypes) {
    const int64_t k = 512;
    const QuantizedTensor q = with_panels(random_weight(type, 64, k, rng)), kv = with_panels(random_weight(type, 17, k, rng));
    const Tensor x = randn({2, k}, gen);
    const std::vector<const QuantizedTensor*> weights{&q, &kv};
    const std::vector<Tensor> biases{Tensor(), Tensor()};
    for (int threads : {1, 2, 3}) {
      const auto together = testing::at_threads(threads, [&] {
        NoGradGuard no_grad;
        return linear_together(x, weights, biases);
      });
      EXPECT_EQ(values(together[0]), values(gemv(x, q, false))) << quant_type_name(type) << " threads " << threads;
      EXPECT_EQ(values(together[1]), values(gemv(x, kv, false))) << quant_type_name(type) << " threads " << threads;
    }
  }
}

TEST(QuantPanels, PrefillOnPanelsEqualsPrefillOnRowsBitForBit) {
  std::mt19937 rng(8);
  Generator gen(8);
  for (QuantType type : kPanelTypes)
    for (auto [m, n, k] : std::vector<std::array<int64_t, 3>>{{17, 16, 64}, {49, 33, 96}, {130, 70, 512}}) {
      if (cpu::activation_block(type) == 256) k = 256 * (k / 64);
      const QuantizedTensor rows = random_weight(type, n, k, rng), panels = with_panels(rows);
      const Tensor x = randn({m, k}, gen), bias = randn({n}, gen);
      for (cpu::Int8Isa isa : {cpu::Int8Isa::avx512_vnni, cpu::Int8Isa::avx2}) {
        if (!cpu::int8_isa_available(isa)) continue;
        if (isa == cpu::Int8Isa::avx2 && !testing::on_int8_isa(isa, [&] { return cpu::panels_pay(type); })) continue;  // AVX2's panels
        const auto on = [&](const QuantizedTensor& w) { return testing::on_int8_isa(isa, [&] { return values(linear(x, w, bias)); }); };
        EXPECT_EQ(on(panels), on(rows)) << quant_type_name(type) << " " << cpu::int8_isa_name(isa) << " m " << m << " n " << n
                                        << " k " << k;
      }
    }
}

// A row read back from the panels is the file's row byte for byte (every bit of random blocks,
// Q4_K's packed 6-bit scales included, the last panel partial), and the embedding's look-up of a
// weight with panels, which reads them, gives the rows' values to the bit.
TEST(QuantPanels, ARowReadBackFromThePanelsIsTheFilesRow) {
  std::mt19937 rng(11);
  for (QuantType type : kPanelTypes)
    for (const int64_t k : {96, 512}) {
      if (k % quant_type_info(type).block_size != 0) continue;
      SCOPED_TRACE(std::string(quant_type_name(type)) + " k " + std::to_string(k));
      const QuantizedTensor rows = random_weight(type, 37, k, rng), panels = with_panels(rows);
      std::vector<unsigned char> row(rows.row_bytes());
      for (int64_t r = 0; r < rows.rows(); ++r) {
        cpu::quant_traits(type).unpack_panel_row(panels.panels()->data(), k, r, row.data());
        ASSERT_EQ(std::memcmp(row.data(), rows.row(r), row.size()), 0) << "row " << r;
      }
      const Tensor ids = Tensor::from_vector<int64_t>({36, 0, 17, 16, 15, 36}, {6});
      const Tensor a = embedding(rows, ids), b = embedding(panels, ids);
      EXPECT_EQ(std::memcmp(a.data<float>(), b.data<float>(), sizeof(float) * static_cast<size_t>(a.numel())), 0);
    }
}

TEST(QuantPanels, MadeAtLoadWhereThePanelsPayOnTheCpusOwnIsa) {
  std::mt19937 rng(9);
  // by default wherever the CPU has AVX512-VNNI, whatever the weights' size; NANOFORMER_PANELS forces them
  for (const char* setting : {"", "0", "1"}) {
    const testing::ScopedPanels panels(setting);
    for (QuantType type : {QuantType::q8_0, QuantType::q4_0, QuantType::q4_1, QuantType::q5_0, QuantType::q5_1, QuantType::q4_k,
                           QuantType::q5_k, QuantType::q6_k}) {
      SCOPED_TRACE(std::string(quant_type_name(type)) + " NANOFORMER_PANELS=" + setting);
      const QuantizedTensor w = with_kernel_layout(random_weight(type, 20, 256, rng));
      EXPECT_EQ(w.panels() != nullptr, cpu::panels_pay(type));
      // on AVX2 (and AVX-VNNI) every type but Q8_0, whose AVX2 tiles read the panels
      const bool on_avx2 = setting != std::string("0") && type != QuantType::q8_0;
      // (the CPU's own ISA: a CPU with AVX2 alone takes AVX2's rule)
      const bool expected = cpu::int8_isa() == cpu::Int8Isa::avx512_vnni ? setting != std::string("0") : on_avx2;
      EXPECT_EQ(cpu::panels_pay(type), expected);
      EXPECT_EQ(testing::on_int8_isa(cpu::Int8Isa::avx2, [&] { return cpu::panels_pay(type); }), on_avx2);
    }
  }
  const testing::ScopedPanels wrong("yes");
  EXPECT_THROW_WITH(cpu::panels_pay(QuantType::q8_0), "NANOFORMER_PANELS=yes: expected 0 or 1");
}

}  // namespace
}  // namespace nf
