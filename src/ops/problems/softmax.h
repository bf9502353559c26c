#pragma once
// The layout a softmax kernel works on, on any device (ops/softmax.cpp): a contiguous tensor seen as
// (outer, n, inner), the softmax taken along n.
#include <cstdint>

namespace nf {

struct SoftmaxLayout {
  int64_t outer = 1, n = 1, inner = 1;
};

}  // namespace nf
