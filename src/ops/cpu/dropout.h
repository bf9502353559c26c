#pragma once
// CPU kernel of dropout. The mask is a pure function of (seed, first, element index), so forward
// and backward regenerate the same mask and no thread count changes it.
#include <cstdint>

#include "nanoformer/core/tensor.h"

namespace nf::cpu {

// out[i] = keep_i ? x[i] scale : 0, with keep_i = u_i < keep_prob and u_i the uniform [0, 1) draw
// of bernoulli (ops/cpu/random.h) from Philox(counter = first + i, key = seed): the same mask as
// bernoulli(shape, keep_prob) on a generator in state (seed, first) with x's dtype. x and out are
// contiguous, f32 or f64; i is the row-major element index.
void dropout_apply(const Tensor& out, const Tensor& x, double keep_prob, double scale, uint64_t seed, uint64_t first);

}  // namespace nf::cpu
