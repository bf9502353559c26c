#include "nanoformer/data/token_windows.h"

#include <vector>

#include "nanoformer/core/error.h"
#include "nanoformer/core/generator.h"

namespace nf::data {

TokenWindows::TokenWindows(std::shared_ptr<const TokenCorpus> corpus, uint64_t begin, uint64_t end,
                           int64_t batch_size, int64_t context, Order order, uint64_t seed, std::string part)
    : corpus_(std::move(corpus)),
      begin_(begin),
      end_(end),
      batch_size_(batch_size),
      context_(context),
      order_(order),
      seed_(seed),
      part_(std::move(part)) {
  NF_CHECK(batch_size > 0 && context > 0, "token windows: batch size ", batch_size, " and context ", context,
           " must be positive");
  NF_CHECK(begin <= end && end <= corpus_->size(), "token windows: range [", begin, ", ", end,
           ") is out of a corpus of ", corpus_->size(), " tokens");
  const auto window = static_cast<uint64_t>(context) + 1;
  NF_CHECK(end - begin >= window, corpus_->sources(), ": the ", part_, " has ", end - begin,
           " tokens, fewer than context + 1 = ", window, " (one window of inputs and shifted targets)");
}

uint64_t TokenWindows::window_start(uint64_t index, int64_t b) const {
  const auto window = static_cast<uint64_t>(context_) + 1;
  if (order_ == Order::sequential) {
    const uint64_t windows = (end_ - begin_) / window;
    return begin_ + ((index * static_cast<uint64_t>(batch_size_) + static_cast<uint64_t>(b)) % windows) * window;
  }
  const auto words = philox4x32(index, static_cast<uint64_t>(b), seed_);
  const uint64_t r = (static_cast<uint64_t>(words[0]) << 32) | words[1];
  // r mod n: the bias, below n / 2^64, is far below anything a training run could notice
  return begin_ + r % (end_ - begin_ - static_cast<uint64_t>(context_));
}

Batch TokenWindows::batch(uint64_t index) const {
  const int64_t B = batch_size_, T = context_;
  Batch out;
  out.inputs = Tensor::empty({B, T}, DType::i64);
  out.targets = Tensor::empty({B, T}, DType::i64);
  int64_t* inputs = out.inputs.data<int64_t>();
  int64_t* targets = out.targets.data<int64_t>();
  std::vector<TokenId> window(static_cast<size_t>(T) + 1);
  for (int64_t b = 0; b < B; ++b) {
    const uint64_t start = window_start(index, b);
    corpus_->read(start, window);
    for (int64_t t = 0; t < T; ++t) {
      inputs[b * T + t] = window[static_cast<size_t>(t)];        // x = w[:-1]
      targets[b * T + t] = window[static_cast<size_t>(t) + 1];   // y = w[1:]
    }
  }
  out.target_tokens = B * T;
  return out;
}

std::string TokenWindows::describe() const {
  const uint64_t window = static_cast<uint64_t>(context_) + 1;
  const std::string range = begin_ == 0 && end_ == corpus_->size()
                                ? "all " + std::to_string(end_) + " tokens"
                                : "tokens [" + std::to_string(begin_) + ", " + std::to_string(end_) + ") of " +
                                      std::to_string(corpus_->size());
  const std::string windows = order_ == Order::random ? "random windows of " + std::to_string(window)
                                                      : std::to_string((end_ - begin_) / window) +
                                                            " sequential windows of " + std::to_string(window);
  return corpus_->sources() + ": " + part_ + ", " + range + ", " + windows;
}

}  // namespace nf::data
