#pragma once
// A training batch and the sources that make them. A BatchSource gives batch i as a pure function
// of i (and of its data and seed): the data position of a checkpoint is just the index of the next
// batch, so a resumed run sees exactly the batches the uninterrupted run would have.
#include <cstdint>
#include <string>

#include "nanoformer/core/tensor.h"

namespace nf::data {

// Targets take this value where no loss is taken (padding, user turns), as torch's ignore_index.
inline constexpr int64_t kIgnoreIndex = -100;

struct Batch {
  Tensor inputs;               // (B, T) i64 token ids
  Tensor targets;              // (B, T) i64: the next token, or kIgnoreIndex where no loss is taken
  int64_t target_tokens = 0;   // number of targets != kIgnoreIndex
};

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // Batch `index`; the same index always gives the same batch, whatever was asked before and
  // whatever the thread count.
  virtual Batch batch(uint64_t index) const = 0;
  virtual int64_t batch_size() const = 0;
  virtual int64_t context() const = 0;
  // One line for logs, e.g. "tiny.bin: 1.2 M tokens (train: the first 1.1 M), random windows of 65".
  virtual std::string describe() const = 0;
};

}  // namespace nf::data
