// SGD: the update rule of sgd.h, element by element in fp32 as torch.optim.SGD computes it.
#include "nanoformer/optim/sgd.h"

#include "nanoformer/core/error.h"

namespace nf::optim {

SGD::SGD(std::vector<ParamGroup> groups, const SGDOptions& options) : Optimizer(std::move(groups)), options_(options) {
  NF_CHECK(options_.momentum >= 0, "SGD: momentum ", options_.momentum, " must be >= 0");
  NF_CHECK(!options_.nesterov || (options_.momentum > 0 && options_.dampening == 0),
           "SGD: nesterov needs momentum > 0 and dampening 0 (momentum ", options_.momentum, ", dampening ",
           options_.dampening, ")");
}

std::vector<std::string> SGD::slot_names() const {
  if (options_.momentum > 0) return {"momentum_buffer"};
  return {};
}

void SGD::update(size_t group, size_t index, float* p, const float* g, int64_t n) {
  const ParamGroup& pg = groups()[group];
  const auto lr = static_cast<float>(pg.lr), wd = static_cast<float>(pg.weight_decay);
  const auto mu = static_cast<float>(options_.momentum), keep = static_cast<float>(1.0 - options_.dampening);
  float* b = mu > 0 ? state(group, index, 0) : nullptr;
  const bool first = param_step(group, index) == 1;
  for (int64_t i = 0; i < n; ++i) {
    float d = wd != 0 ? g[i] + wd * p[i] : g[i];              // g + wd p
    if (b) {
      b[i] = first ? d : mu * b[i] + keep * d;                // b = mu b + (1 - dampening) g
      d = options_.nesterov ? d + mu * b[i] : b[i];
    }
    p[i] -= lr * d;                                           // p = p - lr g
  }
}

}  // namespace nf::optim
