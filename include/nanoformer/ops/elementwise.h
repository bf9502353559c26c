#pragma once
// Elementwise ops with numpy-style broadcasting and scalar operands.
// Floating ops work on f32 and f64; add/sub/mul/neg/abs/comparisons also on i32 and i64.
// Operands of a binary op must share a dtype (a scalar takes the tensor's dtype).
#include "nanoformer/core/tensor.h"

namespace nf {

// ---- binary: out = a (op) b, broadcast ----
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);       // a^b, a > 0 where b is not an integer
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, double b);
Tensor sub(const Tensor& a, double b);
Tensor sub(double a, const Tensor& b);
Tensor mul(const Tensor& a, double b);
Tensor div(const Tensor& a, double b);
Tensor div(double a, const Tensor& b);
Tensor pow(const Tensor& a, double exponent);

// ---- comparisons (bool result, no gradient) ----
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, double b);
Tensor lt(const Tensor& a, double b);
Tensor gt(const Tensor& a, double b);

// ---- unary ----
Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);     // 1 / sqrt(x)
Tensor square(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);   // 1 / (1 + e^-x)
Tensor relu(const Tensor& x);      // max(x, 0); gradient 0 at x = 0 (as PyTorch)
Tensor silu(const Tensor& x);      // x * sigmoid(x)
// softplus(x) = log(1 + e^x), and x itself above 20 (PyTorch's F.softplus with beta 1, threshold 20)
Tensor softplus(const Tensor& x);
enum class GeluApprox { none, tanh };
// none: x/2 (1 + erf(x/sqrt2)); tanh: x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
Tensor gelu(const Tensor& x, GeluApprox approximate = GeluApprox::none);
// clamp(x, lo, hi); gradient passes where lo <= x <= hi (as PyTorch)
Tensor clamp(const Tensor& x, double lo, double hi);
Tensor clamp_min(const Tensor& x, double lo);
Tensor clamp_max(const Tensor& x, double hi);

// ---- selection ----
// where(cond, a, b): a where cond else b; cond is bool; all three broadcast.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
// masked_fill(x, mask, v): v where mask (bool, broadcast to x) else x; no gradient where filled.
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);

// ---- in place, for optimizers and initialisers (refuse tensors that are part of a graph) ----
void fill_(const Tensor& x, double value);
void add_(const Tensor& x, const Tensor& y, double alpha = 1.0);  // x += alpha * y
void mul_(const Tensor& x, double value);

// ---- operators ----
inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator+(const Tensor& a, double b) { return add(a, b); }
inline Tensor operator+(double a, const Tensor& b) { return add(b, a); }
inline Tensor operator-(const Tensor& a, double b) { return sub(a, b); }
inline Tensor operator-(double a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, double b) { return mul(a, b); }
inline Tensor operator*(double a, const Tensor& b) { return mul(b, a); }
inline Tensor operator/(const Tensor& a, double b) { return div(a, b); }
inline Tensor operator/(double a, const Tensor& b) { return div(a, b); }
inline Tensor operator-(const Tensor& x) { return neg(x); }

}  // namespace nf
