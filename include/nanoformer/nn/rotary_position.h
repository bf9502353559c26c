#pragma once
// Rotary position embedding inside attention: rotates queries and keys (B, H, T, D) at their
// absolute positions with the fused nf::rope op. The cos/sin tables (max_len, D/2) are computed
// once at construction and held as non-persistent buffers "cos" and "sin" (not in state_dict).
#include <cstdint>
#include <map>

#include "nanoformer/nn/attention_position.h"
#include "nanoformer/ops/rope.h"

namespace nf::nn {

// How positions beyond the trained length are reached, with scale factor s:
//   linear (position interpolation): angle uses t / s instead of t;
//   ntk (NTK-aware): theta' = theta * s^(D / (D - 2)).
enum class RopeScaling { none, linear, ntk };

struct RopeOptions {
  int64_t head_dim = 0;
  int64_t max_len = 2048;
  double theta = 10000.0;
  RopeLayout layout = RopeLayout::half;
  RopeScaling scaling = RopeScaling::none;
  double scale_factor = 1.0;
};

class RotaryPosition : public AttentionPosition {
 public:
  explicit RotaryPosition(const RopeOptions& options);
  Tensor rotate_queries(const Tensor& q, int64_t q_offset) override;
  Tensor rotate_keys(const Tensor& k, int64_t k_offset) override;
  Tensor reposition_keys(const Tensor& k, int64_t delta) override;  // one more rotation, by delta, at every row

  const RopeOptions& options() const { return options_; }
  // theta after NTK scaling, and the divisor of positions (s with linear scaling, else 1).
  double effective_theta() const { return theta_; }
  double position_divisor() const { return divisor_; }
  Tensor cos, sin;  // f32 tables (max_len, D/2)

 private:
  Tensor rotate(const Tensor& x, int64_t offset);
  const RopeTables& tables_for(DType dtype);

  RopeOptions options_;
  double theta_, divisor_;
  std::map<DType, RopeTables> other_dtypes_;  // tables for f64 inputs, made on first use
};

}  // namespace nf::nn
