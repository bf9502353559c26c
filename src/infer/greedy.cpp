// Greedy decoding with the KV cache (infer/greedy.h).
#include "nanoformer/infer/greedy.h"

#include <algorithm>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"
#include "nanoformer/infer/decode_step.h"

namespace nf::infer {

std::vector<int64_t> greedy_generate(models::DecoderLM& model, const std::vector<int64_t>& prompt,
                                     int64_t max_new_tokens, std::optional<int64_t> stop) {
  NF_CHECK(!prompt.empty(), "greedy_generate: the prompt is empty");
  std::vector<int64_t> generated;
  if (max_new_tokens <= 0) return generated;
  const bool was_training = model.is_training();
  model.eval();
  NoGradGuard no_grad;
  const int64_t window = model.config().max_seq_len, vocab = model.config().vocab_size;
  CachedSequence sequence(model, 0, {.crop = true});  // past the window: a forward over its last max_seq_len tokens
  const size_t start = prompt.size() - std::min<size_t>(prompt.size(), static_cast<size_t>(window));
  Tensor logits = sequence.feed({prompt.begin() + static_cast<std::ptrdiff_t>(start), prompt.end()});
  Sampler argmax({.temperature = 0.0});
  const StopCriteria criteria{.eos_ids = stop ? std::vector<int64_t>{*stop} : std::vector<int64_t>{},
                              .max_new_tokens = max_new_tokens};
  std::vector<int64_t> history = prompt;
  for (int64_t count = 1;; ++count) {
    const SampledToken t = sample_step(argmax, {logits.data<float>(), static_cast<size_t>(vocab)}, history, criteria,
                                       count, {});
    generated.push_back(t.id);
    if (t.reason != StopReason::none) break;
    sequence.make_room(1);  // crop never fails
    logits = sequence.feed({t.id});
  }
  model.train(was_training);
  return generated;
}

}  // namespace nf::infer
