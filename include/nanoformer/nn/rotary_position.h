#pragma once
// Rotary position embedding inside attention: rotates queries and keys (B, H, T, D) at their
// absolute positions with the fused nf::rope op. The cos/sin tables (rows, D/2) are computed for the
// positions actually used, grown by doubling up to max_len, so that a model claiming a million
// positions costs what its sequences reach; they are not module buffers (nothing in state_dict).
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "nanoformer/nn/attention_position.h"
#include "nanoformer/ops/rope.h"

namespace nf::nn {

// How positions beyond the trained length are reached, with scale factor s:
//   linear (position interpolation): angle uses t / s instead of t;
//   ntk (NTK-aware): theta' = theta * s^(D / (D - 2));
//   yarn (YaRN, as transformers' _compute_yarn_parameters): per pair i, f'_i = f_i ((1 - r_i) + r_i / s) with
//     r_i = clamp((i - low) / (high - low), 0, 1), low = floor(d(beta_fast)), high = ceil(d(beta_slow)),
//     d(b) = D ln(L / (2 pi b)) / (2 ln theta) (L the original context, clamped to [0, D - 1]); and cos and
//     sin multiplied by the attention factor (0.1 ln s + 1 unless given).
enum class RopeScaling { none, linear, ntk, yarn };

struct RopeOptions {
  int64_t head_dim = 0;
  int64_t max_len = 2048;
  double theta = 10000.0;
  RopeLayout layout = RopeLayout::half;
  RopeScaling scaling = RopeScaling::none;
  double scale_factor = 1.0;
  // yarn only: the context the model was trained at (0 = max_len), the ramp's rotation bounds,
  // and the factor on cos and sin (0 = 0.1 ln(scale_factor) + 1)
  int64_t original_max_len = 0;
  double beta_fast = 32.0, beta_slow = 1.0;
  double attention_factor = 0.0;
};

// The inverse frequency of each channel pair (D/2 values) after `options.scaling`, and the factor
// its cos and sin tables carry (1 except for yarn).
std::vector<double> rope_inverse_frequencies(const RopeOptions& options);
double rope_attention_factor(const RopeOptions& options);

class RotaryPosition : public AttentionPosition {
 public:
  explicit RotaryPosition(const RopeOptions& options);
  Tensor rotate_queries(const Tensor& q, int64_t q_offset) override;
  Tensor rotate_keys(const Tensor& k, int64_t k_offset) override;
  Tensor rotate_queries(const Tensor& q, std::span<const int64_t> q_offsets) override;  // every row in one call
  Tensor rotate_keys(const Tensor& k, std::span<const int64_t> k_offsets) override;
  Tensor reposition_keys(const Tensor& k, int64_t delta) override;  // one more rotation, by delta, at every row

  const RopeOptions& options() const { return options_; }
  // theta after NTK scaling, and the divisor of positions (s with linear scaling, else 1).
  double effective_theta() const { return theta_; }
  double position_divisor() const { return divisor_; }
  const std::vector<double>& inverse_frequencies() const { return inv_freq_; }
  double attention_factor() const { return attention_factor_; }
  // The cos and sin tables in `dtype` with at least `rows` rows (at most max_len): row t holds
  // position t's angles. Safe to call from several threads; a table once returned stays valid.
  RopeTables tables(DType dtype, int64_t rows);

 private:
  Tensor rotate(const Tensor& x, std::span<const int64_t> offsets);

  RopeOptions options_;
  double theta_, divisor_, attention_factor_;
  std::vector<double> inv_freq_;
  std::mutex tables_mutex_;
  std::map<DType, RopeTables> tables_;  // per input dtype, grown on use
};

}  // namespace nf::nn
