// quantize, dequantize, and linear / embedding over quantised weights: checks, results, backward.
// The kernels are in src/ops/cpu/quant_rows.cpp (reference quantising) and quant_matmul.cpp.
#include "nanoformer/ops/quantized.h"

#include "nanoformer/core/error.h"
#include "nanoformer/ops/matmul.h"
#include "ops/cpu/quant_rows.h"

namespace nf {

QuantizedTensor quantize(const Tensor& weight, QuantType type) {
  NF_CHECK(weight.defined() && weight.dim() == 2, "quantize: weight must be 2-D (rows, cols), got ",
           weight.defined() ? shape_str(weight.shape()) : std::string("undefined"));
  const int64_t rows = weight.size(0), cols = weight.size(1);
  const int64_t block = quant_type_info(type).block_size;
  NF_CHECK(cols % block == 0, "quantize: ", quant_type_name(type), " needs rows of a multiple of ", block,
           " values, the weight is ", shape_str(weight.shape()));
  const Tensor w = weight.detach().to(DType::f32).contiguous();
  QuantizedTensor q = QuantizedTensor::empty(type, rows, cols);
  const float* src = w.data<float>();
  auto* dst = static_cast<unsigned char*>(q.mutable_data());
  const size_t row_bytes = q.row_bytes();
#pragma omp parallel for schedule(static) if (rows * cols > 65536)
  for (int64_t r = 0; r < rows; ++r) cpu::quantize_row(type, src + r * cols, dst + row_bytes * r, cols);
  return q;
}

Tensor dequantize_rows(const QuantizedTensor& weight, int64_t begin, int64_t end) {
  NF_CHECK(weight.defined(), "dequantize: weight is undefined");
  NF_CHECK(0 <= begin && begin <= end && end <= weight.rows(), "dequantize: rows ", begin, "..", end,
           " outside a weight of ", weight.rows(), " rows");
  const int64_t cols = weight.cols();
  Tensor out = Tensor::empty({end - begin, cols});
  float* dst = out.data<float>();
#pragma omp parallel for schedule(static) if ((end - begin) * cols > 65536)
  for (int64_t r = begin; r < end; ++r) cpu::dequantize_row(weight.type(), weight.row(r), dst + (r - begin) * cols, cols);
  return out;
}

Tensor dequantize(const QuantizedTensor& weight) { return dequantize_rows(weight, 0, weight.rows()); }

Tensor linear(const Tensor& x, const QuantizedTensor& weight, const Tensor& bias) {
  NF_CHECK(weight.defined(), "linear: quantised weight is undefined");
  NF_CHECK(x.dim() >= 1 && x.size(-1) == weight.cols(), "linear: input ", shape_str(x.shape()),
           " does not match the ", quant_type_name(weight.type()), " weight (", weight.rows(), ", ", weight.cols(), ")");
  // reference path: the weight dequantised, then the f32 product (quant_matmul.cpp replaces it)
  return linear(x, dequantize(weight), bias);
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
  float* dst = out.data<float>();
  for (int64_t i = 0; i < n; ++i) cpu::dequantize_row(weight.type(), weight.row(id[i]), dst + i * cols, cols);
  Shape shape = ids.shape();
  shape.push_back(cols);
  return out.view(shape);
}

}  // namespace nf
