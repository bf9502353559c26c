#pragma once
// Pieces shared by the elementwise op files (not public API).
#include "nanoformer/core/tensor.h"
#include "ops/cpu/elementwise.h"

namespace nf {

// Checks dtypes and devices match, allocates the broadcast result and runs the binary kernel.
Tensor binary_forward(const char* name, cpu::BinaryOp op, const Tensor& a, const Tensor& b);

}  // namespace nf
