// AttentionPosition's rotations of a continuous-batching step's rows, row by row: what a scheme
// that rotates them in one call (RotaryPosition) overrides.
#include "nanoformer/nn/attention_position.h"

#include <vector>

#include "nanoformer/core/error.h"
#include "nanoformer/ops/join.h"
#include "nanoformer/ops/view.h"

namespace nf::nn {
namespace {

// x's rows each at its offset (one offset: every row at it)
template <class Rotate>
Tensor each_row(const Tensor& x, std::span<const int64_t> offsets, Rotate rotate) {
  if (offsets.size() == 1) return rotate(x, offsets[0]);
  NF_CHECK(x.dim() >= 3 && static_cast<int64_t>(offsets.size()) == x.size(0), "AttentionPosition: ", offsets.size(),
           " offsets for ", shape_str(x.shape()), ": one per batch row");
  std::vector<Tensor> rows;
  rows.reserve(offsets.size());
  for (size_t b = 0; b < offsets.size(); ++b) rows.push_back(rotate(narrow(x, 0, static_cast<int64_t>(b), 1), offsets[b]));
  return rows.size() == 1 ? rows[0] : cat(rows, 0);
}

}  // namespace

Tensor AttentionPosition::rotate_queries(const Tensor& q, std::span<const int64_t> q_offsets) {
  return each_row(q, q_offsets, [&](const Tensor& row, int64_t offset) { return rotate_queries(row, offset); });
}

Tensor AttentionPosition::rotate_keys(const Tensor& k, std::span<const int64_t> k_offsets) {
  return each_row(k, k_offsets, [&](const Tensor& row, int64_t offset) { return rotate_keys(row, offset); });
}

}  // namespace nf::nn
