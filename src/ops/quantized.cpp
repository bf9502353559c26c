// quantize, dequantize, and linear / embedding over quantised weights: checks, results, backward.
// The kernels are chosen by the CPU entries of src/ops/cpu/matmul/linear.h (decode, prefill) and
// quant_rows.h (quantising, dequantising).
#include "nanoformer/ops/quantized.h"

#include <algorithm>
#include <vector>

#include "nanoformer/autograd/node.h"
#include "nanoformer/core/dispatch.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/matmul.h"
#include "nanoformer/ops/reduce.h"
#include "nanoformer/ops/view.h"
#include "ops/cpu/matmul/linear.h"
#include "ops/cpu/quant/panels.h"
#include "ops/cpu/quant/quant_rows.h"

namespace nf {
namespace {

using QuantLinearKernel = void (*)(const Tensor& y, const Tensor& x, const QuantizedTensor& weight, const Tensor& bias);
const DeviceKernels<QuantLinearKernel> kQuantLinear{.cpu = cpu::quant_linear};
using QuantLinearTogetherKernel = void (*)(std::span<const QuantGemvProduct> products, const Tensor& x);
const DeviceKernels<QuantLinearTogetherKernel> kQuantLinearTogether{.cpu = cpu::quant_linear};
using QuantizeKernel = void (*)(QuantizedTensor& out, const Tensor& weight);
const DeviceKernels<QuantizeKernel> kQuantize{.cpu = cpu::quantize_rows};
using DequantizeKernel = void (*)(const Tensor& out, const QuantizedTensor& w, int64_t begin, int64_t end);
const DeviceKernels<DequantizeKernel> kDequantize{.cpu = cpu::dequantize_rows};
using GatherKernel = void (*)(const Tensor& out, const QuantizedTensor& w, const int64_t* ids, int64_t n);
const DeviceKernels<GatherKernel> kGather{.cpu = cpu::gather_rows};
using PanelsKernel = std::shared_ptr<Storage> (*)(const QuantizedTensor& w);
const DeviceKernels<PanelsKernel> kPanels{.cpu = cpu::pack_panels};

// dx (M, K) = dy (M, N) W (N, K), W dequantised a tile of rows at a time (about 4 MiB of f32 each),
// never the whole matrix at once
Tensor linear_input_grad(const Tensor& dy, const QuantizedTensor& weight) {
  const int64_t n = weight.rows(), tile = std::max<int64_t>(1, (int64_t{1} << 20) / std::max<int64_t>(weight.cols(), 1));
  Tensor dx;
  for (int64_t n0 = 0; n0 < n; n0 += tile) {
    const int64_t rows = std::min(tile, n - n0);
    const Tensor part = matmul(narrow(dy, 1, n0, rows), dequantize_rows(weight, n0, n0 + rows));
    if (dx.defined()) add_(dx, part);
    else dx = part;
  }
  return dx.defined() ? dx : zeros({dy.size(0), weight.cols()});
}

}  // namespace

QuantizedTensor quantize(const Tensor& weight, QuantType type) {
  NF_CHECK(weight.defined() && weight.dim() == 2, "quantize: weight must be 2-D (rows, cols), got ",
           weight.defined() ? shape_str(weight.shape()) : std::string("undefined"));
  const int64_t rows = weight.size(0), cols = weight.size(1);
  const int64_t block = quant_type_info(type).block_size;
  NF_CHECK(cols % block == 0, "quantize: ", quant_type_name(type), " needs rows of a multiple of ", block,
           " values, the weight is ", shape_str(weight.shape()));
  const Tensor w = weight.detach().to(DType::f32).contiguous();
  QuantizedTensor q = QuantizedTensor::empty(type, rows, cols);
  kQuantize.get(w.device(), "quantize")(q, w);
  return q;
}

Tensor dequantize_rows(const QuantizedTensor& weight, int64_t begin, int64_t end) {
  NF_CHECK(weight.defined(), "dequantize: weight is undefined");
  NF_CHECK(0 <= begin && begin <= end && end <= weight.rows(), "dequantize: rows ", begin, "..", end,
           " outside a weight of ", weight.rows(), " rows");
  Tensor out = Tensor::empty({end - begin, weight.cols()});
  kDequantize.get(out.device(), "dequantize")(out, weight, begin, end);
  return out;
}

QuantizedTensor with_kernel_layout(const QuantizedTensor& weight) {
  NF_CHECK(weight.defined(), "with_kernel_layout: weight is undefined");
  std::shared_ptr<Storage> panels = kPanels.get(weight.storage()->device(), "with_kernel_layout")(weight);
  return panels ? weight.with_panels(std::move(panels)) : weight;
}

Tensor dequantize(const QuantizedTensor& weight) { return dequantize_rows(weight, 0, weight.rows()); }

Tensor linear(const Tensor& x, const QuantizedTensor& weight, const Tensor& bias) {
  NF_CHECK(weight.defined(), "linear: quantised weight is undefined");
  NF_CHECK(x.defined() && x.dtype() == DType::f32, "linear: input must be f32 for a quantised weight, got ",
           x.defined() ? dtype_name(x.dtype()) : "undefined");
  NF_CHECK(x.dim() >= 1 && x.size(-1) == weight.cols(), "linear: input ", shape_str(x.shape()),
           " does not match the ", quant_type_name(weight.type()), " weight (", weight.rows(), ", ", weight.cols(), ")");
  if (bias.defined())
    NF_CHECK(bias.dim() == 1 && bias.size(0) == weight.rows() && bias.dtype() == DType::f32, "linear: bias ",
             dtype_name(bias.dtype()), " ", shape_str(bias.shape()), " does not match the ", quant_type_name(weight.type()),
             " weight (", weight.rows(), ", ", weight.cols(), ") (expected f32 (", weight.rows(), "))");
  Shape out_shape = x.shape();
  out_shape.back() = weight.rows();
  Tensor x2 = x.detach().reshape({-1, weight.cols()});
  if (x2.size(1) > 1 && x2.stride(1) != 1) x2 = x2.contiguous();
  Tensor out = Tensor::empty({x2.size(0), weight.rows()});
  kQuantLinear.get(x.device(), "linear")(out, x2, weight, bias.defined() ? bias.detach() : Tensor());
  out = out.view(out_shape);
  autograd::record("linear", out, {x, bias}, [weight, in_shape = x.shape()](const Tensor& g, const autograd::Node& n) {
    const Tensor g2 = g.reshape({-1, g.size(-1)});
    std::vector<Tensor> grads(2);
    if (n.needs_input_grad(0)) grads[0] = linear_input_grad(g2, weight).view(in_shape);
    if (n.needs_input_grad(1)) grads[1] = sum(g2, {0});
    return grads;
  });
  return out;
}

std::vector<Tensor> linear_together(const Tensor& x, std::span<const QuantizedTensor* const> weights,
                                    std::span<const Tensor> biases) {
  NF_CHECK(weights.size() == biases.size(), "linear_together: ", weights.size(), " weights and ", biases.size(), " biases");
  bool together = weights.size() > 1 && x.defined() && x.dtype() == DType::f32 && x.dim() >= 1 &&
                  !autograd::needs_record({&x});
  Tensor x2;
  if (together) {
    x2 = x.detach().reshape({-1, x.shape().back()});
    if (x2.size(1) > 1 && x2.stride(1) != 1) x2 = x2.contiguous();
  }
  for (size_t i = 0; i < weights.size() && together; ++i)
    together = weights[i]->defined() && x2.size(1) == weights[i]->cols() && !autograd::needs_record({&biases[i]}) &&
               (!biases[i].defined() || (biases[i].dim() == 1 && biases[i].size(0) == weights[i]->rows() &&
                                         biases[i].dtype() == DType::f32));
  std::vector<Tensor> out;
  if (!together) {
    for (size_t i = 0; i < weights.size(); ++i) out.push_back(linear(x, *weights[i], biases[i]));
    return out;
  }
  const auto shaped = [&](const Tensor& y, int64_t rows) {
    Shape shape = x.shape();
    shape.back() = rows;
    return y.view(shape);
  };
  std::vector<Tensor> ys, detached;
  std::vector<QuantGemvProduct> products;
  ys.reserve(weights.size());
  detached.reserve(weights.size());
  for (size_t i = 0; i < weights.size(); ++i) {
    ys.push_back(Tensor::empty({x2.size(0), weights[i]->rows()}));
    detached.push_back(biases[i].defined() ? biases[i].detach() : Tensor());
    products.push_back({&ys.back(), weights[i], &detached.back()});
  }
  kQuantLinearTogether.get(x.device(), "linear")(products, x2);
  for (size_t i = 0; i < weights.size(); ++i) out.push_back(shaped(ys[i], weights[i]->rows()));
  return out;
}

Tensor embedding(const QuantizedTensor& weight, const Tensor& ids) {
  NF_CHECK(weight.defined(), "embedding: quantised weight is undefined");
  NF_CHECK(ids.dtype() == DType::i64 || ids.dtype() == DType::i32, "embedding: ids must be integers, got ",
           dtype_name(ids.dtype()));
  const Tensor flat = ids.to(DType::i64).contiguous().reshape({-1});
  const int64_t n = flat.numel(), cols = weight.cols();
  const int64_t* id = flat.data<int64_t>();
  for (int64_t i = 0; i < n; ++i)
    NF_CHECK(0 <= id[i] && id[i] < weight.rows(), "embedding: id ", id[i], " outside a vocabulary of ", weight.rows());
  Tensor out = Tensor::empty({n, cols});
  kGather.get(out.device(), "embedding")(out, weight, id, n);
  Shape shape = ids.shape();
  shape.push_back(cols);
  return out.view(shape);
}

}  // namespace nf
