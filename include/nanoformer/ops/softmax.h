#pragma once
// softmax(x)_i = e^(x_i - max x) / sum_j e^(x_j - max x) along `dim`, computed stably;
// log_softmax(x)_i = x_i - max x - log sum_j e^(x_j - max x).
#include "nanoformer/core/tensor.h"

namespace nf {

Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);

}  // namespace nf
