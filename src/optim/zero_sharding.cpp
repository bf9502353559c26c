// ZeRO-1: owned slices, the all-gather of parameters, the gather of the state for checkpoints.
#include "nanoformer/optim/zero_sharding.h"

#include <algorithm>
#include <cstring>

#include "nanoformer/core/error.h"

namespace nf::optim {
namespace {

// The part of [begin, end) each rank owns, relative to begin: counts and displacements.
void split(const std::vector<int64_t>& bounds, int64_t begin, int64_t end, std::vector<int64_t>& counts,
           std::vector<int64_t>& displs) {
  counts.clear();
  displs.clear();
  for (size_t r = 0; r + 1 < bounds.size(); ++r) {
    const int64_t lo = std::clamp(bounds[r], begin, end), hi = std::clamp(bounds[r + 1], begin, end);
    counts.push_back(hi - lo);
    displs.push_back(lo - begin);
  }
}

}  // namespace

ZeroSharding::ZeroSharding(OptimizerSet& optimizer, dist::Communicator& comm)
    : optimizer_(optimizer), comm_(comm), rank_(static_cast<size_t>(comm.rank())) {
  for (const auto& o : optimizer_.optimizers())
    NF_CHECK(o->slices(), "train --zero 1: the ", o->kind(), " optimizer updates whole matrices, which ZeRO-1's "
             "slices of the flattened parameters would cut; use --optimizer adamw, adam or sgd, or --zero 0");
  int64_t total = 0;
  for (const Tensor& p : optimizer_.parameters()) {
    offsets_.emplace(p.impl(), total);
    total += p.numel();
  }
  const auto ranks = static_cast<int64_t>(comm_.size());
  for (int64_t r = 0; r <= ranks; ++r) bounds_.push_back(total * r / ranks);
  const int64_t mine_begin = bounds_[rank_], mine_end = bounds_[rank_ + 1];
  for (const auto& o : optimizer_.optimizers())
    for (size_t g = 0; g < o->groups().size(); ++g)
      for (size_t i = 0; i < o->groups()[g].params.size(); ++i) {
        const Tensor& p = o->groups()[g].params[i];
        const int64_t at = offsets_.at(p.impl());
        const int64_t lo = std::clamp(mine_begin, at, at + p.numel()), hi = std::clamp(mine_end, at, at + p.numel());
        o->set_owned_range(g, i, lo - at, hi - at);
      }
}

void ZeroSharding::gather_parameters() {
  if (comm_.size() == 1) return;
  flat_.resize(static_cast<size_t>(total_values()));
  const std::vector<Tensor> params = optimizer_.parameters();
  for (const Tensor& p : params)
    std::memcpy(flat_.data() + offsets_.at(p.impl()), p.data<float>(), static_cast<size_t>(p.numel()) * sizeof(float));
  std::vector<int64_t> counts, displs;
  split(bounds_, 0, total_values(), counts, displs);
  auto request = comm_.start_allgather(flat_.data(), counts, displs);
  comm_.wait(*request, "the all-gather of the updated parameters (ZeRO-1)");
  for (const Tensor& p : params)
    std::memcpy(p.data<float>(), flat_.data() + offsets_.at(p.impl()), static_cast<size_t>(p.numel()) * sizeof(float));
}

nn::StateDict ZeroSharding::state_dict_on_root() {
  std::vector<int64_t> counts, displs;
  return optimizer_.state_dict([&](const Optimizer& o, size_t g, size_t i, const Tensor& slice) -> Tensor {
    const Tensor& p = o.groups()[g].params[i];
    const int64_t at = offsets_.at(p.impl());
    split(bounds_, at, at + p.numel(), counts, displs);
    Tensor whole = Tensor::empty(rank_ == 0 ? p.shape() : Shape{p.numel()});
    float* data = whole.data<float>();
    const auto mine = static_cast<size_t>(counts[rank_]);
    if (slice.defined())
      std::memcpy(data + displs[rank_], slice.contiguous().data<float>(), mine * sizeof(float));
    else
      std::memset(data + displs[rank_], 0, mine * sizeof(float));  // never used yet: zeros
    auto request = comm_.start_gather_to_root(data, counts, displs);
    comm_.wait(*request, "the gather of the optimizer state for a checkpoint (ZeRO-1)");
    return rank_ == 0 ? whole : Tensor();
  });
}

}  // namespace nf::optim
