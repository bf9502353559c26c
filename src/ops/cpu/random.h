#pragma once
#include <cstdint>

#include "nanoformer/core/tensor.h"
#include "ops/problems/random.h"

namespace nf::cpu {

// Fills contiguous `out`: element i is a function of Philox(counter = first + i, key = seed) only,
// so the result does not depend on the thread count.
//   uniform: a + (b - a) u        normal: a + b z (Box-Muller)
//   bernoulli: u < a ? 1 : 0      randint: a + floor(uniform over [0, b - a))
void random_fill(const Tensor& out, Distribution dist, double a, double b, uint64_t seed, uint64_t first);

}  // namespace nf::cpu
