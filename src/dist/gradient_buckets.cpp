// GradientBuckets: bucketed, overlapped all-reduce of gradients, started in a fixed order.
#include "nanoformer/dist/gradient_buckets.h"

#include <chrono>
#include <cstring>

#include "nanoformer/autograd/grad_ready_hook.h"
#include "nanoformer/core/error.h"

namespace nf::dist {

GradientBuckets::GradientBuckets(std::vector<Tensor> params, Communicator& comm, int64_t bucket_bytes)
    : params_(std::move(params)), comm_(comm) {
  NF_CHECK(bucket_bytes > 0, "gradient buckets: bucket size ", bucket_bytes, " bytes must be > 0");
  if (comm_.size() == 1) return;
  const auto limit = static_cast<int64_t>(bucket_bytes / static_cast<int64_t>(sizeof(float)));
  for (size_t k = params_.size(); k-- > 0;) {  // last parameters first: backward finishes them first
    const Tensor& p = params_[k];
    NF_CHECK(p.dtype() == DType::f32, "gradient buckets: parameter ", p.name(), " is ", dtype_name(p.dtype()),
             ", not f32");
    if (buckets_.empty() || (!buckets_.back().params.empty() && buckets_.back().values + p.numel() > limit))
      buckets_.emplace_back();
    Bucket& b = buckets_.back();
    b.params.push_back(k);
    b.offsets.push_back(b.values);
    b.values += p.numel();
  }
  for (Bucket& b : buckets_) b.buffer.resize(static_cast<size_t>(b.values) + b.params.size());
}

GradientBuckets::~GradientBuckets() { disarm(); }

void GradientBuckets::arm() {
  if (buckets_.empty()) return;
  started_ = 0;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    buckets_[i].ready = 0;
    for (size_t k : buckets_[i].params) autograd::set_grad_ready_hook(params_[k], [this, i] { on_ready(i); });
  }
  armed_ = true;
}

void GradientBuckets::disarm() {
  if (!armed_) return;
  for (const Tensor& p : params_) autograd::clear_grad_ready_hook(p);
  armed_ = false;
}

void GradientBuckets::on_ready(size_t bucket) {
  ++buckets_[bucket].ready;
  start_ready_in_order();
  // MPI progresses non-blocking collectives only inside MPI calls: poll those in flight
  for (size_t i = 0; i < started_; ++i) buckets_[i].request->test();
}

// Starts the complete buckets that every earlier bucket has gone before: the same order on all ranks.
void GradientBuckets::start_ready_in_order() {
  while (started_ < buckets_.size() && buckets_[started_].ready == buckets_[started_].params.size())
    start(buckets_[started_++]);
}

// buffer = this rank's gradients (zeros where backward gave none) and, after them, 1 for each
// parameter that has a gradient; then the all-reduce starts
void GradientBuckets::start(Bucket& b) {
  for (size_t j = 0; j < b.params.size(); ++j) {
    const Tensor& p = params_[b.params[j]];
    float* to = b.buffer.data() + b.offsets[j];
    const Tensor g = p.grad();
    if (g.defined()) {
      const Tensor g32 = g.to(DType::f32).contiguous();
      std::memcpy(to, g32.data<float>(), static_cast<size_t>(p.numel()) * sizeof(float));
    } else {
      std::memset(to, 0, static_cast<size_t>(p.numel()) * sizeof(float));
    }
    b.buffer[static_cast<size_t>(b.values) + j] = g.defined() ? 1.0f : 0.0f;
  }
  b.request = comm_.start_allreduce_sum(b.buffer.data(), static_cast<int64_t>(b.buffer.size()));
}

void GradientBuckets::finish() {
  disarm();
  last_wait_seconds_ = 0;
  if (buckets_.empty()) return;
  for (; started_ < buckets_.size(); ++started_) start(buckets_[started_]);
  const auto begin = std::chrono::steady_clock::now();
  for (size_t i = 0; i < buckets_.size(); ++i)
    comm_.wait(*buckets_[i].request, "the all-reduce of gradient bucket " + std::to_string(i));
  last_wait_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  for (Bucket& b : buckets_) {
    b.request.reset();
    for (size_t j = 0; j < b.params.size(); ++j) {
      const Tensor& p = params_[b.params[j]];
      if (b.buffer[static_cast<size_t>(b.values) + j] == 0.0f) continue;  // no rank has a gradient for it
      Tensor g = p.grad();
      if (!g.defined() || g.dtype() != DType::f32 || !g.is_contiguous()) {
        g = Tensor::empty(p.shape());
        p.set_grad(g);
      }
      std::memcpy(g.data<float>(), b.buffer.data() + b.offsets[j], static_cast<size_t>(p.numel()) * sizeof(float));
    }
  }
  started_ = 0;
}

}  // namespace nf::dist
