// The CPU entries of linear: the choice among the matrix-vector kernels, the GEMMs and dequantising.
#include "ops/cpu/matmul/linear.h"

#include <vector>

#include "nanoformer/core/profile.h"
#include "ops/cpu/elementwise.h"
#include "ops/cpu/matmul/gemv.h"
#include "ops/cpu/matmul/matmul.h"
#include "ops/cpu/quant/activation_quant.h"
#include "ops/cpu/quant/quant_gemm.h"
#include "ops/cpu/quant/quant_gemv.h"
#include "ops/cpu/quant/quant_rows.h"
#include "ops/cpu/quant/type_traits.h"

namespace nf::cpu {
namespace {

// y += b, b broadcast over y's rows
void add_bias(const Tensor& y, const Tensor& bias) {
  if (bias.defined()) binary(BinaryOp::add, y, y, bias);
}

// x's rows (m, k), unit stride along k, quantised for quant_gemm into the blocks a weight of
// `wtype` takes (Q8_0's or Q8_K's, activation_block)
struct QuantizedRows {
  std::vector<BlockQ8_0> q8_0;
  std::vector<BlockQ8_K> q8_k;
  const void* data() const { return q8_0.empty() ? static_cast<const void*>(q8_k.data()) : q8_0.data(); }
  void* data() { return q8_0.empty() ? static_cast<void*>(q8_k.data()) : q8_0.data(); }
};
QuantizedRows quantized_activations(const Tensor& x, QuantType wtype) {
  const profile::Scope timed("linear: quantise x");
  const int64_t block = activation_block(wtype), blocks = x.size(0) * (x.size(1) / block);
  QuantizedRows xq;
  if (block == kQK8_0) xq.q8_0.resize(static_cast<size_t>(blocks));
  else xq.q8_k.resize(static_cast<size_t>(blocks));
  quantize_activation_blocks(x.data<float>(), x.stride(0), x.size(0), x.size(1), block, xq.data());
  return xq;
}

// y = xq W^T + b on the register-blocked integer GEMM, on W's panels where it carries them
// (panels.h; made at load only for the types whose panels this CPU's kernels read, panels_pay):
// never the file's rows then, whose pages the loader gave back (an AVX2 prefill that read them
// faulted them in again, minimind2-small Q4_0: +12 MiB resident)
void gemm_rows(const Tensor& y, const QuantizedRows& xq, int64_t m, const QuantizedTensor& w, const Tensor& bias) {
  const QuantTypeTraits& traits = quant_traits(w.type());
  if (w.panels() && traits.gemm_panels)
    traits.gemm_panels(w.panels()->data(), w.rows(), w.cols(), xq.data(), m, y.data<float>(), w.rows());
  else
    quant_gemm(w.type(), w.data(), w.rows(), w.cols(), xq.data(), m, y.data<float>(), w.rows());
  add_bias(y, bias);
}

}  // namespace

void linear(const Tensor& y, const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (gemv_applies(x, weight)) return linear_gemv(y, x, weight, bias);
  matmul(y, x, weight.t());
  add_bias(y, bias);
}

void linear(std::span<const GemvProduct> products, const Tensor& x) {
  bool gemv = true;
  for (const GemvProduct& p : products) gemv = gemv && gemv_applies(x, *p.weight);
  if (gemv) return linear_gemv(products, x);
  for (const GemvProduct& p : products) linear(*p.y, x, *p.weight, *p.bias);
}

void quant_linear(const Tensor& y, const Tensor& x, const QuantizedTensor& weight, const Tensor& bias) {
  if (quant_gemv_applies(x, weight)) return quant_linear_gemv(y, x, weight, bias);
  if (quant_gemm_supports(weight.type())) return gemm_rows(y, quantized_activations(x, weight.type()), x.size(0), weight, bias);
  const Tensor w = Tensor::empty({weight.rows(), weight.cols()});
  dequantize_rows(w, weight, 0, weight.rows());
  linear(y, x, w, bias);
}

void quant_linear(std::span<const QuantGemvProduct> products, const Tensor& x) {
  const bool few_rows = x.size(0) <= kQuantGemvMaxRows;
  bool gemv = few_rows, gemm = !few_rows;
  for (const QuantGemvProduct& p : products) {
    const QuantType type = p.weight->type(), first = products[0].weight->type();
    gemv = gemv && type == first && quant_gemv_applies(x, *p.weight);
    // (types whose activations are quantised alike share x's blocks: a Q4_K q with a Q6_K v)
    gemm = gemm && quant_gemm_supports(type) && activation_block(type) == activation_block(first);
  }
  if (gemv) return quant_linear_gemv(products, x);
  if (gemm) {
    const QuantizedRows xq = quantized_activations(x, products[0].weight->type());
    for (const QuantGemvProduct& p : products) gemm_rows(*p.y, xq, x.size(0), *p.weight, *p.bias);
    return;
  }
  for (const QuantGemvProduct& p : products) quant_linear(*p.y, x, *p.weight, *p.bias);
}

}  // namespace nf::cpu
