#pragma once
// Data-parallel gradient averaging that overlaps backward (as PyTorch's DDP): the parameters are
// grouped into buckets of about bucket_bytes, in reverse order (backward reaches the last layers
// first); during an armed backward, each leaf's gradient-ready hook (autograd/grad_ready_hook.h)
// counts down its bucket. Buckets are all-reduced in one order, fixed here and the same on every
// rank, whatever order gradients become final in (that order depends on the data: an MoE's
// routing differs between ranks, and MPI matches collectives by the order they are started in):
// bucket i starts once it is complete and buckets 0..i-1 have started. A parameter the backward
// cannot reach (an expert that got no tokens on this rank) is final as backward begins and
// contributes zeros. finish() starts what is left, waits for every bucket against the
// communicator's deadline, and writes the sums back into the gradients:
//   grad_p = sum over ranks of grad_p      (the trainer weights each rank's loss by its share of
//                                           the step's tokens, so the sum is the step's gradient)
// A parameter no rank gave a gradient keeps none (the optimizer skips it, as one process would
// at the whole batch): each bucket carries one "has a gradient" count per parameter beside the
// values, summed in the same all-reduce. With one rank nothing is copied or waited for. Only f32
// parameters.
#include <cstdint>
#include <memory>
#include <vector>

#include "nanoformer/core/tensor.h"
#include "nanoformer/dist/communicator.h"

namespace nf::dist {

class GradientBuckets {
 public:
  GradientBuckets(std::vector<Tensor> params, Communicator& comm, int64_t bucket_bytes);
  ~GradientBuckets();
  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  // The next backward starts each bucket's all-reduce as soon as its gradients are final (call it
  // before the last micro-batch's backward only: earlier ones just accumulate locally).
  void arm();
  // Starts the buckets not started yet, waits for all of them, writes the summed gradients back and
  // disarms the hooks.
  void finish();

  size_t num_buckets() const { return buckets_.size(); }
  // The parameters (indices into the constructor's list) of bucket i, in all-reduce order.
  const std::vector<size_t>& bucket_parameters(size_t i) const { return buckets_.at(i).params; }
  // Seconds the last finish() spent blocked waiting for all-reduces to complete.
  double last_wait_seconds() const { return last_wait_seconds_; }

 private:
  struct Bucket {
    std::vector<size_t> params;     // indices into params_
    std::vector<int64_t> offsets;   // of each parameter in buffer
    int64_t values = 0;             // buffer = values, then one "has a gradient" count per parameter
    std::vector<float> buffer;
    size_t ready = 0;
    std::unique_ptr<Request> request;
  };
  void on_ready(size_t bucket);
  void start_ready_in_order();
  void start(Bucket& bucket);
  void disarm();

  std::vector<Tensor> params_;
  Communicator& comm_;
  std::vector<Bucket> buckets_;
  size_t started_ = 0;  // buckets 0..started_-1 have started their all-reduce
  bool armed_ = false;
  double last_wait_seconds_ = 0;
};

}  // namespace nf::dist
