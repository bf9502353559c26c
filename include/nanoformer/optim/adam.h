#pragma once
// Adam and AdamW, as torch.optim.Adam / AdamW (t = this parameter's step count):
//   Adam:  g = grad + weight_decay p                     (L2, folded into the gradient)
//   AdamW: p = p (1 - lr weight_decay)                   (decoupled decay), g = grad
//   m = beta1 m + (1 - beta1) g,   v = beta2 v + (1 - beta2) g^2
//   p = p - (lr / (1 - beta1^t)) m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
#include "nanoformer/optim/optimizer.h"

namespace nf::optim {

struct AdamOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  bool decoupled_weight_decay = false;  // true = AdamW
};

class Adam : public Optimizer {
 public:
  Adam(std::vector<ParamGroup> groups, const AdamOptions& options = {});
  std::string kind() const override { return options_.decoupled_weight_decay ? "adamw" : "adam"; }
  std::vector<std::string> slot_names() const override { return {"exp_avg", "exp_avg_sq"}; }

 private:
  void update(size_t group, size_t index, float* p, const float* g, int64_t n) override;
  AdamOptions options_;
};

// AdamW: Adam with decoupled weight decay (PyTorch's default weight_decay for it is 0.01).
class AdamW : public Adam {
 public:
  AdamW(std::vector<ParamGroup> groups, AdamOptions options = {});
};

}  // namespace nf::optim
