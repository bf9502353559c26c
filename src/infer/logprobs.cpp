// Log-probabilities of a row of logits (infer/logprobs.h).
#include "nanoformer/infer/logprobs.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "nanoformer/core/error.h"

namespace nf::infer {

TokenLogprobs token_logprobs(std::span<const float> logits, int64_t vocab_limit, int64_t id, int64_t top) {
  const auto n = static_cast<int64_t>(vocab_limit > 0 ? std::min<size_t>(static_cast<size_t>(vocab_limit), logits.size())
                                                      : logits.size());
  NF_CHECK(n > 0 && id >= 0 && id < n && top >= 0, "token_logprobs: id ", id, " or top ", top, " out of range for ", n,
           " logits");
  const float max = *std::max_element(logits.begin(), logits.begin() + n);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(logits[i]) - max);
  const double log_normalizer = max + std::log(sum);
  const auto logprob = [&](int64_t i) { return static_cast<float>(static_cast<double>(logits[i]) - log_normalizer); };
  TokenLogprobs out{.id = id, .logprob = logprob(id), .top = {}};
  if (top == 0) return out;
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  const auto k = static_cast<ptrdiff_t>(std::min(top, n));
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [&](int64_t a, int64_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  for (ptrdiff_t i = 0; i < k && logits[order[i]] != -INFINITY; ++i)  // a masked id (-inf) is never listed
    out.top.emplace_back(order[i], logprob(order[i]));
  return out;
}

}  // namespace nf::infer
