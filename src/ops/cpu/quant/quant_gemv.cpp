// The decode product over quantised weights (quant_gemv.h): the operands checked and laid out as
// one TileArgs per product, then the tiles of the weight type's traits entry (on its panels where
// the weights carry them, panels.h).
#include "ops/cpu/quant/quant_gemv.h"

#include <algorithm>
#include <vector>

#include "nanoformer/core/error.h"
#include "ops/cpu/quant/gemv_tile.h"
#include "ops/cpu/quant/type_traits.h"

namespace nf::cpu {

bool quant_gemv_applies(const Tensor& x, const QuantizedTensor& weight) {
  return quant_traits(weight.type()).gemv != nullptr && x.dtype() == DType::f32 && x.dim() == 2 && x.size(0) >= 1 &&
         x.size(0) <= kQuantGemvMaxRows && x.size(1) == weight.cols() && (x.size(1) <= 1 || x.stride(1) == 1);
}

void quant_linear_gemv(std::span<const QuantGemvProduct> products, const Tensor& x, bool scalar) {
  NF_CHECK(!products.empty(), "quant_linear_gemv: no products");
  const QuantType type = products[0].weight->type();
  // the panels made at load (panels.h) when every weight has them, else the rows
  const bool panels = std::all_of(products.begin(), products.end(), [](const QuantGemvProduct& p) { return p.weight->panels() != nullptr; });
  std::vector<TileArgs> bases;
  std::vector<Tensor> biases;  // contiguous
  biases.reserve(products.size());
  for (const QuantGemvProduct& p : products) {
    const QuantizedTensor& weight = *p.weight;
    NF_CHECK(quant_gemv_applies(x, weight) && p.y->is_contiguous() && p.y->numel() == x.size(0) * weight.rows(),
             "quant_linear_gemv: unsupported operands x ", shape_str(x.shape()), " and ", quant_type_name(weight.type()),
             " weight (", weight.rows(), ", ", weight.cols(), ")");
    NF_CHECK(weight.type() == type, "quant_linear_gemv: weights of one x must share a type, got ",
             quant_type_name(type), " and ", quant_type_name(weight.type()));
    biases.push_back(p.bias->defined() ? p.bias->contiguous() : Tensor());
    const void* w = panels ? weight.panels()->data() : weight.data();
    bases.push_back(TileArgs{static_cast<const unsigned char*>(w), weight.row_bytes(), nullptr, weight.cols(),
                             nullptr, x.data<float>(), x.stride(0), 0, p.y->data<float>(), weight.rows(),
                             biases.back().defined() ? biases.back().data<float>() : nullptr});
  }
  (panels ? quant_traits(type).gemv_panels : quant_traits(type).gemv)(bases, x.size(0), scalar);
}

void quant_linear_gemv(const Tensor& y, const Tensor& x, const QuantizedTensor& weight, const Tensor& bias, bool scalar) {
  const QuantGemvProduct product{&y, &weight, &bias};
  quant_linear_gemv({&product, 1}, x, scalar);
}

}  // namespace nf::cpu
