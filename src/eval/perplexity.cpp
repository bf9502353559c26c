// Perplexity over windows of a token stream (eval/perplexity.h).
#include "nanoformer/eval/perplexity.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/loss.h"
#include "nanoformer/ops/view.h"

namespace nf::eval {

int64_t perplexity_windows(uint64_t stream_tokens, int64_t context, uint64_t max_tokens) {
  NF_CHECK(context > 0, "perplexity: context ", context, " must be positive");
  const uint64_t targets = stream_tokens > 0 ? stream_tokens - 1 : 0;
  const uint64_t budget = max_tokens > 0 ? std::min(targets, max_tokens) : targets;
  return static_cast<int64_t>(budget / static_cast<uint64_t>(context));
}

Perplexity evaluate_perplexity(models::DecoderLM& model, const data::TokenCorpus& corpus, const PerplexityOptions& o,
                               const std::function<void(int64_t)>& progress) {
  const int64_t L = o.context;
  Perplexity result;
  result.context = L;
  result.windows = perplexity_windows(corpus.size(), L, o.max_tokens);
  NF_CHECK(result.windows > 0, corpus.sources(), ": ", corpus.size(), " tokens",
           o.max_tokens > 0 ? " (budget " + std::to_string(o.max_tokens) + ")" : std::string(),
           " hold no window of context ", L, " + 1 tokens");
  const int64_t per_pass = std::max<int64_t>(1, o.batch_tokens / L);
  const auto vocab = static_cast<uint64_t>(model.config().vocab_size);
  NF_CHECK(o.token_bytes.empty() || o.token_bytes.size() == vocab, "perplexity: ", o.token_bytes.size(),
           " token byte lengths for a vocabulary of ", vocab);
  model.eval();
  NoGradGuard no_grad;
  double loss_sum = 0.0;  // sum over targets of -log p(target)
  std::optional<nn::KVCache> cache;
  if (o.cache_type != QuantType::f32) cache.emplace(model.make_cache(std::min(per_pass, result.windows), L, o.cache_type));
  std::vector<tokenizer::TokenId> window(static_cast<size_t>(L) + 1);
  for (int64_t first = 0; first < result.windows; first += per_pass) {
    const int64_t B = std::min(per_pass, result.windows - first);
    Tensor inputs = Tensor::empty({B, L}, DType::i64), targets = Tensor::empty({B, L}, DType::i64);
    int64_t* x = inputs.data<int64_t>();
    int64_t* y = targets.data<int64_t>();
    for (int64_t b = 0; b < B; ++b) {
      const auto start = static_cast<uint64_t>((first + b) * L);
      corpus.read(start, window);
      for (size_t t = 0; t < window.size(); ++t)
        NF_CHECK(window[t] < vocab, corpus.locate(start + t), ": id ", window[t],
                 " is not below the model's vocabulary size ", vocab);
      for (int64_t t = 0; t < L; ++t) {
        x[b * L + t] = window[static_cast<size_t>(t)];      // inputs  w[:-1]
        y[b * L + t] = window[static_cast<size_t>(t) + 1];  // targets w[1:]
        if (!o.token_bytes.empty()) result.bytes += o.token_bytes[window[static_cast<size_t>(t) + 1]];
      }
    }
    Tensor token_loss;
    if (cache) {
      cache->reset();
      const Tensor logits = model.forward_cached(inputs, *cache);
      token_loss = cross_entropy(reshape(logits, {-1, model.config().vocab_size}), reshape(targets, {-1}), -100);
    } else {
      token_loss = model.forward(inputs, targets).token_loss;
    }
    loss_sum += token_loss.item() * static_cast<double>(B * L);
    if (progress) progress(first + B);
  }
  result.tokens = result.windows * L;
  result.loss = loss_sum / static_cast<double>(result.tokens);
  result.perplexity = std::exp(result.loss);
  if (result.bytes > 0) result.bits_per_byte = loss_sum / (std::log(2.0) * static_cast<double>(result.bytes));
  return result;
}

}  // namespace nf::eval
