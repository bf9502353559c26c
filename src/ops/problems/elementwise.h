#pragma once
// What an elementwise kernel is asked for, on any device: the op of a binary, comparison or unary
// kernel and of their backward (ops/elementwise_*.cpp fill the per-device tables).
namespace nf {

// out = a (op) b; maximum/minimum propagate NaN
enum class BinaryOp { add, sub, mul, div, pow, maximum, minimum };
// d = g * d(a op b)/da (the *_a ops) or /db (the *_b ops), over the broadcast shape of g
enum class BinaryBackwardOp { pow_base, pow_exponent, maximum_a, maximum_b, minimum_a, minimum_b };
// out (bool) = a (op) b
enum class CompareOp { eq, ne, lt, le, gt, ge };
// out = op(x)
enum class UnaryOp { neg, abs, exp, log, sqrt, rsqrt, square, tanh, sigmoid, relu, silu, softplus, gelu, gelu_tanh };
// dx = dy * op'(x), computed from `saved`: the input x for abs, log, square, silu, softplus, gelu, gelu_tanh;
// the output y for exp, sqrt, rsqrt, tanh, sigmoid, relu.
enum class UnaryBackwardOp { abs, exp, log, sqrt, rsqrt, square, tanh, sigmoid, relu, silu, softplus, gelu, gelu_tanh };

}  // namespace nf
