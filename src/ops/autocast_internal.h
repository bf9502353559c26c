#pragma once
// What matmul and linear ask of autocast (not public API; see nanoformer/ops/autocast.h).
#include "nanoformer/core/tensor.h"

namespace nf {

// The dtype a product of a and b rounds its operands to: autocast_dtype() when autocast is on and
// both operands are f32; f32 (no rounding) otherwise.
DType autocast_operand_dtype(const Tensor& a, const Tensor& b);
// t rounded to nearest even in `dtype` (bf16 or f16), laid out as t is; no history. A parameter's
// copy (a leaf that requires grad) is made once within the outermost AutocastGuard.
Tensor autocast_round(const Tensor& t, DType dtype);

}  // namespace nf
