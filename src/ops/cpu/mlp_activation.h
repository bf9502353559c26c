#pragma once
// CPU kernels of relu_squared and swiglu. Outputs are freshly allocated (contiguous); inputs have
// the outputs' shape with any strides.
#include "nanoformer/core/tensor.h"

namespace nf::cpu {

// y = max(x, 0)^2
void relu_squared(const Tensor& y, const Tensor& x);
// dx = 2 max(x, 0) dy
void relu_squared_backward(const Tensor& dx, const Tensor& dy, const Tensor& x);

// y = silu(gate) up
void swiglu(const Tensor& y, const Tensor& gate, const Tensor& up);
// dgate = dy up silu'(gate), dup = dy silu(gate), in one pass
void swiglu_backward(const Tensor& dgate, const Tensor& dup, const Tensor& dy, const Tensor& gate, const Tensor& up);

}  // namespace nf::cpu
