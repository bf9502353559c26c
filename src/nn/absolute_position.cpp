// Sinusoidal and learned absolute positions, added to the token embeddings.
#include "nanoformer/nn/absolute_position.h"

#include <cmath>

#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/view.h"

namespace nf::nn {
namespace {

// x (..., T, dim) with positions offset .. offset + T - 1 inside [0, max_len).
void check_positions(const char* module, const Tensor& x, int64_t dim, int64_t max_len, int64_t offset) {
  NF_CHECK(x.dim() >= 2 && x.size(-1) == dim, module, ": x ", shape_str(x.shape()), " is not (..., T, ", dim, ")");
  const int64_t T = x.size(-2);
  NF_CHECK(offset >= 0 && offset + T <= max_len, module, ": positions ", offset, " .. ", offset + T - 1,
           " are outside max_len ", max_len);
}

}  // namespace

// pe(t, 2i) = sin(t / 10000^(2i/dim)),  pe(t, 2i+1) = cos(t / 10000^(2i/dim)), in f64 then rounded
SinusoidalPosition::SinusoidalPosition(int64_t dim, int64_t max_len, bool scale_input)
    : AbsolutePosition("SinusoidalPosition"), dim_(dim), scale_input_(scale_input) {
  NF_CHECK(dim > 0 && dim % 2 == 0, "SinusoidalPosition: dim ", dim, " must be positive and even");
  NF_CHECK(max_len > 0, "SinusoidalPosition: max_len ", max_len, " must be positive");
  Tensor table = Tensor::empty({1, max_len, dim}, DType::f64);
  double* p = table.data<double>();
  for (int64_t i = 0; i < dim / 2; ++i) {
    const double inv_freq = std::pow(10000.0, -2.0 * static_cast<double>(i) / static_cast<double>(dim));
    for (int64_t t = 0; t < max_len; ++t) {
      p[t * dim + 2 * i] = std::sin(static_cast<double>(t) * inv_freq);
      p[t * dim + 2 * i + 1] = std::cos(static_cast<double>(t) * inv_freq);
    }
  }
  pe = register_buffer("pe", table.to(DType::f32));
}

// y = x (* sqrt(dim)) + pe[offset : offset + T]
Tensor SinusoidalPosition::forward(const Tensor& x, int64_t offset) {
  check_positions("SinusoidalPosition", x, dim_, pe.size(1), offset);
  const Tensor rows = narrow(select(pe, 0, 0), 0, offset, x.size(-2)).to(x.dtype());  // (T, dim)
  return scale_input_ ? x * std::sqrt(static_cast<double>(dim_)) + rows : x + rows;
}

LearnedPosition::LearnedPosition(int64_t max_len, int64_t dim, Generator& gen) : AbsolutePosition("LearnedPosition") {
  NF_CHECK(max_len > 0 && dim > 0, "LearnedPosition: max_len ", max_len, " and dim ", dim, " must be positive");
  weight = register_parameter("weight", randn({max_len, dim}, gen));
}

// y = x + weight[offset : offset + T]  (the gradient of weight's rows is the sum over the batch)
Tensor LearnedPosition::forward(const Tensor& x, int64_t offset) {
  check_positions("LearnedPosition", x, weight.size(1), weight.size(0), offset);
  return x + narrow(weight, 0, offset, x.size(-2));
}

}  // namespace nf::nn
