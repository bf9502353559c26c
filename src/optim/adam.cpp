// Adam / AdamW: the update rule of adam.h, element by element in fp32 in torch.optim's order.
#include "nanoformer/optim/adam.h"

#include <cmath>

#include "nanoformer/core/error.h"

namespace nf::optim {

Adam::Adam(std::vector<ParamGroup> groups, const AdamOptions& options)
    : Optimizer(std::move(groups)), options_(options) {
  NF_CHECK(options_.beta1 >= 0 && options_.beta1 < 1, "Adam: beta1 ", options_.beta1, " must be in [0, 1)");
  NF_CHECK(options_.beta2 >= 0 && options_.beta2 < 1, "Adam: beta2 ", options_.beta2, " must be in [0, 1)");
  NF_CHECK(options_.eps >= 0, "Adam: eps ", options_.eps, " must be >= 0");
}

void Adam::update(size_t group, size_t index, float* p, const float* g, int64_t n) {
  const ParamGroup& pg = groups()[group];
  const double t = static_cast<double>(param_step(group, index));
  // 1 - beta in double, then rounded, as PyTorch passes it to its kernels
  const auto one_minus_b1 = static_cast<float>(1.0 - options_.beta1), one_minus_b2 = static_cast<float>(1.0 - options_.beta2);
  const auto b2 = static_cast<float>(options_.beta2);
  const auto eps = static_cast<float>(options_.eps);
  const double correction1 = 1.0 - std::pow(options_.beta1, t), correction2 = 1.0 - std::pow(options_.beta2, t);
  const auto step_size = static_cast<float>(pg.lr / correction1);
  const auto sqrt_correction2 = static_cast<float>(std::sqrt(correction2));
  const bool decoupled = options_.decoupled_weight_decay;
  const auto wd = static_cast<float>(pg.weight_decay);
  const auto shrink = static_cast<float>(1.0 - pg.lr * pg.weight_decay);
  float* m = state(group, index, 0);
  float* v = state(group, index, 1);
  for (int64_t i = 0; i < n; ++i) {
    float d = g[i];
    if (decoupled)
      p[i] *= shrink;                                           // p (1 - lr wd)
    else if (wd != 0)
      d += wd * p[i];                                           // g + wd p
    m[i] += (d - m[i]) * one_minus_b1;                          // m = b1 m + (1 - b1) g
    v[i] = b2 * v[i] + one_minus_b2 * d * d;                    // v = b2 v + (1 - b2) g^2
    p[i] -= step_size * m[i] / (std::sqrt(v[i]) / sqrt_correction2 + eps);
  }
}

AdamW::AdamW(std::vector<ParamGroup> groups, AdamOptions options)
    : Adam(std::move(groups), (options.decoupled_weight_decay = true, options)) {}

}  // namespace nf::optim
