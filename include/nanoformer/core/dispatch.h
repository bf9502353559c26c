#pragma once
// Per-device kernel tables. An op names its kernel type once and lists an implementation per
// device; calling the table with a tensor's device picks it, or throws naming op and device:
//
//   using SoftmaxKernel = void (*)(const float* x, float* y, int64_t rows, int64_t cols);
//   static const DeviceKernels<SoftmaxKernel> kSoftmax{.cpu = cpu::softmax_rows};
//   kSoftmax.get(x.device(), "softmax")(x_ptr, y_ptr, rows, cols);
//
// The call is timed under the op's name when profiling is on (core/profile.h).
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
