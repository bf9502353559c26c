#pragma once
// Data-parallel gradient averaging that overlaps backward (as PyTorch's DDP): the parameters are
// grouped into buckets of about bucket_bytes, in reverse order (backward reaches the last layers
// first); during an armed backward, each leaf's gradient-ready hook (autograd/grad_ready_hook.h)
// counts down its bucket, and a bucket whose gradients are all final is copied into its buffer
// and its all-reduce started at once, while backward continues. finish() starts what is left
// (parameters backward did not reach contribute zeros), waits for every bucket against the
// communicator's deadline, and writes the sums back into the gradients:
//   grad_p = sum over ranks of grad_p      (the trainer weights each rank's loss by its share of
//                                           the step's tokens, so the sum is the step's gradient)
// With one rank nothing is copied or waited for. Only f32 parameters.
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
  // Seconds the last finish() spent blocked waiting for all-reduces to complete.
  double last_wait_seconds() const { return last_wait_seconds_; }

 private:
  struct Bucket {
    std::vector<size_t> params;     // indices into params_
    std::vector<int64_t> offsets;   // of each parameter in buffer
    std::vector<float> buffer;
    size_t ready = 0;
    std::unique_ptr<Request> request;
  };
  void on_ready(size_t bucket);
  void start(Bucket& bucket);
  void disarm();

  std::vector<Tensor> params_;
  Communicator& comm_;
  std::vector<Bucket> buckets_;
  bool armed_ = false;
  double last_wait_seconds_ = 0;
};

}  // namespace nf::dist
