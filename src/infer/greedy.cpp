// Greedy decoding with the KV cache (infer/greedy.h).
#include "nanoformer/infer/greedy.h"

#include <algorithm>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"

namespace nf::infer {
namespace {

// ids (1, n) of tokens[begin, end)
Tensor row_of(const std::vector<int64_t>& tokens, size_t begin, size_t end) {
  Tensor ids = Tensor::empty({1, static_cast<int64_t>(end - begin)}, DType::i64);
  std::copy(tokens.begin() + static_cast<std::ptrdiff_t>(begin), tokens.begin() + static_cast<std::ptrdiff_t>(end),
            ids.data<int64_t>());
  return ids;
}

// The first maximum of logits (1, 1, vocab), as torch.argmax.
int64_t argmax_token(const Tensor& logits) {
  const Tensor row = logits.contiguous();
  const float* p = row.data<float>();
  return std::max_element(p, p + row.numel()) - p;
}

}  // namespace

std::vector<int64_t> greedy_generate(models::DecoderLM& model, const std::vector<int64_t>& prompt,
                                     int64_t max_new_tokens, std::optional<int64_t> stop) {
  NF_CHECK(!prompt.empty(), "greedy_generate: the prompt is empty");
  std::vector<int64_t> generated;
  if (max_new_tokens <= 0) return generated;
  const bool was_training = model.is_training();
  model.eval();
  NoGradGuard no_grad;
  const int64_t window = model.config().max_seq_len;
  // the cache never holds more than the window, nor more than this call feeds
  nn::KVCache cache = model.make_cache(1, std::min<int64_t>(window, static_cast<int64_t>(prompt.size()) + max_new_tokens));
  std::vector<int64_t> sequence = prompt;
  // (re)fills the cache with the last `window` tokens of the sequence
  const auto prefill_window = [&] {
    cache.reset();
    const size_t start = sequence.size() - std::min<size_t>(sequence.size(), static_cast<size_t>(window));
    return model.forward_cached(row_of(sequence, start, sequence.size()), cache, /*last_only=*/true);
  };
  Tensor logits = prefill_window();
  for (int64_t i = 0; i < max_new_tokens; ++i) {
    const int64_t next = argmax_token(logits);
    sequence.push_back(next);
    generated.push_back(next);
    if ((stop && next == *stop) || i + 1 == max_new_tokens) break;
    const bool full = cache.length() == cache.shape().max_len;  // only when the window slides
    logits = full ? prefill_window()
                  : model.forward_cached(row_of(sequence, sequence.size() - 1, sequence.size()), cache, true);
  }
  model.train(was_training);
  return generated;
}

}  // namespace nf::infer
