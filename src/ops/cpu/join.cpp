#include "ops/cpu/join.h"

#include <algorithm>
#include <cstring>

#include "ops/cpu/copy.h"
#include "ops/cpu/loops/loops.h"

namespace nf::cpu {

// Seen as (outer, n_i * inner), each contiguous input is a block of `outer` rows that lands in
// columns [offset_i * inner, (offset_i + n_i) * inner) of out seen as (outer, N * inner): memcpy
// per (row, input). Other layouts go through the strided copy kernel.
void cat(const Tensor& out, const std::vector<Tensor>& inputs, int64_t dim) {
  if (out.numel() == 0) return;
  const Shape& shape = out.shape();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= shape[d];
  for (int64_t d = dim + 1; d < out.dim(); ++d) inner *= shape[d];
  const size_t item = out.itemsize();
  const int64_t out_row = shape[dim] * inner;

  struct Block {
    const char* src;
    int64_t row, column;  // elements per row; first column in out's row
  };
  std::vector<Block> blocks;
  int64_t offset = 0;
  for (const Tensor& in : inputs) {
    const int64_t n = in.shape()[dim];
    if (n > 0 && in.is_contiguous()) {
      blocks.push_back({static_cast<const char*>(in.raw_data()), n * inner, offset * inner});
    } else if (n > 0) {
      Shape piece_shape = shape;
      piece_shape[dim] = n;
      const Tensor piece = Tensor::from_storage(out.storage(), piece_shape, out.strides(),
                                                out.offset() + offset * out.strides()[dim], out.dtype());
      copy(piece, in);
    }
    offset += n;
  }
  if (blocks.empty()) return;
  // threads take even ranges of out's elements and copy the parts of blocks that fall inside
  char* dst = static_cast<char*>(out.raw_data());
  parallel_for(outer * out_row, kParallelGrain, [&](int64_t begin, int64_t end) {
    for (int64_t pos = begin; pos < end;) {
      const int64_t o = pos / out_row, first = pos % out_row, last = std::min(out_row, first + (end - pos));
      for (const Block& b : blocks) {
        const int64_t lo = std::max(first, b.column), hi = std::min(last, b.column + b.row);
        if (lo >= hi) continue;
        std::memcpy(dst + static_cast<size_t>(o * out_row + lo) * item,
                    b.src + static_cast<size_t>(o * b.row + lo - b.column) * item, static_cast<size_t>(hi - lo) * item);
      }
      pos += last - first;
    }
  });
}

}  // namespace nf::cpu
