#pragma once
// CPU kernels of the elementwise family. Inputs arrive broadcast-compatible with `out`, which is
// freshly allocated (contiguous) unless stated.
#include "nanoformer/core/tensor.h"

namespace nf::cpu {

enum class BinaryOp { add, sub, mul, div, pow, maximum, minimum };
// out = a (op) b
void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b);

enum class UnaryOp { neg };
// out = op(x)
void unary(UnaryOp op, const Tensor& out, const Tensor& x);

}  // namespace nf::cpu
