// RoPE inside attention: tables grown to the positions used, queries and keys rotated by the fused op.
#include "nanoformer/nn/rotary_position.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/view.h"

namespace nf::nn {

RotaryPosition::RotaryPosition(const RopeOptions& o) : AttentionPosition("RotaryPosition"), options_(o) {
  NF_CHECK(o.head_dim > 0 && o.head_dim % 2 == 0, "RotaryPosition: head_dim ", o.head_dim,
           " must be positive and even (RoPE rotates channel pairs)");
  NF_CHECK(o.max_len > 0, "RotaryPosition: max_len ", o.max_len, " must be positive");
  NF_CHECK(o.theta > 0, "RotaryPosition: theta ", o.theta, " must be positive");
  NF_CHECK(o.scale_factor > 0, "RotaryPosition: scale_factor ", o.scale_factor, " must be positive");
  NF_CHECK(o.scaling != RopeScaling::ntk || o.head_dim > 2, "RotaryPosition: ntk scaling needs head_dim > 2, got ",
           o.head_dim);
  NF_CHECK(o.scaling != RopeScaling::yarn || (o.original_max_len >= 0 && o.beta_fast > 0 && o.beta_slow > 0 &&
                                               o.attention_factor >= 0),
           "RotaryPosition: yarn needs original_max_len >= 0 (got ", o.original_max_len, "), beta_fast > 0 (got ",
           o.beta_fast, "), beta_slow > 0 (got ", o.beta_slow, ") and attention_factor >= 0 (got ", o.attention_factor,
           ")");
  // ntk: theta' = theta s^(D / (D - 2));  linear: positions t / s
  const double D = static_cast<double>(o.head_dim);
  theta_ = o.scaling == RopeScaling::ntk ? o.theta * std::pow(o.scale_factor, D / (D - 2.0)) : o.theta;
  divisor_ = o.scaling == RopeScaling::linear ? o.scale_factor : 1.0;
  inv_freq_ = rope_inverse_frequencies(o);
  attention_factor_ = rope_attention_factor(o);
}

// YaRN's ramp: d(b) = D ln(L / (2 pi b)) / (2 ln theta), low = max(floor(d(beta_fast)), 0),
// high = min(ceil(d(beta_slow)), D - 1), r_i = clamp((i - low) / (high - low), 0, 1), f'_i = f_i (1 - r_i + r_i / s)
std::vector<double> rope_inverse_frequencies(const RopeOptions& o) {
  const double D = static_cast<double>(o.head_dim);
  const double theta = o.scaling == RopeScaling::ntk ? o.theta * std::pow(o.scale_factor, D / (D - 2.0)) : o.theta;
  std::vector<double> inv_freq(static_cast<size_t>(o.head_dim / 2));
  for (size_t i = 0; i < inv_freq.size(); ++i) inv_freq[i] = std::pow(theta, -2.0 * static_cast<double>(i) / D);
  if (o.scaling != RopeScaling::yarn || o.scale_factor == 1.0) return inv_freq;  // s = 1: f' = f
  const double L = static_cast<double>(o.original_max_len > 0 ? o.original_max_len : o.max_len);
  const auto dim_of = [&](double rotations) {
    return D * std::log(L / (rotations * 2.0 * std::numbers::pi)) / (2.0 * std::log(o.theta));
  };
  const double low = std::max(std::floor(dim_of(o.beta_fast)), 0.0);
  double high = std::min(std::ceil(dim_of(o.beta_slow)), D - 1.0);
  if (low == high) high += 0.001;  // as transformers: no division by zero
  for (size_t i = 0; i < inv_freq.size(); ++i) {
    const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
    inv_freq[i] *= (1.0 - ramp) + ramp / o.scale_factor;
  }
  return inv_freq;
}

double rope_attention_factor(const RopeOptions& o) {
  if (o.scaling != RopeScaling::yarn) return 1.0;
  if (o.attention_factor > 0) return o.attention_factor;
  return o.scale_factor <= 1.0 ? 1.0 : 0.1 * std::log(o.scale_factor) + 1.0;
}

RopeTables RotaryPosition::tables(DType dtype, int64_t rows) {
  constexpr int64_t kFirstRows = 256;
  const int64_t wanted = std::clamp<int64_t>(rows, 1, options_.max_len);
  std::lock_guard lock(tables_mutex_);
  RopeTables& t = tables_[dtype];
  const int64_t have = t.cos.defined() ? t.cos.size(0) : 0;
  if (have < wanted)  // each row is computed from its own position: a grown table repeats the old rows exactly
    t = rope_tables(std::min(options_.max_len, std::max({wanted, 2 * have, kFirstRows})), inv_freq_, divisor_,
                    attention_factor_, dtype);
  return t;
}

Tensor RotaryPosition::rotate(const Tensor& x, std::span<const int64_t> offsets) {
  NF_CHECK(x.dim() >= 2 && x.size(-1) == options_.head_dim, "RotaryPosition: input ", shape_str(x.shape()),
           " does not end in head_dim ", options_.head_dim);
  const int64_t last = offsets.empty() ? 0 : *std::max_element(offsets.begin(), offsets.end());
  const RopeTables t = tables(x.dtype(), last + x.size(-2));
  return rope(x, t.cos, t.sin, offsets, options_.layout);
}

Tensor RotaryPosition::rotate_queries(const Tensor& q, int64_t q_offset) { return rotate(q, {&q_offset, 1}); }
Tensor RotaryPosition::rotate_keys(const Tensor& k, int64_t k_offset) { return rotate(k, {&k_offset, 1}); }
Tensor RotaryPosition::rotate_queries(const Tensor& q, std::span<const int64_t> q_offsets) { return rotate(q, q_offsets); }
Tensor RotaryPosition::rotate_keys(const Tensor& k, std::span<const int64_t> k_offsets) { return rotate(k, k_offsets); }

Tensor RotaryPosition::reposition_keys(const Tensor& k, int64_t delta) {
  const int64_t n = delta < 0 ? -delta : delta;
  NF_CHECK(n < options_.max_len, "RotaryPosition: a shift by ", delta, " positions exceeds the tables' ", options_.max_len);
  NF_CHECK(k.dim() >= 2, "RotaryPosition: keys ", shape_str(k.shape()), " must be (..., T, D)");
  const RopeTables t = tables(k.dtype(), n + 1);
  // the angle of position |delta| at every row: cos(-a) = cos(a), sin(-a) = -sin(a)
  const Shape rows{k.size(-2), options_.head_dim / 2};
  Tensor c = narrow(t.cos, 0, n, 1).expand(rows), s = narrow(t.sin, 0, n, 1).expand(rows);
  if (attention_factor_ != 1.0) {  // the keys already carry the factor: rotate only
    c = mul(c, 1.0 / attention_factor_);
    s = mul(s, 1.0 / attention_factor_);
  }
  return rope(k, c, delta < 0 ? neg(s) : s, 0, options_.layout);
}

}  // namespace nf::nn
