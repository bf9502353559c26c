#pragma once
// The activations of feed-forward layers that are not plain elementwise functions of one input:
// relu^2 (nanochat) and the SwiGLU gate (LLaMA, MiniMind). Each is one fused kernel forward and
// one backward; f32 (vectorised) and f64.
#include "nanoformer/core/tensor.h"

namespace nf {

// relu_squared(x) = max(x, 0)^2  (F.relu(x).square());  dx = 2 max(x, 0) dy
Tensor relu_squared(const Tensor& x);

// swiglu(gate, up) = silu(gate) * up, silu(a) = a sigmoid(a);
// dgate = dy up silu'(gate), silu'(a) = s (1 + a (1 - s)) with s = sigmoid(a);  dup = dy silu(gate).
// gate and up have the same shape and dtype; either may be a strided view, e.g. the two halves of
// one projection's output: swiglu(h.narrow(-1, 0, hidden), h.narrow(-1, hidden, hidden)).
Tensor swiglu(const Tensor& gate, const Tensor& up);

}  // namespace nf
