#pragma once
// dropout: in training, zero each element with probability p and scale the rest by 1 / (1 - p);
// in eval (training = false) or with p = 0, the identity. The mask comes from `gen`.
#include "nanoformer/core/generator.h"
#include "nanoformer/core/tensor.h"

namespace nf {

Tensor dropout(const Tensor& x, double p, bool training, Generator& gen);
Tensor dropout(const Tensor& x, double p, bool training);  // default generator

}  // namespace nf
