#pragma once
// What a random-fill kernel is asked for, on any device (ops/factory_random.cpp).
namespace nf {

//   uniform: a + (b - a) u        normal: a + b z (Box-Muller)
//   bernoulli: u < a ? 1 : 0      randint: a + floor(uniform over [0, b - a))
enum class Distribution { uniform, normal, bernoulli, randint };

}  // namespace nf
