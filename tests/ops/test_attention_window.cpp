// scaled_dot_product_attention with a sliding window (AttentionOptions::window): the fused kernel
// (tiles, and decoding's few-query kernel) equals the plain composition with the window mask,
// forward and backward, for windows 1, 7, 64 and 128 over lengths off the tile size, Tq == Tk and a
// cached suffix, GQA, every other option combined; the weights hold exactly the window; keys no
// query's window reaches are never read; f64 finite-difference gradients; errors.
#include <cmath>
#include <string>

#include "ops/cpu/attention/attention.h"         // the tile sizes, to choose lengths across tile borders
#include "ops/cpu/attention/attention_decode.h"  // which geometries decoding's kernel takes
#include "support/attention_parity.h"
#include "support/testing.h"

namespace nf {
namespace {

using testing::random_leaf;
using testing::AttentionResult;
using testing::expect_fused_equals_plain;
using testing::kTile;
using testing::random_mask;
using testing::randn_leaf;
using testing::run_attention;

struct Geometry {
  const char* name;
  int64_t B, H, Hkv, Tq, Tk, D;
};

// Lengths off every multiple of the tile sizes; the decode_* ones go to decoding's kernel.
const Geometry kGeometries[] = {
    {"self_gqa", 2, 4, 2, 2 * kTile + 37, 2 * kTile + 37, 16},
    {"self_mha_short", 1, 2, 2, 45, 45, 8},
    {"cached_suffix_gqa", 1, 6, 2, kTile + 5, 2 * kTile + 70, 8},
    {"more_queries_than_keys", 1, 2, 1, kTile + 10, 70, 8},
    {"decode_one_token_gqa", 2, 8, 2, 1, kTile + 9, 64},
    {"decode_chunk_mqa", 1, 4, 1, 3, 2 * kTile + 22, 32},
    {"decode_d24", 1, 2, 1, 5, 150, 24},
};
const int64_t kWindows[] = {1, 7, 64, 128};

class WindowFusedVsPlain : public ::testing::TestWithParam<std::tuple<Geometry, int64_t>> {
 protected:
  Tensor q_, k_, v_;
  Geometry g_{};
  int64_t window_ = 0;
  void SetUp() override {
    g_ = std::get<0>(GetParam());
    window_ = std::get<1>(GetParam());
    q_ = randn_leaf({g_.B, g_.H, g_.Tq, g_.D}, 1);
    k_ = randn_leaf({g_.B, g_.Hkv, g_.Tk, g_.D}, 2);
    v_ = randn_leaf({g_.B, g_.Hkv, g_.Tk, g_.D}, 3);
  }
};

TEST_P(WindowFusedVsPlain, Window) { expect_fused_equals_plain(q_, k_, v_, {.causal = true, .window = window_}); }

TEST_P(WindowFusedVsPlain, WithKeyPaddingAndBoolMask) {
  const AttentionOptions options{.causal = true,
                                 .window = window_,
                                 .mask = random_mask({g_.H, g_.Tq, g_.Tk}, 4, 0.8),
                                 .key_padding = random_mask({g_.B, g_.Tk}, 5, 0.7)};
  expect_fused_equals_plain(q_, k_, v_, options);
}

TEST_P(WindowFusedVsPlain, WithAdditiveMaskGradientAndScale) {
  const AttentionOptions options{
      .causal = true, .window = window_, .mask = randn_leaf({g_.B, 1, g_.Tq, g_.Tk}, 6), .scale = 0.3};
  expect_fused_equals_plain(q_, k_, v_, options);
}

TEST_P(WindowFusedVsPlain, WithDropout) {
  expect_fused_equals_plain(q_, k_, v_, {.causal = true, .window = window_, .dropout_p = 0.3}, 17);
}

TEST_P(WindowFusedVsPlain, F64) {
  const Tensor q = random_leaf({g_.B, g_.H, g_.Tq, g_.D}, 7), k = random_leaf({g_.B, g_.Hkv, g_.Tk, g_.D}, 8),
               v = random_leaf({g_.B, g_.Hkv, g_.Tk, g_.D}, 9);
  expect_fused_equals_plain(q, k, v, {.causal = true, .window = window_, .key_padding = random_mask({g_.B, g_.Tk}, 10, 0.8)});
}

INSTANTIATE_TEST_SUITE_P(Attention, WindowFusedVsPlain,
                         ::testing::Combine(::testing::ValuesIn(kGeometries), ::testing::ValuesIn(kWindows)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) + "_w" +
                                  std::to_string(std::get<1>(info.param));
                         });

TEST(AttentionWindow, BackwardReachesTheLastQueryOfEachKeyTile) {
  // With Tq == Tk the last query that sees key tile [j0, j0 + kKeyBlock) is j0 + kKeyBlock - 2 + window:
  // windows 2 and kQueryBlock + 2 make it the first query of a query tile, the edge of the range
  // of query tiles the backward visits for a key tile.
  static_assert(cpu::kKeyBlock % cpu::kQueryBlock == 0);
  const Tensor q = randn_leaf({1, 2, 3 * cpu::kKeyBlock + 5, 8}, 24), k = randn_leaf({1, 1, 3 * cpu::kKeyBlock + 5, 8}, 25),
               v = randn_leaf({1, 1, 3 * cpu::kKeyBlock + 5, 8}, 26);
  for (const int64_t window : {int64_t{2}, cpu::kQueryBlock + 2}) {
    SCOPED_TRACE("window " + std::to_string(window));
    expect_fused_equals_plain(q, k, v, {.causal = true, .window = window});
  }
}

TEST(AttentionWindow, DecodeGeometriesTakeTheDecodeKernel) {
  for (const Geometry& g : kGeometries) {
    AttentionProblem p;
    p.B = g.B, p.H = g.H, p.Hkv = g.Hkv, p.Tq = g.Tq, p.Tk = g.Tk, p.D = g.D, p.causal = true, p.window = 7;
    EXPECT_EQ(cpu::attention_decode_applies(p, DType::f32), std::string(g.name).starts_with("decode")) << g.name;
  }
}

// ---- what the window means ----

TEST(AttentionWindow, WeightsCoverExactlyTheWindowMostRecentKeys) {
  // query i of a 4-query suffix over 9 keys has diagonal key d = i + 5 and sees keys d - 2 .. d
  const int64_t Tq = 4, Tk = 9, window = 3;
  const Tensor q = randn_leaf({1, 2, Tq, 4}, 30), k = randn_leaf({1, 1, Tk, 4}, 31), v = randn_leaf({1, 1, Tk, 4}, 32);
  const AttentionOptions options{.causal = true, .window = window};
  const AttentionWithWeights r = scaled_dot_product_attention_with_weights(q, k, v, options);
  for (int64_t h = 0; h < 2; ++h) {
    for (int64_t i = 0; i < Tq; ++i) {
      const int64_t d = i + Tk - Tq;
      for (int64_t j = 0; j < Tk; ++j) {
        const bool seen = d - window < j && j <= d;
        EXPECT_EQ(r.weights.at({0, h, i, j}) > 0.0, seen) << "head " << h << " query " << i << " key " << j;
      }
    }
  }
  EXPECT_TENSOR_CLOSE(r.out, scaled_dot_product_attention(q, k, v, options), 1e-6, 1e-5);
}

TEST(AttentionWindow, WindowAtLeastTheKeysIsCausal) {
  const Tensor q = randn_leaf({1, 2, 70, 8}, 33), k = randn_leaf({1, 2, 90, 8}, 34), v = randn_leaf({1, 2, 90, 8}, 35);
  const AttentionResult causal = run_attention(AttentionKernel::fused, q, k, v, {.causal = true});
  const AttentionResult windowed = run_attention(AttentionKernel::fused, q, k, v, {.causal = true, .window = 90});
  EXPECT_TENSOR_CLOSE(windowed.out, causal.out, 1e-6, 1e-5);
  EXPECT_TENSOR_CLOSE(windowed.dk, causal.dk, 1e-6, 1e-5);
}

TEST(AttentionWindow, KeysOutsideEveryWindowAreNeverRead) {
  // A cached suffix: the last 70 of 1000 positions, window 7, so keys 0 .. 923 fall outside every
  // query's window. Poisoned with NaN they must change nothing: the fused kernel skips them (a
  // kernel that computed them and masked after would multiply NaN values by zero weights).
  const int64_t Tq = 70, Tk = 1000, window = 7, unseen = Tk - Tq - window + 1;
  for (const int64_t tq : {Tq, int64_t{1}, int64_t{3}}) {  // the tiled kernel, and decoding's
    SCOPED_TRACE("Tq = " + std::to_string(tq));
    const AttentionOptions options{.causal = true, .window = window};
    const Tensor q = randn_leaf({1, 4, tq, 16}, 36), k = randn_leaf({1, 2, Tk, 16}, 37), v = randn_leaf({1, 2, Tk, 16}, 38);
    const AttentionResult clean = run_attention(AttentionKernel::fused, q, k, v, options);
    // the same inputs with NaN in every key and value no query's window reaches (a shorter suffix reaches fewer)
    Tensor poisoned_k = k.detach().clone(), poisoned_v = v.detach().clone();
    for (int64_t hk = 0; hk < 2; ++hk) {
      for (int64_t j = 0; j < unseen + (Tq - tq); ++j) {
        for (int64_t d = 0; d < 16; ++d) {
          poisoned_k.set({0, hk, j, d}, std::nan(""));
          poisoned_v.set({0, hk, j, d}, std::nan(""));
        }
      }
    }
    const AttentionResult dirty = run_attention(AttentionKernel::fused, q, poisoned_k.set_requires_grad(), poisoned_v.set_requires_grad(), options);
    EXPECT_TENSOR_CLOSE(dirty.out, clean.out, 0.0, 0.0);
    EXPECT_TENSOR_CLOSE(dirty.dq, clean.dq, 0.0, 0.0);
    EXPECT_TENSOR_CLOSE(dirty.dk, clean.dk, 0.0, 0.0);
    EXPECT_TENSOR_CLOSE(dirty.dv, clean.dv, 0.0, 0.0);
  }
}

// ---- f64 gradient checks of the fused kernel ----

TEST(AttentionWindowGradcheck, GqaSuffixAcrossQueryAndKeyTiles) {
  // 70 queries after 63 cached keys, window 7: keys 57 .. 132, across the first query and key tiles' ends
  const Tensor q = random_leaf({1, 2, cpu::kQueryBlock + 6, 2}, 40), k = random_leaf({1, 1, cpu::kKeyBlock + 5, 2}, 41),
               v = random_leaf({1, 1, cpu::kKeyBlock + 5, 2}, 42);
  EXPECT_GRAD_OK(
      [](const std::vector<Tensor>& x) {
        return scaled_dot_product_attention(x[0], x[1], x[2], {.causal = true, .window = 7});
      },
      {q, k, v});
}

TEST(AttentionWindowGradcheck, CachedSuffixWithMasksAndDropout) {
  const Tensor q = random_leaf({2, 2, 4, 3}, 43), k = random_leaf({2, 1, 11, 3}, 44), v = random_leaf({2, 1, 11, 3}, 45);
  const Tensor bias = random_leaf({2, 1, 4, 11}, 46);
  const Tensor padding = random_mask({2, 11}, 47, 0.8);
  EXPECT_GRAD_OK(
      [&](const std::vector<Tensor>& x) {
        Generator gen(5);  // the same dropout mask at every evaluation
        return scaled_dot_product_attention(x[0], x[1], x[2], {.causal = true, .window = 3, .mask = x[3]}) +
               scaled_dot_product_attention(x[0], x[1], x[2],
                                            {.causal = true, .window = 5, .key_padding = padding, .dropout_p = 0.3,
                                             .scale = 0.7},
                                            gen);
      },
      {q, k, v, bias});
}

// ---- errors ----

TEST(AttentionWindow, ErrorsNameTheOption) {
  const Tensor q = zeros({1, 2, 5, 8}), k = zeros({1, 2, 6, 8});
  EXPECT_THROW_WITH(scaled_dot_product_attention(q, k, k, {.window = 4}), "scaled_dot_product_attention",
                    "window = 4", "causal");
  EXPECT_THROW_WITH(scaled_dot_product_attention(q, k, k, {.causal = true, .window = -2}), "window = -2", "negative");
  EXPECT_THROW_WITH(scaled_dot_product_attention_with_weights(q, k, k, {.window = 3}), "window = 3", "causal");
}

}  // namespace
}  // namespace nf
