// Decoding with the KV cache against the full forward: every preset family of configs/ (shrunk to
// tiny random-weight models), each positional scheme a decoder takes, GQA/MQA and MoE give the
// same logits at every step (prefill, one token per step, chunks after a prefix), after a
// rollback. Continuous batching (sequences
// in their own caches, joining and leaving at different steps, decoded together) gives each
// sequence the logits and greedy tokens it gets alone. Greedy generation with the cache equals
// greedy by recomputation. Caches of type f16, bf16 and q8_0 decode the f32 cache's greedy tokens
// with logits within their rounding (q4_0: its logits within theirs), and count their bytes. Bad input: contexts and batches beyond
// the cache.
#include <algorithm>
#include <cstdio>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/infer/greedy.h"
#include "nanoformer/infer/sampler.h"
#include "nanoformer/models/decoder_lm.h"
#include "nanoformer/models/model.h"
#include "nanoformer/models/quantize.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/join.h"
#include "nanoformer/ops/reduce.h"
#include "nanoformer/ops/topk.h"
#include "nanoformer/ops/view.h"
#include "support/testing.h"

namespace nf::models {
namespace {

constexpr double kTolerance = 1e-5;  // max abs logit error, fp32

// A preset shrunk to a tiny model: dim 32, 2 layers, 4 heads (the preset's KV-head ratio), vocab
// 64, 32 positions; weights drawn with std 0.2 so the logits spread (nanochat's init zeros the head).
DecoderLMConfig tiny_preset(const std::string& name) {
  DecoderLMConfig c = preset_config(name);
  const int64_t kv_heads = c.n_kv_heads == 0 ? 4 : std::max<int64_t>(1, 4 * c.n_kv_heads / c.n_heads);
  c.vocab_size = 64, c.dim = 32, c.n_layers = 2, c.n_heads = 4, c.n_kv_heads = kv_heads, c.head_dim = 0;
  c.max_seq_len = 32, c.mlp_hidden = 0, c.mlp_multiple_of = 16;
  c.init = InitScheme::normal, c.init_std = 0.2;
  return c;
}

// A tiny config with a chosen positional scheme and KV heads.
DecoderLMConfig tiny_with(nn::PositionKind position, int64_t n_kv_heads = 0) {
  DecoderLMConfig c = tiny_preset("gpt-mini");
  c.position = position;
  c.n_kv_heads = n_kv_heads;
  return c;
}

double max_abs_error(const Tensor& a, const Tensor& b) { return max(abs(a - b)).item(); }

Tensor random_ids(int64_t batch, int64_t t, int64_t vocab, uint64_t seed) {
  Generator gen(seed);
  return randint(0, vocab, {batch, t}, gen);
}

Tensor ids_from(const std::vector<int64_t>& tokens) {
  Tensor ids = Tensor::empty({1, static_cast<int64_t>(tokens.size())}, DType::i64);
  std::copy(tokens.begin(), tokens.end(), ids.data<int64_t>());
  return ids;
}

// Feeds ids (B, T) to the cache in chunks of the given sizes and returns the largest difference
// of the cached logits from the full forward's.
double cached_error(DecoderLM& model, const Tensor& ids, const std::vector<int64_t>& chunks) {
  NoGradGuard no_grad;
  const Tensor full = model.forward(ids).logits;
  nn::KVCache cache = model.make_cache(ids.size(0), ids.size(1));
  double error = 0;
  int64_t column = 0;
  for (int64_t n : chunks) {
    const Tensor logits = model.forward_cached(narrow(ids, 1, column, n), cache);
    error = std::max(error, max_abs_error(logits, narrow(full, 1, column, n)));
    column += n;
  }
  EXPECT_EQ(cache.length(), column);
  return error;
}

// Prefill 6, then one token per step for 4, then chunks of 3 and 2 after that prefix.
double decode_error(const DecoderLMConfig& config, int64_t batch = 1) {
  DecoderLM model(config);
  model.eval();
  return cached_error(model, random_ids(batch, 16, config.vocab_size, 7), {6, 1, 1, 1, 1, 3, 2, 1});
}

TEST(CachedDecoding, EveryPresetFamilyMatchesTheFullForward) {
  const std::vector<std::string> names = preset_names_of(DecoderLM::kArchitecture);
  EXPECT_GE(names.size(), 7u);  // gpt-mini, gpt2-124m, llama2c, minimind2 (small, dense, MoE), nanochat
  for (const std::string& name : names) {
    const double error = decode_error(tiny_preset(name));
    std::printf("  %-22s max abs logit error %.2e\n", name.c_str(), error);
    EXPECT_LE(error, kTolerance) << name;
  }
}

TEST(CachedDecoding, EveryPositionalSchemeAndHeadLayoutMatchesTheFullForward) {
  const std::vector<std::pair<const char*, DecoderLMConfig>> cases = {
      {"learned", tiny_with(nn::PositionKind::learned)},
      {"sinusoidal", tiny_with(nn::PositionKind::sinusoidal)},
      {"none", tiny_with(nn::PositionKind::none)},
      {"alibi", tiny_with(nn::PositionKind::alibi)},
      {"alibi GQA", tiny_with(nn::PositionKind::alibi, 2)},
      {"rope MHA", tiny_with(nn::PositionKind::rope)},
      {"rope GQA", tiny_with(nn::PositionKind::rope, 2)},
      {"rope MQA", tiny_with(nn::PositionKind::rope, 1)},
  };
  for (const auto& [label, config] : cases) {
    const double error = decode_error(config, 2);
    std::printf("  %-22s max abs logit error %.2e\n", label, error);
    EXPECT_LE(error, kTolerance) << label;
  }
  for (const auto scaling : {nn::RopeScaling::linear, nn::RopeScaling::ntk}) {
    DecoderLMConfig c = tiny_with(nn::PositionKind::rope, 2);
    c.rope_scaling = scaling, c.rope_scale_factor = 4.0;
    const double error = decode_error(c);
    std::printf("  rope scaling %-9s max abs logit error %.2e\n", scaling == nn::RopeScaling::linear ? "linear" : "ntk", error);
    EXPECT_LE(error, kTolerance);
  }
}

TEST(CachedDecoding, MoEDecodesThroughItsRouting) {
  DecoderLMConfig c = tiny_preset("minimind2-moe");
  ASSERT_TRUE(c.moe.has_value());
  const double error = decode_error(c, 2);
  std::printf("  minimind2-moe batch 2   max abs logit error %.2e\n", error);
  EXPECT_LE(error, kTolerance);
}

// A model whose decode products split across two threads (ops/cpu's grains), f32 and with Q4_0
// weights in panels: its decode steps, held as one team of threads (core/thread_team.h), give the
// logits of one thread exactly, step by step.
TEST(CachedDecoding, TheStepsOfTwoThreadsGiveTheLogitsOfOne) {
  DecoderLMConfig c = tiny_preset("minimind2-small");
  c.dim = 256, c.n_heads = 4, c.n_kv_heads = 2, c.vocab_size = 512;
  for (const bool quantised : {false, true}) {
    DecoderLM model(c);
    model.eval();
    if (quantised) quantize_weights(model, {.type = QuantType::q4_0});
    const Tensor ids = random_ids(1, 12, c.vocab_size, 5);
    const auto decode = [&](int threads) {
      set_num_threads(threads);
      nn::KVCache cache = model.make_cache(1);
      std::vector<std::vector<float>> steps{model.forward_cached(narrow(ids, 1, 0, 4), cache, true).to_vector<float>()};
      for (int64_t t = 4; t < ids.size(1); ++t) steps.push_back(model.forward_cached(narrow(ids, 1, t, 1), cache, true).to_vector<float>());
      return steps;
    };
    const auto one = decode(1), two = decode(2);
    set_num_threads(2);
    EXPECT_EQ(two, one) << (quantised ? "Q4_0" : "f32");
  }
}

TEST(CachedDecoding, LastOnlyGivesTheLastRow) {
  DecoderLM model(tiny_preset("minimind2-small"));
  model.eval();
  const Tensor ids = random_ids(2, 5, 64, 3);
  nn::KVCache a = model.make_cache(2), b = model.make_cache(2);
  const Tensor all = model.forward_cached(ids, a), last = model.forward_cached(ids, b, /*last_only=*/true);
  EXPECT_EQ(last.shape(), Shape({2, 1, 64}));
  // within float rounding: the head of 2 rows runs the matrix-vector kernel, that of 10 rows sgemm
  EXPECT_LE(max_abs_error(last, narrow(all, 1, 4, 1)), 1e-6);
}

TEST(CachedDecoding, RollbackThenDecodeAnotherContinuation) {
  for (const auto position : {nn::PositionKind::rope, nn::PositionKind::learned, nn::PositionKind::alibi}) {
    DecoderLM model(tiny_with(position, 2));
    model.eval();
    NoGradGuard no_grad;
    const Tensor first = random_ids(1, 12, 64, 11), other = random_ids(1, 5, 64, 12);
    nn::KVCache cache = model.make_cache(1, 16);
    model.forward_cached(first, cache);
    cache.truncate(7);  // keep 7 tokens, then continue differently
    EXPECT_EQ(cache.length(), 7);
    const Tensor sequence = cat({narrow(first, 1, 0, 7), other}, 1);
    const Tensor full = model.forward(sequence).logits;
    double error = max_abs_error(model.forward_cached(narrow(other, 1, 0, 2), cache), narrow(full, 1, 7, 2));
    for (int64_t t = 2; t < 5; ++t)
      error = std::max(error, max_abs_error(model.forward_cached(narrow(other, 1, t, 1), cache), narrow(full, 1, 7 + t, 1)));
    EXPECT_LE(error, kTolerance) << nn::position_kind_name(position);
    cache.reset();
    EXPECT_EQ(cache.length(), 0);
    EXPECT_LE(max_abs_error(model.forward_cached(sequence, cache), full), kTolerance);
  }
}

// One sequence of continuous batching: its prompt, the step it joins at, and per generated token
// the logits it was chosen from.
struct BatchedSequence {
  std::vector<int64_t> prompt;
  int64_t joins_at = 0;
  std::vector<int64_t> tokens;
  std::vector<Tensor> logits;
};

int64_t greedy_token(const Tensor& logits_row) {
  const Tensor row = logits_row.contiguous();
  return infer::argmax(std::span<const float>(row.data<float>(), static_cast<size_t>(row.numel())));
}

// Six sequences (prompts of 1-9 tokens) join at steps 0, 0, 1, 3, 4, 6 and leave after `new_tokens`
// greedy tokens; each step decodes every running sequence in one forward_cached over their own
// cache (up to 6 rows: the gemv path below 5 rows, sgemm above). Returns the largest logit
// difference from each sequence decoded alone; the tokens must be equal.
double continuous_batching_error(const DecoderLMConfig& config) {
  DecoderLM model(config);
  model.eval();
  constexpr int64_t new_tokens = 8;
  const std::vector<int64_t> lengths{5, 1, 9, 3, 7, 2}, joins{0, 0, 1, 3, 4, 6};
  std::vector<BatchedSequence> alone, batched;
  for (size_t i = 0; i < lengths.size(); ++i) {
    const Tensor ids = random_ids(1, lengths[i], config.vocab_size, 100 + i);
    alone.push_back({ids.to_vector<int64_t>(), joins[i], {}, {}});
  }
  batched = alone;
  for (BatchedSequence& s : alone) {  // the reference: each sequence alone in its cache
    nn::KVCache cache = model.make_cache();
    Tensor logits = model.forward_cached(ids_from(s.prompt), cache, true);
    for (int64_t n = 0; n < new_tokens; ++n) {
      s.logits.push_back(reshape(logits, {-1}));
      s.tokens.push_back(greedy_token(s.logits.back()));
      if (n + 1 < new_tokens) logits = model.forward_cached(ids_from({s.tokens.back()}), cache, true);
    }
  }
  std::vector<nn::KVCache> caches;
  for (size_t i = 0; i < batched.size(); ++i) caches.push_back(model.make_cache());
  for (int64_t step = 0;; ++step) {
    std::vector<nn::KVCache*> running;
    std::vector<int64_t> next, rows;
    for (size_t i = 0; i < batched.size(); ++i) {
      BatchedSequence& s = batched[i];
      const auto done = static_cast<int64_t>(s.tokens.size());
      if (s.joins_at == step) {  // prefilled alone as it joins, its first token from the prompt
        s.logits.push_back(reshape(model.forward_cached(ids_from(s.prompt), caches[i], true), {-1}));
        s.tokens.push_back(greedy_token(s.logits.back()));
      } else if (s.joins_at < step && done < new_tokens) {
        running.push_back(&caches[i]);
        next.push_back(s.tokens.back());
        rows.push_back(static_cast<int64_t>(i));
      }
    }
    if (running.empty() && step > joins.back()) break;
    if (running.empty()) continue;
    const Tensor logits = model.forward_cached(Tensor::from_vector(next, {static_cast<int64_t>(next.size()), 1}),
                                                    running, true);
    for (size_t r = 0; r < rows.size(); ++r) {
      BatchedSequence& s = batched[static_cast<size_t>(rows[r])];
      s.logits.push_back(reshape(narrow(logits, 0, static_cast<int64_t>(r), 1), {-1}));
      s.tokens.push_back(greedy_token(s.logits.back()));
    }
  }
  double error = 0;
  for (size_t i = 0; i < batched.size(); ++i) {
    EXPECT_EQ(batched[i].tokens, alone[i].tokens) << "sequence " << i;
    for (size_t n = 0; n < alone[i].logits.size() && n < batched[i].logits.size(); ++n)
      error = std::max(error, max_abs_error(batched[i].logits[n], alone[i].logits[n]));
  }
  return error;
}

TEST(CachedDecoding, ContinuousBatchingGivesEachSequenceWhatItGetsAlone) {
  for (const std::string& name : preset_names_of(DecoderLM::kArchitecture)) {
    const double error = continuous_batching_error(tiny_preset(name));
    std::printf("  continuous batching, %-22s max abs logit error %.2e\n", name.c_str(), error);
    EXPECT_LE(error, kTolerance) << name;
  }
  for (const auto position : {nn::PositionKind::learned, nn::PositionKind::sinusoidal, nn::PositionKind::alibi}) {
    const double error = continuous_batching_error(tiny_with(position, 2));
    std::printf("  continuous batching, %-22s max abs logit error %.2e\n", nn::position_kind_name(position), error);
    EXPECT_LE(error, kTolerance) << nn::position_kind_name(position);
  }
}

// Greedy by recomputation: each token the argmax of a full forward over the last max_seq_len tokens.
std::vector<int64_t> greedy_by_recomputation(DecoderLM& model, std::vector<int64_t> sequence, int64_t n) {
  NoGradGuard no_grad;
  std::vector<int64_t> generated;
  const auto window = static_cast<size_t>(model.config().max_seq_len);
  for (int64_t i = 0; i < n; ++i) {
    const size_t start = sequence.size() > window ? sequence.size() - window : 0;
    const Tensor ids = ids_from({sequence.begin() + static_cast<std::ptrdiff_t>(start), sequence.end()});
    const Tensor last = select(select(model.forward(ids).logits, 0, 0), 0, ids.size(1) - 1);
    sequence.push_back(static_cast<int64_t>(argmax(last, 0).item()));
    generated.push_back(sequence.back());
  }
  return generated;
}

TEST(CachedDecoding, GreedyWithTheCacheEqualsGreedyByRecomputation) {
  for (const std::string name : {"minimind2-small", "gpt2-124m", "nanochat-d6"}) {
    DecoderLM model(tiny_preset(name));
    model.eval();
    const std::vector<int64_t> prompt{1, 5, 9, 2, 7};
    EXPECT_EQ(infer::greedy_generate(model, prompt, 12), greedy_by_recomputation(model, prompt, 12)) << name;
    // a prompt of 30 and 10 new tokens slide past the 32-token window
    std::vector<int64_t> long_prompt;
    for (int64_t i = 0; i < 30; ++i) long_prompt.push_back((i * 7) % 64);
    EXPECT_EQ(infer::greedy_generate(model, long_prompt, 10), greedy_by_recomputation(model, long_prompt, 10)) << name;
    const std::vector<int64_t> reference = greedy_by_recomputation(model, prompt, 12);
    const std::vector<int64_t> stopped = infer::greedy_generate(model, prompt, 12, reference[3]);
    EXPECT_EQ(stopped.back(), reference[3]);
    EXPECT_LE(stopped.size(), 4u);
  }
}

// Greedy decoding of n tokens after a prompt with one cache of cache_type: the tokens and the
// logits each was chosen from. With `fed`, those tokens are fed instead of the chosen ones (the
// chosen ones are still returned: they equal `fed` when greedy decoding alone would give `fed`).
struct Decoded {
  std::vector<int64_t> tokens;
  std::vector<Tensor> logits;
};

Decoded greedy_with_cache(DecoderLM& model, const std::vector<int64_t>& prompt, int64_t n, QuantType cache_type,
                          const std::vector<int64_t>* fed = nullptr) {
  NoGradGuard no_grad;
  nn::KVCache cache = model.make_cache(1, 0, cache_type);
  Decoded out;
  Tensor logits = model.forward_cached(ids_from(prompt), cache, true);
  for (int64_t i = 0; i < n; ++i) {
    out.logits.push_back(reshape(logits, {-1}));
    out.tokens.push_back(greedy_token(out.logits.back()));
    const int64_t next = fed ? (*fed)[static_cast<size_t>(i)] : out.tokens.back();
    if (i + 1 < n) logits = model.forward_cached(ids_from({next}), cache, true);
  }
  return out;
}

// A cache of f16, bf16, q8_0 or q4_0 rounds each key and value it stores (f16 and bf16 by 2^-11 and
// 2^-9 relatively at most, q8_0 by d / 2 = max|x| / 254 of its block's largest magnitude, 0.4 %,
// q4_0 by d / 2 = max|x| / 16, 6.25 %, but for the rare value clamped to 7 d). Every
// layer's attention output moves by a like fraction of its scale, and the logits of these two-layer
// models by a few times that fraction of theirs (rounded keys move the softmax weights too, and the
// layers' errors add): the bound is 10 times the fraction of the f32 logits' largest magnitude
// (q8_0: 3.9 %; over 15 seeds of these models the largest seen was 2.3 % for q8_0, 0.8 % for bf16,
// 0.12 % for f16). Fed the same tokens, every step's greedy choice is the f32 cache's (32 steps
// after an 8-token prompt, so greedy decoding with the cache gives the f32 tokens). These random
// models have near ties (the smallest f32 top-2 gap is printed): a seed whose tie is closer than
// the cache's rounding may choose otherwise, which is why the seed is fixed. q4_0's logits move by
// 14-20 % of their scale here, far more than these near ties (2e-2 to 0.4): its greedy choices are
// counted, not required to match (docs/quantisation.md measures it on trained models, where
// perplexity moves by little). Through sliding-window rings (nanochat's "SSSL" with a window of 6:
// its ring unrolls every 7 tokens) as well.
TEST(CachedDecoding, QuantisedCachesDecodeTheF32TokensWithLogitsWithinTheirRounding) {
  const std::vector<std::pair<QuantType, double>> types = {
      {QuantType::f16, 10 * 0x1p-11}, {QuantType::bf16, 10 * 0x1p-9}, {QuantType::q8_0, 10 / 254.0},
      {QuantType::q4_0, 10 / 16.0}};
  for (const std::string name : {"minimind2-small", "llama2c-stories260k", "gpt2-124m", "nanochat-d6-sssl"}) {
    DecoderLMConfig c = tiny_preset(name);
    c.head_dim = 32, c.max_seq_len = 48;  // a whole q8_0 block per row
    if (c.sliding_window > 0) c.sliding_window = 6;
    Generator gen(11);
    DecoderLM model(c, gen);
    model.eval();
    const std::vector<int64_t> prompt{1, 5, 9, 2, 7, 33, 12, 60};
    const Decoded reference = greedy_with_cache(model, prompt, 32, QuantType::f32);
    double scale = 0, gap = 1e9;  // the largest logit; the smallest gap between the best two
    for (const Tensor& l : reference.logits) {
      scale = std::max(scale, max(abs(l)).item());
      const Tensor best = topk(l, 2, 0).values.contiguous();
      gap = std::min(gap, static_cast<double>(best.data<float>()[0] - best.data<float>()[1]));
    }
    for (const auto& [type, bound] : types) {  // fed the f32 tokens, so that the logits compare step by step
      const Decoded decoded = greedy_with_cache(model, prompt, 32, type, &reference.tokens);
      if (type != QuantType::q4_0) {
        EXPECT_EQ(decoded.tokens, reference.tokens) << name << " " << quant_type_name(type);
      }
      double error = 0;
      int same = 0;
      for (size_t i = 0; i < decoded.logits.size(); ++i) {
        error = std::max(error, max_abs_error(decoded.logits[i], reference.logits[i]));
        same += decoded.tokens[i] == reference.tokens[i];
      }
      std::printf("  %-20s %-5s max abs logit error %.2e (logits up to %.2f: %.3f %%; smallest f32 top-2 gap %.2e); "
                  "%d of 32 greedy choices the f32 cache's\n",
                  name.c_str(), quant_type_name(type), error, scale, 100 * error / scale, gap, same);
      EXPECT_LE(error, bound * scale) << name << " " << quant_type_name(type);
    }
  }
}

TEST(CachedDecoding, BadInputNamesTheNumbers) {
  DecoderLM model(tiny_preset("minimind2-small"));
  nn::KVCache training = model.make_cache();
  EXPECT_THROW_WITH(model.forward_cached(random_ids(1, 2, 64, 1), training), "call eval()");
  model.eval();
  nn::KVCache cache = model.make_cache(2, 8);
  EXPECT_THROW_WITH(model.forward_cached(random_ids(1, 9, 64, 1), cache), "9 new tokens after 0 cached",
                    "maximum context 8");
  model.forward_cached(random_ids(1, 8, 64, 1), cache);
  EXPECT_THROW_WITH(model.forward_cached(random_ids(1, 1, 64, 1), cache), "1 new tokens after 8 cached",
                    "maximum context 8");
  cache.reset();
  EXPECT_THROW_WITH(model.forward_cached(random_ids(3, 1, 64, 1), cache), "batch 3", "maximum batch 2");
  EXPECT_THROW_WITH(model.make_cache(1, 33), "cache of 33 tokens", "max_seq_len 32");
  model.forward_cached(random_ids(2, 3, 64, 1), cache);
  EXPECT_THROW_WITH(model.forward_cached(random_ids(1, 1, 64, 1), cache), "batch 1 differs from the 2 rows");
  cache.reset();
  Tensor unknown = random_ids(1, 2, 64, 1);
  unknown.data<int64_t>()[1] = 64;
  EXPECT_THROW_WITH(model.forward_cached(unknown, cache), "64");
  DecoderLMConfig deeper = tiny_preset("minimind2-small");
  deeper.n_layers = 3;
  nn::KVCache other = DecoderLM(deeper).make_cache();
  EXPECT_THROW_WITH(model.forward_cached(random_ids(1, 1, 64, 1), other), "cache has 3 layers", "model 2");
  nn::KVCache* const two[] = {&cache, &other};
  EXPECT_THROW_WITH(model.forward_cached(random_ids(3, 1, 64, 1), two), "3 rows of ids for 2 caches");
  EXPECT_THROW_WITH(model.forward_cached(random_ids(2, 1, 64, 1), two), "cache has 3 layers", "model 2");
}

TEST(CachedDecoding, TheCacheHoldsOnlyTheKeyValueHeads) {
  DecoderLM model(tiny_preset("minimind2-small"));  // 4 query heads, 1 KV head (8 / 2 shrunk)
  const nn::KVCache cache = model.make_cache(2, 16);
  const KVStorage& keys = cache.layer(0).keys;
  EXPECT_EQ(Shape({keys.batch(), keys.heads(), keys.columns(), keys.head_dim()}), Shape({2, 1, 16, 8}));
  EXPECT_EQ(cache.bytes(), 2 * 2 * 2 * 1 * 16 * 8 * 4);
  EXPECT_THROW_WITH(model.make_cache(2, 16, QuantType::q8_0), "--cache-type q8_0", "head_dim 8 is not a multiple of 32");
  DecoderLMConfig c = tiny_preset("minimind2-small");
  c.head_dim = 64;
  const nn::KVCache q8 = DecoderLM(c).make_cache(2, 16, QuantType::q8_0);  // 34 bytes per 32 values
  EXPECT_EQ(q8.bytes(), 2 * 2 * 2 * 1 * 16 * 64 / 32 * 34);
  EXPECT_EQ(DecoderLM(c).make_cache(2, 16).bytes(), q8.bytes() * 128 / 34);  // f32: 3.76 times more
}

}  // namespace
}  // namespace nf::models
