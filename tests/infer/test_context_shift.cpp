// Generation past the context (infer/cached_sequence.h): a Session writes 3x max_seq_len tokens for a
// RoPE, an ALiBi and a learned-position model; after a context shift the next logits equal a
// fresh forward over the kept tokens at their new positions: RoPE keys rotated in place (also with
// QK-norm and GQA), ALiBi keys left as they are, learned positions re-encoded. (With one layer the
// shifted keys and values are exactly those a fresh forward computes; deeper, the kept tokens'
// hidden states remember what was dropped, as in llama.cpp's shift, so only learned positions,
// which re-encode, are compared at depth 2.) A cache of q8_0 or bf16 keys shifts as well (keys
// dequantised, rotated, quantised again), within its rounding. A windowed model decodes past its
// window from a ring buffer. --keep that holds the whole context stops with "context full".
#include <cstdio>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/infer/cached_sequence.h"
#include "nanoformer/infer/session.h"
#include "nanoformer/models/decoder_lm.h"
#include "nanoformer/models/model.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/reduce.h"
#include "nanoformer/ops/view.h"
#include "support/testing.h"

namespace nf::infer {
namespace {

models::DecoderLMConfig tiny(nn::PositionKind position, int64_t n_layers, int64_t n_kv_heads = 0, bool qk_norm = false) {
  models::DecoderLMConfig c = models::preset_config("gpt-mini");
  c.vocab_size = 64, c.dim = 32, c.n_layers = n_layers, c.n_heads = 4, c.n_kv_heads = n_kv_heads, c.head_dim = 0;
  c.max_seq_len = 16, c.mlp_hidden = 0, c.mlp_multiple_of = 16;
  c.position = position, c.qk_norm = qk_norm;
  c.init = models::InitScheme::normal, c.init_std = 0.2;
  return c;
}

std::vector<int64_t> tokens(int64_t n, int64_t seed) {
  std::vector<int64_t> t;
  for (int64_t i = 0; i < n; ++i) t.push_back((i * 7 + seed * 13) % 64);
  return t;
}

// Fills a 16-position cache of cache_type, shifts it (keep 3: positions 3 .. 8 dropped), feeds one
// more token; returns the largest difference of its logits from a fresh forward over the kept
// tokens and it, and the largest of those logits.
std::pair<double, double> shift_error_and_scale(const models::DecoderLMConfig& config,
                                                QuantType cache_type = QuantType::f32) {
  models::DecoderLM model(config);
  model.eval();
  NoGradGuard no_grad;
  CachedSequence sequence(model, 0, {.keep = 3}, cache_type);
  const std::vector<int64_t> first = tokens(16, 1);
  sequence.feed(first);
  EXPECT_TRUE(sequence.make_room(1));
  std::vector<int64_t> kept(first.begin(), first.begin() + 3);
  kept.insert(kept.end(), first.begin() + 3 + 6, first.end());  // (16 - 3) / 2 = 6 dropped
  EXPECT_EQ(sequence.tokens(), kept);
  const Tensor next = sequence.feed({42});
  kept.push_back(42);
  const Tensor fresh = model.forward(Tensor::from_vector(kept, {1, static_cast<int64_t>(kept.size())})).logits;
  const Tensor last = select(select(fresh, 0, 0), 0, fresh.size(1) - 1);
  return {max(abs(reshape(next, {-1}) - last)).item(), max(abs(last)).item()};
}

double shift_error(const models::DecoderLMConfig& config) { return shift_error_and_scale(config).first; }

TEST(ContextShift, NextLogitsEqualAFreshForwardOverTheKeptTokens) {
  const std::vector<std::pair<const char*, models::DecoderLMConfig>> cases = {
      {"rope MHA", tiny(nn::PositionKind::rope, 1)},
      {"rope GQA + QK-norm", tiny(nn::PositionKind::rope, 1, 2, true)},
      {"alibi", tiny(nn::PositionKind::alibi, 1)},
      {"learned, 2 layers", tiny(nn::PositionKind::learned, 2)},
      {"sinusoidal, 2 layers", tiny(nn::PositionKind::sinusoidal, 2)},
  };
  for (const auto& [label, config] : cases) {
    const double error = shift_error(config);
    std::printf("  %-22s max abs logit error after a shift %.2e\n", label, error);
    EXPECT_LE(error, 1e-5) << label;
  }
}

// The bound is the cache type's rounding (tests/models/test_cached_decoding.cpp), 5 times d / 2 of
// the logits' largest magnitude: the shifted keys are rounded twice (stored, then stored again
// rotated), and without the rotation the RoPE model's error is many times that.
TEST(ContextShift, AQuantisedCacheShiftsItsKeysWithinItsRounding) {
  for (const bool rope : {true, false}) {
    models::DecoderLMConfig c = tiny(rope ? nn::PositionKind::rope : nn::PositionKind::alibi, 1, 2, rope);
    c.head_dim = 32;  // a whole q8_0 block per row
    for (const auto& [type, bound] : {std::pair{QuantType::q8_0, 5 / 254.0}, std::pair{QuantType::bf16, 5 * 0x1p-9}}) {
      const auto [error, scale] = shift_error_and_scale(c, type);
      std::printf("  %-22s %-5s max abs logit error after a shift %.2e (logits up to %.2f)\n",
                  rope ? "rope GQA + QK-norm" : "alibi GQA", quant_type_name(type), error, scale);
      EXPECT_LE(error, bound * scale) << quant_type_name(type);
    }
  }
}

TEST(ContextShift, SessionsGenerateThreeTimesTheContext) {
  for (const auto position : {nn::PositionKind::rope, nn::PositionKind::alibi, nn::PositionKind::learned}) {
    models::DecoderLM model(tiny(position, 2));
    Session session(model, 0, {.keep = 2});
    Sampler sampler({.temperature = 1.0, .seed = 3});
    const GenerationResult r = session.generate({1, 2, 3}, sampler, {.max_new_tokens = 48});
    EXPECT_EQ(r.reason, StopReason::max_new_tokens) << nn::position_kind_name(position);
    EXPECT_EQ(r.tokens.size(), 48u) << nn::position_kind_name(position);
    EXPECT_LE(session.cached_tokens().size(), 16u);
    EXPECT_EQ(session.cached_tokens()[0], 1);  // --keep 2 kept the prompt's start
    EXPECT_EQ(session.cached_tokens()[1], 2);
  }
}

TEST(ContextShift, KeepThatHoldsTheWholeContextStops) {
  models::DecoderLM model(tiny(nn::PositionKind::rope, 1));
  model.eval();
  CachedSequence sequence(model, 8, {.keep = 7});
  sequence.feed(tokens(8, 2));
  EXPECT_FALSE(sequence.make_room(2));  // 7 kept leave room for one more token, not two
  EXPECT_EQ(sequence.tokens().size(), 8u);
  EXPECT_TRUE(sequence.make_room(1));
  EXPECT_THROW_WITH(CachedSequence(model, 8, {.keep = -1}), "--keep -1");
  EXPECT_THROW_WITH(CachedSequence(model, 8, {.keep = 8}), "--keep 8 must be less than --context 8");
  EXPECT_EQ(std::string(stop_reason_name(StopReason::context_full)), "context full");
}

}  // namespace
}  // namespace nf::infer
