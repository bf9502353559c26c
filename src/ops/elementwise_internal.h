#pragma once
// Pieces shared by the elementwise op files (not public API).
#include "nanoformer/core/tensor.h"
#include "ops/cpu/elementwise.h"

namespace nf {

// Checks operands are defined and share dtype and device (errors name op, dtypes and shapes).
void check_binary_operands(const char* name, const Tensor& a, const Tensor& b);
// Checks x is f32 or f64 (errors name op, dtype and shape).
void check_floating(const char* name, const Tensor& x);

// Checks dtypes and devices match, allocates the broadcast result and runs the binary kernel.
Tensor binary_forward(const char* name, BinaryOp op, const Tensor& a, const Tensor& b);
// g * d(a op b)/da or /db over g's (broadcast) shape; the caller sums it down to the operand.
Tensor binary_backward(const char* name, BinaryBackwardOp op, const Tensor& g, const Tensor& a, const Tensor& b);

// Allocates y shaped like x and runs the unary kernel.
Tensor unary_forward(const char* name, UnaryOp op, const Tensor& x);
// Records y = f(x) with the fused backward dx = dy f'(.) of `op`, computed from `saved` (x or y,
// as UnaryBackwardOp documents).
void record_unary(const char* name, Tensor& y, const Tensor& x, UnaryBackwardOp op, const Tensor& saved);

}  // namespace nf
