#pragma once
// Pretraining batches: windows of context + 1 tokens over a range [begin, end) of a TokenCorpus,
// inputs = w[:-1], targets = w[1:] (every target is a real next token, no masking).
//   random      window b of batch i starts at begin + r mod (end - begin - context), r a 64-bit
//               Philox draw of (counter (i, b), key seed): a pure function of (seed, i, b), so
//               independent of the thread count and of the batches drawn before (nanoGPT draws
//               torch.randint starts the same way, but from a stateful generator);
//   sequential  window k = (i * B + b) mod K of the K = (end - begin) / (context + 1)
//               non-overlapping windows in order: a fixed evaluation set that wraps around.
#include <cstdint>
#include <memory>
#include <string>

#include "nanoformer/data/batch.h"
#include "nanoformer/data/token_corpus.h"

namespace nf::data {

class TokenWindows final : public BatchSource {
 public:
  enum class Order { random, sequential };
  // `part` names the range in messages ("training part"); throws nf::Error naming the numbers when
  // the range holds fewer than context + 1 tokens. The ids are not checked here: load_training_data
  // checks every id against the model's vocabulary before the first batch (TokenCorpus::check_vocab).
  TokenWindows(std::shared_ptr<const TokenCorpus> corpus, uint64_t begin, uint64_t end, int64_t batch_size,
               int64_t context, Order order, uint64_t seed, std::string part);

  Batch batch(uint64_t index) const override;
  int64_t batch_size() const override { return batch_size_; }
  int64_t context() const override { return context_; }
  std::string describe() const override;

  // The corpus position of the first token of window b of batch `index`.
  uint64_t window_start(uint64_t index, int64_t b) const;

 private:
  std::shared_ptr<const TokenCorpus> corpus_;
  uint64_t begin_, end_;
  int64_t batch_size_, context_;
  Order order_;
  uint64_t seed_;
  std::string part_;
};

}  // namespace nf::data
