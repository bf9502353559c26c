// The traits table of the weight types (type_traits.h): one entry each, the only place that maps a
// type to its kernels.
#include "ops/cpu/quant/type_traits.h"

#include <array>
#include <iterator>

#include "nanoformer/core/error.h"
#include "ops/cpu/quant/panels.h"
#include "ops/cpu/quant/type_kernels.h"

namespace nf::cpu {
namespace {

constexpr QuantTypeTraits kTraits[] = {
    // type           quantise       dequantise       x blocks decode     prefill
    //                (and, where the type has panels: packing, decode, prefill on them, a row back)
    {QuantType::f32,  quantize_f32,  dequantize_f32,  0,       gemv_f32,  nullptr},
    {QuantType::f64,  quantize_f64,  dequantize_f64,  0,       nullptr,   nullptr},
    {QuantType::f16,  quantize_f16,  dequantize_f16,  0,       gemv_f16,  nullptr},
    {QuantType::bf16, quantize_bf16, dequantize_bf16, 0,       gemv_bf16, nullptr},
    {QuantType::q8_0, quantize_q8_0, dequantize_q8_0, 32,      gemv_q8_0, gemm_q8_0,
     pack_panels_q8_0, gemv_panels_q8_0, gemm_panels_q8_0, unpack_panel_row_q8_0},
    {QuantType::q8_1, quantize_q8_1, dequantize_q8_1, 0,       nullptr,   nullptr},
    {QuantType::q4_0, quantize_q4_0, dequantize_q4_0, 32,      gemv_q4_0, gemm_q4_0,
     pack_panels_q4_0, gemv_panels_q4_0, gemm_panels_q4_0, unpack_panel_row_q4_0},
    {QuantType::q4_1, quantize_q4_1, dequantize_q4_1, 32,      gemv_q4_1, gemm_q4_1,
     pack_panels_q4_1, gemv_panels_q4_1, gemm_panels_q4_1, unpack_panel_row_q4_1},
    {QuantType::q5_0, quantize_q5_0, dequantize_q5_0, 32,      gemv_q5_0, gemm_q5_0,
     pack_panels_q5_0, gemv_panels_q5_0, gemm_panels_q5_0, unpack_panel_row_q5_0},
    {QuantType::q5_1, quantize_q5_1, dequantize_q5_1, 32,      gemv_q5_1, gemm_q5_1,
     pack_panels_q5_1, gemv_panels_q5_1, gemm_panels_q5_1, unpack_panel_row_q5_1},
    {QuantType::q4_k, quantize_q4_k, dequantize_q4_k, 256,     gemv_q4_k, gemm_q4_k,
     pack_panels_q4_k, gemv_panels_q4_k, gemm_panels_q4_k, unpack_panel_row_q4_k},
    {QuantType::q6_k, quantize_q6_k, dequantize_q6_k, 256,     gemv_q6_k, gemm_q6_k,
     pack_panels_q6_k, gemv_panels_q6_k, gemm_panels_q6_k, unpack_panel_row_q6_k},
    {QuantType::q5_k, quantize_q5_k, dequantize_q5_k, 256,     gemv_q5_k, gemm_q5_k,
     pack_panels_q5_k, gemv_panels_q5_k, gemm_panels_q5_k, unpack_panel_row_q5_k},
    {QuantType::q3_k, quantize_q3_k, dequantize_q3_k, 256,     gemv_q3_k, gemm_q3_k},
    {QuantType::q8_k, quantize_q8_k, dequantize_q8_k, 0,       nullptr,   nullptr},
};

// kTraits' index of each type number (-1: none), so a look-up is one load
constexpr size_t kMaxTypeNumber = 31;
constexpr auto kIndex = [] {
  std::array<int, kMaxTypeNumber + 1> index{};
  index.fill(-1);
  for (size_t i = 0; i < std::size(kTraits); ++i) index[static_cast<size_t>(kTraits[i].type)] = static_cast<int>(i);
  return index;
}();

}  // namespace

const QuantTypeTraits& quant_traits(QuantType type) {
  const auto number = static_cast<size_t>(type);
  if (number <= kMaxTypeNumber && kIndex[number] >= 0) return kTraits[kIndex[number]];
  NF_FAIL("cpu: weight type ", quant_type_info(type).name, " has no kernels");  // (quant_type_info throws for an unknown number)
}

int64_t activation_block(QuantType weight_type) { return quant_traits(weight_type).activation_block; }

}  // namespace nf::cpu
