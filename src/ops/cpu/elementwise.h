#pragma once
// CPU kernels of the elementwise family. Inputs arrive broadcast-compatible with `out`, which is
// freshly allocated (contiguous) unless stated; the in-place ops pass the updated tensor as `out`.
// Floating kernels run on f32 (vectorised approximations, see vector_math.h) and f64 (std:: math).
#include "nanoformer/core/tensor.h"
#include "ops/problems/elementwise.h"

namespace nf::cpu {

// out = a (op) b; maximum/minimum propagate NaN
void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b);

// d = g * d(a op b)/da (the *_a ops) or /db (the *_b ops), over the broadcast shape of g
void binary_backward(BinaryBackwardOp op, const Tensor& d, const Tensor& g, const Tensor& a, const Tensor& b);

// out (bool) = a (op) b
void compare(CompareOp op, const Tensor& out, const Tensor& a, const Tensor& b);

// out = op(x)
void unary(UnaryOp op, const Tensor& out, const Tensor& x);

// dx = dy * op'(x), computed from `saved`: the input x for abs, log, square, silu, softplus, gelu, gelu_tanh;
// the output y for exp, sqrt, rsqrt, tanh, sigmoid, relu.
void unary_backward(UnaryBackwardOp op, const Tensor& dx, const Tensor& dy, const Tensor& saved);

// out = x^exponent; dx = dy * exponent * x^(exponent - 1) (0 when exponent is 0)
void pow_scalar(const Tensor& out, const Tensor& x, double exponent);
void pow_scalar_backward(const Tensor& dx, const Tensor& dy, const Tensor& x, double exponent);

// out = min(max(x, lo), hi) (hi wins when lo > hi; NaN stays NaN); dx = dy where lo <= x <= hi, else 0
void clamp(const Tensor& out, const Tensor& x, double lo, double hi);
void clamp_backward(const Tensor& dx, const Tensor& dy, const Tensor& x, double lo, double hi);

// out = cond ? a : b (any dtype; cond bool); all three broadcast to out
void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b);
// out = mask ? value : x (any dtype; mask bool broadcast to x, x has out's shape)
void masked_fill(const Tensor& out, const Tensor& x, const Tensor& mask, double value);

}  // namespace nf::cpu
