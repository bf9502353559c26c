#pragma once
// Normalisation over the last dim: LayerNorm and RMSNorm, each one fused kernel per row forward
// (saving per-row statistics) and one per row backward (input, weight and bias gradients together).
// x (..., n) -> y (..., n); weight and bias (n) are optional (pass an undefined Tensor); f32 and f64.
#include "nanoformer/core/tensor.h"

namespace nf {

// Where LayerNorm adds eps (mean and var, biased, over the last dim):
//   rsqrt:         y = (x - mean) / sqrt(var + eps) * weight + bias  (F.layer_norm, nn.LayerNorm)
//   std_plus_eps:  y = (x - mean) / (sqrt(var) + eps) * weight + bias (the form of reference document 001)
// The rsqrt form is the fused kernel; the std_plus_eps form, which no reference architecture trains
// with, is a composition of our ops (so its backward is autograd's).
enum class LayerNormForm { rsqrt, std_plus_eps };

Tensor layer_norm(const Tensor& x, const Tensor& weight = {}, const Tensor& bias = {}, double eps = 1e-5,
                  LayerNormForm form = LayerNormForm::rsqrt);

// Where RMSNorm adds eps:
//   rsqrt:        y = x * rsqrt(mean(x^2) + eps) * weight   (F.rms_norm, LLaMA, MiniMind, nanochat)
//   rms_plus_eps: y = x / (sqrt(mean(x^2)) + eps) * weight  (the form of reference document 001)
enum class RmsNormForm { rsqrt, rms_plus_eps };

Tensor rms_norm(const Tensor& x, const Tensor& weight = {}, double eps = 1e-6, RmsNormForm form = RmsNormForm::rsqrt);

}  // namespace nf
