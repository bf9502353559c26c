#pragma once
// ZeRO-1: the optimizer state sharded across the ranks of a data-parallel run. The trained
// parameters, flattened in OptimizerSet::parameters() order into S values, are cut into `ranks`
// contiguous slices ([S r / N, S (r + 1) / N) for rank r); each rank holds the optimizer state of
// its slice alone (Optimizer::set_owned_range) and updates only those values from the all-reduced
// gradient, then gather_parameters() all-gathers the slices so every rank holds every parameter.
// Per-rank optimizer memory: 1 / N of the unsharded state. Element-wise rules only (sgd, adam,
// adamw): Muon orthogonalises whole matrices, so an OptimizerSet with Muon is refused.
// Checkpoints still hold the whole state: state_dict_on_root() gathers it to rank 0; a resumed
// run loads the whole state and each rank keeps its slice.
#include <cstdint>
#include <map>
#include <vector>

#include "nanoformer/dist/communicator.h"
#include "nanoformer/nn/module.h"
#include "nanoformer/optim/optimizer_set.h"

namespace nf::optim {

class ZeroSharding {
 public:
  // Shards `optimizer`'s state (call before loading a checkpoint's state into it). Throws nf::Error
  // naming the optimizer when it cannot update slices.
  ZeroSharding(OptimizerSet& optimizer, dist::Communicator& comm);

  // After the optimizer step: every rank's updated slice to every rank.
  void gather_parameters();
  // The whole optimizer state (OptimizerSet::state_dict's names and shapes) on rank 0, an empty
  // dict on the others. Collective: every rank calls it.
  nn::StateDict state_dict_on_root();
  // Values of the optimizer's parameters this rank owns, and all of them.
  int64_t owned_values() const { return bounds_[rank_ + 1] - bounds_[rank_]; }
  int64_t total_values() const { return bounds_.back(); }

 private:
  OptimizerSet& optimizer_;
  dist::Communicator& comm_;
  size_t rank_;
  std::vector<int64_t> bounds_;                    // rank r owns flat [bounds_[r], bounds_[r + 1])
  std::map<const TensorImpl*, int64_t> offsets_;   // each parameter's flat offset
  std::vector<float> flat_;                        // gather_parameters' buffer
};

}  // namespace nf::optim
