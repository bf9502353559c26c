#pragma once
// The log-probabilities reported with a sampled token (OpenAI's logprobs): those of the model's own
// distribution, log softmax of the raw logits over the ids below vocab_limit (0: all), before the
// sampler's temperature, penalties and truncation (as vLLM reports by default):
//   logprob(i) = x_i - max_j x_j - log sum_j exp(x_j - max_j x_j)      (the sum in f64)
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace nf::infer {

struct TokenLogprobs {
  int64_t id = 0;
  float logprob = 0;
  std::vector<std::pair<int64_t, float>> top;  // the most likely ids and theirs, most likely first (ties: lower id)
};

// Token `id`'s logprob and the `top` most likely ids' (0 <= top; fewer when the vocabulary is smaller
// or when ids are masked out with -inf, as constrained decoding does: those are never listed).
TokenLogprobs token_logprobs(std::span<const float> logits, int64_t vocab_limit, int64_t id, int64_t top);

}  // namespace nf::infer
