// DynamicLossScaler: GradScaler's unscale (non-finite check, multiply by the fp32 reciprocal) and
// its update rule (torch's _amp_update_scale_).
#include "nanoformer/optim/loss_scaler.h"

#include <cmath>
#include <sstream>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"

namespace nf::optim {

namespace {
constexpr const char* kScaleKey = "loss_scaler.scale";
constexpr const char* kTrackerKey = "loss_scaler.growth_tracker";
}  // namespace

DynamicLossScaler::DynamicLossScaler(const LossScalerOptions& options)
    : options_(options), scale_(static_cast<float>(options.init_scale)) {
  NF_CHECK(std::isfinite(scale_) && scale_ > 0, "loss scaler: init_scale ", options.init_scale,
           " must be > 0 and finite in fp32");
  NF_CHECK(options.growth_factor > 1 && std::isfinite(options.growth_factor), "loss scaler: growth_factor ",
           options.growth_factor, " must be > 1");
  NF_CHECK(options.backoff_factor > 0 && options.backoff_factor < 1, "loss scaler: backoff_factor ",
           options.backoff_factor, " must be in (0, 1)");
  NF_CHECK(options.growth_interval >= 1, "loss scaler: growth_interval ", options.growth_interval, " must be >= 1");
}

bool DynamicLossScaler::unscale(const std::vector<Tensor>& params) const {
  NoGradGuard no_grad;
  const auto inverse = static_cast<float>(1.0 / static_cast<double>(scale_));  // as GradScaler: fp32(1 / scale)
  bool finite = true;
  for (const Tensor& p : params) {
    const Tensor grad = p.grad();
    if (!grad.defined()) continue;
    const Tensor g = grad.to(DType::f32).contiguous();
    const float* v = g.data<float>();
    for (int64_t i = 0; i < g.numel() && finite; ++i) finite = std::isfinite(v[i]);
    mul_(grad, inverse);  // grad / scale
  }
  return finite;
}

void DynamicLossScaler::update(bool found_inf) {
  if (found_inf) {
    scale_ = static_cast<float>(scale_ * options_.backoff_factor);  // scale x backoff
    growth_tracker_ = 0;
    return;
  }
  if (++growth_tracker_ < options_.growth_interval) return;
  const auto grown = static_cast<float>(scale_ * options_.growth_factor);  // scale x growth, kept finite
  if (std::isfinite(grown)) scale_ = grown;
  growth_tracker_ = 0;
}

nn::StateDict DynamicLossScaler::state_dict() const {
  return {{kScaleKey, Tensor::scalar(scale_, DType::f32)},
          {kTrackerKey, Tensor::scalar(static_cast<double>(growth_tracker_), DType::i64)}};
}

void DynamicLossScaler::load_state_dict(const nn::StateDict& state) {
  std::ostringstream problems;
  auto entry = [&](const char* key, DType dtype) -> const Tensor* {
    const auto it = state.find(key);
    if (it == state.end()) problems << " " << key << " missing;";
    else if (it->second.dtype() != dtype || it->second.numel() != 1)
      problems << " " << key << " is " << dtype_name(it->second.dtype()) << " " << shape_str(it->second.shape())
               << ", expected one " << dtype_name(dtype) << ";";
    else
      return &it->second;
    return nullptr;
  };
  const Tensor* scale = entry(kScaleKey, DType::f32);
  const Tensor* tracker = entry(kTrackerKey, DType::i64);
  if (scale && !(std::isfinite(scale->item()) && scale->item() > 0))
    problems << " " << kScaleKey << " is " << scale->item() << ", expected a finite value > 0;";
  if (tracker && tracker->item() < 0) problems << " " << kTrackerKey << " is " << tracker->item() << ", expected >= 0;";
  const std::string text = problems.str();
  NF_CHECK(text.empty(), "loss scaler state:", text.substr(0, text.size() - 1));
  scale_ = static_cast<float>(scale->item());
  growth_tracker_ = static_cast<int64_t>(tracker->item());
}

}  // namespace nf::optim
