#include "ops/cpu/indexing.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "nanoformer/core/error.h"
#include "ops/cpu/loops/elementwise_loops.h"
#include "ops/cpu/loops/loops.h"
#include "ops/cpu/loops/reduce_loops.h"

namespace nf::cpu {
namespace {

// Calls fn(U{}) with U an unsigned integer as wide as one element: copies move bits, so one
// instantiation serves every dtype of that width.
template <class Fn>
void visit_element_bits(size_t itemsize, Fn&& fn) {
  switch (itemsize) {
    case 1: fn(uint8_t{}); return;
    case 2: fn(uint16_t{}); return;
    case 4: fn(uint32_t{}); return;
    case 8: fn(uint64_t{}); return;
    default: NF_FAIL("indexing kernel: unsupported element size ", itemsize);
  }
}

// A contiguous shape seen as (outer, n, inner) around `dim`.
struct Around {
  int64_t outer = 1, n = 1, inner = 1;
};
Around around(const Shape& shape, int64_t dim) {
  Around a;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (d < dim) a.outer *= shape[d];
    else if (d == dim) a.n = shape[d];
    else a.inner *= shape[d];
  }
  return a;
}

}  // namespace

int64_t first_out_of_range(const Tensor& index, int64_t size) {
  const int64_t n = index.numel();
  std::atomic<int64_t> first{n};
  visit_index(index.dtype(), "indexing", [&](auto tag) {
    using I = decltype(tag);
    const I* p = static_cast<const I*>(index.raw_data());
    parallel_for(n, kParallelGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const int64_t v = p[i];
        if (v < 0 || v >= size) {
          int64_t seen = first.load();
          while (i < seen && !first.compare_exchange_weak(seen, i)) {
          }
          return;
        }
      }
    });
  });
  const int64_t pos = first.load();
  return pos == n ? -1 : pos;
}

// One row copy per (o, k), parallel over the rows of out.
void index_select(const Tensor& out, const Tensor& x, const Tensor& index, int64_t dim) {
  const Around a = around(x.shape(), dim);
  const int64_t K = index.numel(), rows = a.outer * K;
  if (rows == 0 || a.inner == 0) return;
  visit_element_bits(x.itemsize(), [&](auto etag) {
    using E = decltype(etag);
    visit_index(index.dtype(), "index_select", [&](auto itag) {
      using I = decltype(itag);
      const E* src = static_cast<const E*>(x.raw_data());
      E* dst = static_cast<E*>(out.raw_data());
      const I* idx = static_cast<const I*>(index.raw_data());
      parallel_for(rows, std::max<int64_t>(1, kParallelGrain / a.inner), [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const int64_t o = r / K, k = r % K;
          std::copy_n(src + (o * a.n + static_cast<int64_t>(idx[k])) * a.inner, a.inner, dst + r * a.inner);
        }
      });
    });
  });
}

// Threads own disjoint (o, column) ranges of dst and walk k in order inside them: repeated indices
// accumulate without races, in the same order whatever the thread count.
void index_add(const Tensor& dst, const Tensor& src, const Tensor& index, int64_t dim) {
  const Around a = around(dst.shape(), dim);
  const int64_t K = index.numel(), columns = a.outer * a.inner;
  if (columns == 0 || K == 0) return;
  visit_arithmetic(dst.dtype(), "index_add", [&](auto tag) {
    using T = decltype(tag);
    visit_index(index.dtype(), "index_add", [&](auto itag) {
      using I = decltype(itag);
      T* pd = static_cast<T*>(dst.raw_data());
      const T* ps = static_cast<const T*>(src.raw_data());
      const I* idx = static_cast<const I*>(index.raw_data());
      parallel_for(columns, std::max<int64_t>(1, kParallelGrain / K), [&](int64_t begin, int64_t end) {
        for (int64_t c = begin; c < end;) {
          const int64_t o = c / a.inner, j0 = c % a.inner, j1 = std::min(a.inner, j0 + (end - c));
          T* d = pd + o * a.n * a.inner;
          const T* s = ps + o * K * a.inner;
          for (int64_t k = 0; k < K; ++k) {
            T* drow = d + static_cast<int64_t>(idx[k]) * a.inner;
            const T* srow = s + k * a.inner;
            for (int64_t j = j0; j < j1; ++j) drow[j] += srow[j];
          }
          c += j1 - j0;
        }
      });
    });
  });
}

// Walks index's positions with x's stride along dim set to 0, so x's offset is that of
// p[dim] = 0 and the index value supplies index[p] * x.stride(dim).
void gather(const Tensor& out, const Tensor& x, const Tensor& index, int64_t dim) {
  Shape x_strides = x.strides();
  const int64_t step = x_strides[dim];
  x_strides[dim] = 0;
  visit_element_bits(x.itemsize(), [&](auto etag) {
    using E = decltype(etag);
    visit_index(index.dtype(), "gather", [&](auto itag) {
      using I = decltype(itag);
      E* po = static_cast<E*>(out.raw_data());
      const I* pi = static_cast<const I*>(index.raw_data());
      const E* px = static_cast<const E*>(x.raw_data());
      for_each_run<3>(index.shape(), {out.strides(), index.strides(), x_strides},
                      [&](std::array<int64_t, 3> off, int64_t n, std::array<int64_t, 3> st) {
                        E* o = po + off[0];
                        const I* id = pi + off[1];
                        const E* s = px + off[2];
                        for (int64_t i = 0; i < n; ++i) {
                          o[i * st[0]] = s[i * st[2] + static_cast<int64_t>(id[i * st[1]]) * step];
                        }
                      });
    });
  });
}

// Each "line" (a position of index with p[dim] dropped) writes only dst elements that share its
// other coordinates, so lines are spread over threads and each walks p[dim] in order. Lines are
// taken in blocks, p[dim] outermost, so neighbouring lines touch neighbouring memory.
void scatter_add(const Tensor& dst, const Tensor& src, const Tensor& index, int64_t dim) {
  Shape line_shape, dst_strides, src_strides, index_strides;
  for (int64_t d = 0; d < index.dim(); ++d) {
    if (d == dim) continue;
    line_shape.push_back(index.shape()[d]);
    dst_strides.push_back(dst.strides()[d]);
    src_strides.push_back(src.strides()[d]);
    index_strides.push_back(index.strides()[d]);
  }
  const int64_t L = index.shape()[dim], lines = shape_numel(line_shape);
  if (L == 0 || lines == 0) return;
  const int64_t dst_step = dst.strides()[dim], src_step = src.strides()[dim], index_step = index.strides()[dim];
  constexpr int64_t kBlock = 1024;
  visit_arithmetic(dst.dtype(), "scatter_add", [&](auto tag) {
    using T = decltype(tag);
    visit_index(index.dtype(), "scatter_add", [&](auto itag) {
      using I = decltype(itag);
      T* pd = static_cast<T*>(dst.raw_data());
      const T* ps = static_cast<const T*>(src.raw_data());
      const I* pi = static_cast<const I*>(index.raw_data());
      parallel_for(lines, std::max<int64_t>(1, kParallelGrain / L), [&](int64_t begin, int64_t end) {
        std::vector<int64_t> dst_off, src_off, index_off;
        for (int64_t b = begin; b < end; b += kBlock) {
          const int64_t e = std::min(end, b + kBlock), n = e - b;
          offsets_of(line_shape, dst_strides, b, e, dst_off);
          offsets_of(line_shape, src_strides, b, e, src_off);
          offsets_of(line_shape, index_strides, b, e, index_off);
          for (int64_t j = 0; j < L; ++j) {
            for (int64_t i = 0; i < n; ++i) {
              const int64_t target = static_cast<int64_t>(pi[index_off[i] + j * index_step]);
              pd[dst_off[i] + target * dst_step] += ps[src_off[i] + j * src_step];
            }
          }
        }
      });
    });
  });
}

// One memcpy per looked-up row, parallel over rows.
void embedding(const Tensor& out, const Tensor& weight, const Tensor& ids) {
  const int64_t N = ids.numel(), D = weight.shape()[1];
  if (N == 0 || D == 0) return;
  const size_t row_bytes = static_cast<size_t>(D) * weight.itemsize();
  const char* w = static_cast<const char*>(weight.raw_data());
  char* o = static_cast<char*>(out.raw_data());
  visit_index(ids.dtype(), "embedding", [&](auto itag) {
    using I = decltype(itag);
    const I* id = static_cast<const I*>(ids.raw_data());
    parallel_for(N, std::max<int64_t>(1, kParallelGrain / D), [&](int64_t begin, int64_t end) {
      for (int64_t n = begin; n < end; ++n) {
        std::memcpy(o + static_cast<size_t>(n) * row_bytes, w + static_cast<size_t>(id[n]) * row_bytes, row_bytes);
      }
    });
  });
}

// The positions n are grouped by id with a stable counting sort; threads then own disjoint rows v
// of grad_weight and sum their positions in increasing n, so no two threads touch one row and the
// sum order is fixed. Rows no id selects are zeroed in the same pass.
void embedding_backward(const Tensor& grad_weight, const Tensor& grad_out, const Tensor& ids) {
  const int64_t V = grad_weight.shape()[0], D = grad_weight.shape()[1], N = ids.numel();
  if (V == 0 || D == 0) return;
  // ids[order[p]] = v for p in [start[v], start[v + 1]), order increasing within each v
  std::vector<int64_t> start(static_cast<size_t>(V) + 1, 0), order(static_cast<size_t>(N));
  visit_index(ids.dtype(), "embedding_backward", [&](auto itag) {
    using I = decltype(itag);
    const I* id = static_cast<const I*>(ids.raw_data());
    for (int64_t n = 0; n < N; ++n) ++start[static_cast<size_t>(id[n]) + 1];
    for (int64_t v = 0; v < V; ++v) start[v + 1] += start[v];
    std::vector<int64_t> next(start.begin(), start.end() - 1);
    for (int64_t n = 0; n < N; ++n) order[static_cast<size_t>(next[static_cast<size_t>(id[n])]++)] = n;
  });
  visit_floating(grad_weight.dtype(), "embedding backward", [&](auto tag) {
    using T = decltype(tag);
    T* gw = static_cast<T*>(grad_weight.raw_data());
    const T* go = static_cast<const T*>(grad_out.raw_data());
    parallel_for(V, std::max<int64_t>(1, kParallelGrain / D), [&](int64_t begin, int64_t end) {
      for (int64_t v = begin; v < end; ++v) {
        T* row = gw + v * D;
        const int64_t first = start[v], last = start[v + 1];
        if (first == last) {
          std::fill_n(row, D, T(0));
          continue;
        }
        std::copy_n(go + order[first] * D, D, row);
        for (int64_t p = first + 1; p < last; ++p) {
          const T* g = go + order[p] * D;
          for (int64_t j = 0; j < D; ++j) row[j] += g[j];
        }
      }
    });
  });
}

}  // namespace nf::cpu
