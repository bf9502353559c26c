#include "ops/cpu/triangular.h"

#include <algorithm>

#include "ops/cpu/loops/loops.h"

namespace nf::cpu {

// Row i of a matrix keeps columns [i + diagonal, C) (upper) or [0, i + diagonal + 1) (lower): each
// row is a copied run and a zeroed run. Parallel over all rows of all matrices.
void triangular(const Tensor& out, const Tensor& x, int64_t diagonal, bool upper) {
  const int64_t nd = x.dim(), R = x.shape()[nd - 2], C = x.shape()[nd - 1];
  const int64_t rows = out.numel() / std::max<int64_t>(C, 1);
  if (out.numel() == 0) return;
  const Shape batch_shape(x.shape().begin(), x.shape().end() - 2);
  const Shape batch_strides(x.strides().begin(), x.strides().end() - 2);
  const int64_t row_stride = x.strides()[nd - 2], col_stride = x.strides()[nd - 1];
  diagonal = std::clamp<int64_t>(diagonal, -R, C);  // beyond these every row is all kept or all zero
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = static_cast<const T*>(x.raw_data());
    T* po = static_cast<T*>(out.raw_data());
    parallel_for(rows, std::max<int64_t>(1, kParallelGrain / C), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t i = r % R;
        int64_t matrix = r / R, x_off = i * row_stride;
        for (size_t d = batch_shape.size(); d-- > 0;) {
          x_off += (matrix % batch_shape[d]) * batch_strides[d];
          matrix /= batch_shape[d];
        }
        const T* xr = px + x_off;
        T* o = po + r * C;
        const int64_t edge = std::clamp<int64_t>(upper ? i + diagonal : i + diagonal + 1, 0, C);
        const int64_t keep_begin = upper ? edge : 0, keep_end = upper ? C : edge;
        std::fill(o, o + keep_begin, T{});
        if (col_stride == 1) {
          std::copy(xr + keep_begin, xr + keep_end, o + keep_begin);
        } else {
          for (int64_t j = keep_begin; j < keep_end; ++j) o[j] = xr[j * col_stride];
        }
        std::fill(o + keep_end, o + C, T{});
      }
    });
  });
}

}  // namespace nf::cpu
