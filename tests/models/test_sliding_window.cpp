// Sliding-window attention in a decoder LM: config keys sliding_window and window_pattern (nanochat's
// "SSSL" tiling, the last layer full) or window_layers (one letter per layer, Qwen2's), a decode
// through the ring-buffered cache equal to the full
// forward with the window at every step (prefill in chunks the ring takes, one token per step, a
// chunk after a prefix, past several ring unrolls), the cache's memory independent of the context,
// generation past the context of a windowed model, and bad keys named.
#include <cstdio>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/infer/session.h"
#include "nanoformer/models/decoder_lm.h"
#include "nanoformer/models/model.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/reduce.h"
#include "nanoformer/ops/view.h"
#include "support/testing.h"

namespace nf::models {
namespace {

DecoderLMConfig windowed(nn::PositionKind position, int64_t window, const std::string& pattern, int64_t layers = 3) {
  DecoderLMConfig c = preset_config("gpt-mini");
  c.vocab_size = 64, c.dim = 32, c.n_layers = layers, c.n_heads = 4, c.n_kv_heads = 2, c.head_dim = 0;
  c.max_seq_len = 64, c.mlp_hidden = 0, c.mlp_multiple_of = 16;
  c.position = position, c.sliding_window = window, c.window_pattern = pattern;
  c.init = InitScheme::normal, c.init_std = 0.2;
  return c;
}

double max_abs_error(const Tensor& a, const Tensor& b) { return max(abs(a - b)).item(); }

TEST(SlidingWindow, PatternTilesTheLayersAndTheLastIsFull) {
  const DecoderLMConfig c = windowed(nn::PositionKind::rope, 5, "SSL", 7);
  std::vector<int64_t> windows;
  for (int64_t i = 0; i < c.n_layers; ++i) windows.push_back(layer_window(c, i));
  EXPECT_EQ(windows, (std::vector<int64_t>{5, 5, 0, 5, 5, 0, 0}));
  EXPECT_EQ(layer_window(windowed(nn::PositionKind::rope, 5, ""), 2), 5);  // no pattern: every layer (Mistral)
  DecoderLM model(c);
  EXPECT_EQ((*model.layers)[0]->attn->config().window, 5);
  EXPECT_EQ((*model.layers)[6]->attn->config().window, 0);
  const DecoderLMConfig back = parse_model_config(model_config_to_json(c));
  EXPECT_EQ(back.sliding_window, 5);
  EXPECT_EQ(back.window_pattern, "SSL");
}

// Feeds 40 tokens through the cache in chunks and compares every step's logits with the full forward.
double ring_decode_error(const DecoderLMConfig& config) {
  DecoderLM model(config);
  model.eval();
  NoGradGuard no_grad;
  Generator gen(7);
  const Tensor ids = randint(0, config.vocab_size, {2, 40}, gen);
  const Tensor full = model.forward(ids).logits;
  nn::KVCache cache = model.make_cache(2);
  double error = 0;
  int64_t at = 0;
  for (const int64_t n : {9, 1, 1, 1, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 5, 1, 1, 1, 1, 1, 1, 1, 1}) {
    error = std::max(error, max_abs_error(model.forward_cached(narrow(ids, 1, at, n), cache), narrow(full, 1, at, n)));
    at += n;
  }
  EXPECT_EQ(at, 40);
  return error;
}

TEST(SlidingWindow, RingDecodeEqualsTheFullForwardWithTheWindow) {
  const std::vector<std::pair<const char*, DecoderLMConfig>> cases = {
      {"rope, window 5, SSL", windowed(nn::PositionKind::rope, 5, "SSL")},
      {"rope, window 1, every layer", windowed(nn::PositionKind::rope, 1, "")},
      {"alibi, window 4, SL", windowed(nn::PositionKind::alibi, 4, "SL")},
      {"learned, window 7, every layer", windowed(nn::PositionKind::learned, 7, "")},
  };
  for (const auto& [label, config] : cases) {
    const double error = ring_decode_error(config);
    std::printf("  %-32s max abs logit error %.2e\n", label, error);
    EXPECT_LE(error, 1e-5) << label;
  }
  // the window changes what the model computes (so the comparison above is not vacuous)
  DecoderLMConfig full = windowed(nn::PositionKind::rope, 5, "SSL");
  DecoderLMConfig none = full;
  none.sliding_window = 0, none.window_pattern = "";
  DecoderLM a(full), b(none);
  const Tensor ids = randint(0, 64, {1, 20}, default_generator());
  EXPECT_GT(max_abs_error(a.forward(ids).logits, b.forward(ids).logits), 1e-3);
}

// window_layers names each layer exactly, the last one too (Qwen2's layer_types: the layers from
// max_window_layers on are windowed), and survives the config's JSON.
TEST(SlidingWindow, WindowLayersNameEachLayerExactly) {
  DecoderLMConfig c = windowed(nn::PositionKind::rope, 5, "", 4);
  c.window_layers = "LSLS";
  std::vector<int64_t> windows;
  for (int64_t i = 0; i < c.n_layers; ++i) windows.push_back(layer_window(c, i));
  EXPECT_EQ(windows, (std::vector<int64_t>{0, 5, 0, 5}));
  DecoderLM model(c);
  EXPECT_EQ((*model.layers)[3]->attn->config().window, 5);
  EXPECT_EQ(parse_model_config(model_config_to_json(c)).window_layers, "LSLS");
  EXPECT_LT(ring_decode_error(c), 1e-4);
}

TEST(SlidingWindow, TheCachesMemoryIsOfTheWindowNotTheContext) {
  DecoderLMConfig c = windowed(nn::PositionKind::rope, 8, "");
  c.max_seq_len = 4096;
  DecoderLM model(c);
  const nn::KVCache small = model.make_cache(1, 256), large = model.make_cache(1, 4096);
  EXPECT_EQ(small.bytes(), large.bytes());
  EXPECT_EQ(large.layer(0).keys.columns(), 16);  // a ring of twice the window
  EXPECT_EQ(large.bytes(), 2 * 3 * 2 * 16 * 8 * 4);  // keys and values, 3 layers, 2 KV heads, head_dim 8, f32
}

TEST(SlidingWindow, AWindowedModelGeneratesPastItsContext) {
  DecoderLMConfig c = windowed(nn::PositionKind::rope, 4, "SL");
  c.max_seq_len = 16;
  DecoderLM model(c);
  infer::Session session(model);
  infer::Sampler sampler({.temperature = 1.0, .seed = 5});
  const infer::GenerationResult r = session.generate({1, 2, 3}, sampler, {.max_new_tokens = 48});
  EXPECT_EQ(r.reason, infer::StopReason::max_new_tokens);
  EXPECT_EQ(r.tokens.size(), 48u);
}

TEST(SlidingWindow, BadKeysAreNamed) {
  DecoderLMConfig c = windowed(nn::PositionKind::rope, -1, "");
  EXPECT_THROW_WITH(validate_model_config(c, "w.json"), "w.json", "sliding_window", "-1");
  c = windowed(nn::PositionKind::rope, 4, "SXL");
  EXPECT_THROW_WITH(validate_model_config(c, "w.json"), "window_pattern", "SXL", "only S");
  c = windowed(nn::PositionKind::rope, 0, "SSSL");
  EXPECT_THROW_WITH(validate_model_config(c, "w.json"), "window_pattern", "needs sliding_window > 0");
  c = windowed(nn::PositionKind::rope, 4, "", 3);
  c.window_layers = "LS";
  EXPECT_THROW_WITH(validate_model_config(c, "w.json"), "window_layers", "\"LS\"", "one letter per layer");
  c.window_layers = "LSX";
  EXPECT_THROW_WITH(validate_model_config(c, "w.json"), "window_layers", "only S");
  c = windowed(nn::PositionKind::rope, 4, "SL", 3);
  c.window_layers = "LSS";
  EXPECT_THROW_WITH(validate_model_config(c, "w.json"), "window_layers", "no window_pattern");
}

}  // namespace
}  // namespace nf::models
