#include "nanoformer/data/sharded_batches.h"

#include "nanoformer/core/error.h"
#include "nanoformer/ops/view.h"

namespace nf::data {

ShardedBatches::ShardedBatches(std::unique_ptr<BatchSource> global, int rank, int ranks)
    : global_(std::move(global)), rank_(rank), ranks_(ranks) {
  NF_CHECK(ranks > 0 && rank >= 0 && rank < ranks, "sharded batches: rank ", rank, " of ", ranks, " is out of range");
  NF_CHECK(global_->batch_size() % ranks == 0, "sharded batches: a batch of ", global_->batch_size(),
           " rows does not split into ", ranks, " ranks");
}

Batch ShardedBatches::batch(uint64_t index) const {
  const Batch whole = global_->batch(index);
  const int64_t rows = batch_size();
  Batch out;
  out.inputs = narrow(whole.inputs, 0, rank_ * rows, rows).contiguous();
  out.targets = narrow(whole.targets, 0, rank_ * rows, rows).contiguous();
  const int64_t* targets = out.targets.data<int64_t>();
  for (int64_t i = 0; i < out.targets.numel(); ++i) out.target_tokens += targets[i] != kIgnoreIndex ? 1 : 0;
  return out;
}

std::string ShardedBatches::describe() const {
  return global_->describe() + "; rank " + std::to_string(rank_) + " of " + std::to_string(ranks_) + " takes rows [" +
         std::to_string(rank_ * batch_size()) + ", " + std::to_string((rank_ + 1) * batch_size()) + ") of each batch of " +
         std::to_string(global_->batch_size());
}

}  // namespace nf::data
