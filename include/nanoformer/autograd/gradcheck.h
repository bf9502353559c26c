#pragma once
// Finite-difference gradient checker, in f64. For a function f of some f64 inputs it compares the
// autograd gradient of L = sum(f(x) * w) (w fixed random weights, so every output element counts)
// with the central difference (L(x + eps e_k) - L(x - eps e_k)) / 2 eps for every input element k.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "nanoformer/core/tensor.h"

namespace nf::autograd {

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-6;
  double rtol = 1e-4;
  uint64_t seed = 1234;  // for the output weights w
};

struct GradcheckResult {
  bool ok = true;
  std::string message;   // first mismatch: input, element index, analytic and numeric values
  explicit operator bool() const { return ok; }
};

using TensorFn = std::function<Tensor(const std::vector<Tensor>& inputs)>;

// Inputs must be f64; those with requires_grad set are checked, the others held constant.
GradcheckResult gradcheck(const TensorFn& f, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options = {});

}  // namespace nf::autograd
