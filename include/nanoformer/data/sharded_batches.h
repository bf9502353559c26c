#pragma once
// One rank's share of a data-parallel run's batches: `global` makes batches of ranks x B rows
// (B = the per-rank batch size), and rank r takes rows [r B, (r + 1) B) of each. The ranks' windows
// are disjoint, and together they are exactly the batch one process at batch ranks x B would see:
// a pure function of the batch index, the seed and the number of ranks, as batch.h requires.
#include <memory>

#include "nanoformer/data/batch.h"

namespace nf::data {

class ShardedBatches final : public BatchSource {
 public:
  // Throws nf::Error when global's batch size is not a multiple of `ranks`, or rank is out of range.
  ShardedBatches(std::unique_ptr<BatchSource> global, int rank, int ranks);

  Batch batch(uint64_t index) const override;
  int64_t batch_size() const override { return global_->batch_size() / ranks_; }
  int64_t context() const override { return global_->context(); }
  std::string describe() const override;

 private:
  std::unique_ptr<BatchSource> global_;
  int rank_, ranks_;
};

}  // namespace nf::data
