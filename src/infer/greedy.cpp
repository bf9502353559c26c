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
  if (max_new_tokens <= 0) return {};
  const bool was_training = model.is_training();
  model.eval();
  NoGradGuard no_grad;
  const int64_t window = model.config().max_seq_len;
  CachedSequence sequence(model, 0, {.crop = true});  // past the window: a forward over its last max_seq_len tokens
  const size_t start = prompt.size() - std::min<size_t>(prompt.size(), static_cast<size_t>(window));
  Sampler argmax({.temperature = 0.0});
  const StopCriteria criteria{.eos_ids = stop ? std::vector<int64_t>{*stop} : std::vector<int64_t>{},
                              .max_new_tokens = max_new_tokens};
  DecodeStream stream(sequence, argmax, criteria, prompt);
  stream.prefill({prompt.begin() + static_cast<std::ptrdiff_t>(start), prompt.end()});
  DecodeStream* streams[] = {&stream};
  decode(streams);
  model.train(was_training);
  return stream.generated();
}

}  // namespace nf::infer
