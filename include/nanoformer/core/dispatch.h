#pragma once
// Per-device kernel tables. An op names its kernel type once and lists an implementation per
// device; calling the table with a tensor's device picks it, or throws naming op and device:
//
//   using SoftmaxKernel = void (*)(const float* x, float* y, int64_t rows, int64_t cols);
//   static const DeviceKernels<SoftmaxKernel> kSoftmax{.cpu = cpu::softmax_rows};
//   kSoftmax.get(x.device(), "softmax")(x_ptr, y_ptr, rows, cols);
//
// The call is timed under the op's name when profiling is on (core/profile.h).
//
// This is the one seam between ops and kernels: no op names a device's kernel except to fill its
// table. Each device's entry chooses among that device's own kernels from the problem it is given
// (src/ops/cpu/matmul/linear.h, attention_decode.h); op kinds and problem structs are device-neutral
// (src/ops/problems/). A second backend provides, for every table, one function of the table's
// signature in its `.cuda` slot, and is chosen by the tensors' device; its tensors' storage is its own.
#include <utility>

#include "nanoformer/core/device.h"
#include "nanoformer/core/error.h"
#include "nanoformer/core/profile.h"

namespace nf {

template <class Fn>
struct DeviceKernels {
  Fn cpu = nullptr;
  Fn cuda = nullptr;

  auto get(Device d, const char* op) const {
    Fn f = d.type == DeviceType::cpu ? cpu : cuda;
    NF_CHECK(f != nullptr, op, ": no kernel for device ", d.str());
    return [f, op](auto&&... args) {
      profile::Scope scope(op);
      return f(std::forward<decltype(args)>(args)...);
    };
  }
};

}  // namespace nf
