// Greedy decoding by recomputation (infer/greedy.h).
#include "nanoformer/infer/greedy.h"

#include <algorithm>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"

namespace nf::infer {

std::vector<int64_t> greedy_generate(models::DecoderLM& model, const std::vector<int64_t>& prompt,
                                     int64_t max_new_tokens, std::optional<int64_t> stop) {
  NF_CHECK(!prompt.empty(), "greedy_generate: the prompt is empty");
  const bool was_training = model.is_training();
  model.eval();
  NoGradGuard no_grad;
  const int64_t window = model.config().max_seq_len, vocab = model.config().vocab_size;
  std::vector<int64_t> sequence = prompt, generated;
  for (int64_t i = 0; i < max_new_tokens; ++i) {
    const int64_t start = std::max<int64_t>(0, static_cast<int64_t>(sequence.size()) - window);
    const int64_t length = static_cast<int64_t>(sequence.size()) - start;
    Tensor ids = Tensor::empty({1, length}, DType::i64);
    std::copy(sequence.begin() + start, sequence.end(), ids.data<int64_t>());
    const Tensor logits = model.forward(ids).logits.contiguous();
    const float* last = logits.data<float>() + (length - 1) * vocab;
    const int64_t next = std::max_element(last, last + vocab) - last;  // first maximum, as torch.argmax
    sequence.push_back(next);
    generated.push_back(next);
    if (stop && next == *stop) break;
  }
  model.train(was_training);
  return generated;
}

}  // namespace nf::infer
