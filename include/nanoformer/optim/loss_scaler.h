#pragma once
// Dynamic loss scaling for fp16 training, with torch.amp.GradScaler's semantics:
//   backward runs on loss x scale(), so small fp16 gradients do not flush to zero;
//   unscale(params) divides the gradients by the scale and says whether all are finite;
//   the trainer steps only when they are (a skipped step changes neither the parameters nor the
//   optimizer state), then calls update(found_inf):
//     found_inf:  scale *= backoff_factor, and the run of good steps restarts
//     else:       after growth_interval good steps in a row, scale *= growth_factor
//                 (unless that would overflow fp32)
// The scale is an fp32 number as GradScaler's; the state (scale, growth tracker) goes into the checkpoint.
#include <cstdint>
#include <vector>

#include "nanoformer/nn/module.h"

namespace nf::optim {

struct LossScalerOptions {
  double init_scale = 65536.0;    // 2^16
  double growth_factor = 2.0;     // > 1
  double backoff_factor = 0.5;    // in (0, 1)
  int64_t growth_interval = 2000; // >= 1
};

class DynamicLossScaler {
 public:
  // Throws nf::Error naming a bad option.
  explicit DynamicLossScaler(const LossScalerOptions& options = {});

  double scale() const { return scale_; }
  // Good steps since the last growth or backoff.
  int64_t growth_tracker() const { return growth_tracker_; }
  // Every gradient *= fp32(1 / scale); false when any gradient holds an inf or a nan.
  bool unscale(const std::vector<Tensor>& params) const;
  void update(bool found_inf);

  // "loss_scaler.scale" (f32 scalar) and "loss_scaler.growth_tracker" (i64 scalar).
  nn::StateDict state_dict() const;
  // Restores both; one nf::Error names every missing or wrongly typed entry, or a bad value.
  void load_state_dict(const nn::StateDict& state);

 private:
  LossScalerOptions options_;
  float scale_;
  int64_t growth_tracker_ = 0;
};

}  // namespace nf::optim
