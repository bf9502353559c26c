#pragma once
// The tiny models and the prompt the speculative decoding tests share (test_speculative.cpp,
// test_draft_model.cpp): models whose greedy continuations recur, so that drafts are taken.
#include <map>
#include <memory>
#include <vector>

#include "nanoformer/core/generator.h"
#include "nanoformer/infer/cached_sequence.h"
#include "nanoformer/infer/sampler.h"
#include "tiny_lm.h"

namespace nf::testing {

constexpr int64_t kVocab = 64;

// Attention's output weakened (o_proj x 0.1): the next token depends mostly on the last one, as
// in a bigram model, so the model's greedy continuations fall into cycles that lookup drafts from,
// while attention (and so the positions and the cache) still moves every logit.
inline std::shared_ptr<models::DecoderLM> repetitive(std::shared_ptr<models::DecoderLM> model) {
  for (const auto& [name, p] : model->named_parameters())
    if (name.ends_with("attn.o_proj.weight"))
      for (int64_t i = 0; i < p.numel(); ++i) p.data<float>()[i] *= 0.1f;
  return model;
}

inline std::shared_ptr<models::DecoderLM> tiny_llama(int64_t max_seq_len, int64_t head_dim = 0) {
  return repetitive(tiny_lm(max_seq_len, head_dim));
}

// GPT-2's layout (learned absolute positions, LayerNorm, GELU), as small as tiny_lm.
inline std::shared_ptr<models::DecoderLM> tiny_gpt2(int64_t max_seq_len) {
  models::DecoderLMConfig c = models::preset_config("gpt2-124m");
  c.vocab_size = kVocab, c.dim = 32, c.n_layers = 2, c.n_heads = 4, c.n_kv_heads = 4, c.max_seq_len = max_seq_len;
  c.init_std = 0.3;
  Generator gen(6);  // a seed whose continuations recur (seed 5's drafts are rarely taken)
  return repetitive(std::make_shared<models::DecoderLM>(c, gen));
}

// A prompt that lookup drafts well from: every id (so that the last token of any output occurs
// earlier), then what the model itself continues it with greedily, then the start again (so
// that the model's continuation may repeat what it wrote before: a random model cannot copy,
// but its own continuations recur).
inline std::vector<int64_t> repeating_prompt(models::DecoderLM& model) {
  std::vector<int64_t> p;
  for (int64_t i = 0; i < kVocab; ++i) p.push_back((i * 7 + 3) % kVocab);
  model.eval();
  infer::CachedSequence s(model);
  Tensor logits = s.feed(p).to(DType::f32).contiguous();
  std::vector<int64_t> out = p;
  for (int i = 0; i < 24; ++i) {
    out.push_back(infer::argmax({logits.data<float>(), static_cast<size_t>(kVocab)}));
    logits = s.feed({out.back()}).to(DType::f32).contiguous();
  }
  out.insert(out.end(), p.end() - 16, p.end());
  return out;
}

// The exact distribution of the first three tokens sampled after `prompt`: p(x1) p(x2 | x1)
// p(x3 | x1 x2), enumerated, with probabilities(sequence, generated) the next token's distribution
// (kVocab values) after `sequence`, `generated` of them sampled.
template <class Probabilities>
std::map<std::vector<int64_t>, double> three_token_distribution(const std::vector<int64_t>& prompt,
                                                                Probabilities probabilities) {
  std::map<std::vector<int64_t>, double> exact;
  const auto p1 = probabilities(prompt, 0);
  for (int64_t a = 0; a < kVocab; ++a) {
    if (p1[a] == 0) continue;
    std::vector<int64_t> s1 = prompt;
    s1.push_back(a);
    const auto p2 = probabilities(s1, 1);
    for (int64_t b = 0; b < kVocab; ++b) {
      if (p2[b] == 0) continue;
      std::vector<int64_t> s2 = s1;
      s2.push_back(b);
      const auto p3 = probabilities(s2, 2);
      for (int64_t c = 0; c < kVocab; ++c)
        if (p3[c] > 0) exact[{a, b, c}] = double(p1[a]) * double(p2[b]) * double(p3[c]);
    }
  }
  return exact;
}

}  // namespace nf::testing
