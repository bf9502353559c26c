#pragma once
// Views and layout: results share storage with their input where the layout allows it.
// Every view is differentiable; its backward routes the gradient back to the input's layout.
#include <vector>

#include "nanoformer/core/tensor.h"

namespace nf {

Tensor reshape(const Tensor& x, const Shape& shape);  // one -1 allowed; copies when it must
Tensor view(const Tensor& x, const Shape& shape);     // never copies; throws when impossible
Tensor flatten(const Tensor& x, int64_t start_dim = 0, int64_t end_dim = -1);
Tensor transpose(const Tensor& x, int64_t d0, int64_t d1);
Tensor permute(const Tensor& x, const std::vector<int64_t>& dims);
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length);
Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step = 1);
Tensor select(const Tensor& x, int64_t dim, int64_t index);
Tensor expand(const Tensor& x, const Shape& shape);
Tensor squeeze(const Tensor& x);
Tensor squeeze(const Tensor& x, int64_t dim);
Tensor unsqueeze(const Tensor& x, int64_t dim);
Tensor contiguous(const Tensor& x);
Tensor clone(const Tensor& x);
Tensor to_dtype(const Tensor& x, DType dtype);  // f32 <-> bf16/f16 round to nearest even

// numpy broadcasting: align trailing dims; sizes must match or be 1.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

// Copies src into dst elementwise (any layouts, same shape, dtypes converted). No autograd.
void copy_into(const Tensor& dst, const Tensor& src);

}  // namespace nf
