#pragma once
// Math over block-quantised weights (core/quantized_tensor.h). Quantising and dequantising are
// bit-identical to the reference of the `gguf` Python package (gguf.quants) for every type; the
// products quantise the activations on the fly (to Q8_0, or Q8_K for the K types, as llama.cpp)
// and take integer dot products per block. Gradients flow to the activations only (a quantised
// weight is frozen), through the dequantised weight: that is what LoRA over a quantised base needs.
#include <span>
#include <vector>

#include "nanoformer/core/quantized_tensor.h"
#include "nanoformer/core/tensor.h"

namespace nf {

// A 2-D float tensor (rows, cols), cols a multiple of the type's block size -> its blocks.
QuantizedTensor quantize(const Tensor& weight, QuantType type);
// -> f32 (rows, cols).
Tensor dequantize(const QuantizedTensor& weight);
// Rows `begin`..`end` of `weight` -> f32 (end - begin, cols).
Tensor dequantize_rows(const QuantizedTensor& weight, int64_t begin, int64_t end);

// W carrying its values a second time in the device's kernel layout where the device has one for
// its type, else W itself. CPU: 16-row panels of Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K and Q5_K on AVX512-VNNI
// (NANOFORMER_PANELS=1 / 0 forces them on / off; ops/cpu/quant/panels.h). Made once, at load:
// decode and prefill then read the panels, and the rows are left to everything else (dequantising,
// embedding, saving), so a loader that can drop the rows' pages (a file's mapping:
// GGUFFile::release) holds W once.
QuantizedTensor with_kernel_layout(const QuantizedTensor& weight);

// linear(x, W, b) = x W^T + b:  x (..., in) f32, W (out, in) quantised, b (out) or undefined -> (..., out).
// Backward: dx = dy W (W dequantised), db = sum of dy; W gets no gradient.
Tensor linear(const Tensor& x, const QuantizedTensor& weight, const Tensor& bias = {});
// linear(x, *weights[i], biases[i]) for each i, with the same values. The products of one x (q, k
// and v; gate and up) over weights of one type (or, for prefill, of types whose x is quantised
// alike: a Q4_K q with a Q6_K v), when no gradient is recorded: x quantised once;
// decoding's few rows in one hand-off between the threads, each taking its share of every weight.
std::vector<Tensor> linear_together(const Tensor& x, std::span<const QuantizedTensor* const> weights,
                                    std::span<const Tensor> biases);
// embedding(W (V, D) quantised, ids (...)) -> (..., D) f32: the rows dequantised; no gradient.
Tensor embedding(const QuantizedTensor& weight, const Tensor& ids);

}  // namespace nf
