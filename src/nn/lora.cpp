// LoRALinear: frozen base, trained low-rank update, merge / unmerge.
#include "nanoformer/nn/lora.h"

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/matmul.h"

namespace nf::nn {
namespace {

const LoRAConfig& checked(const LoRAConfig& c) {
  NF_CHECK(c.rank >= 1, "LoRALinear: rank ", c.rank, " must be >= 1");
  NF_CHECK(c.alpha > 0.0, "LoRALinear: alpha ", c.alpha, " must be > 0");
  NF_CHECK(c.dropout >= 0.0 && c.dropout < 1.0, "LoRALinear: dropout ", c.dropout, " must be in [0, 1)");
  return c;
}

}  // namespace

LoRALinear::LoRALinear(const Linear& base, const LoRAConfig& config, Generator& gen)
    : UnaryModule("LoRALinear"), scaling_(checked(config).alpha / static_cast<double>(config.rank)) {
  weight = register_parameter("weight", base.weight, /*requires_grad=*/false);
  if (base.bias.defined()) bias = register_parameter("bias", base.bias, /*requires_grad=*/false);
  lora_A = register_module("lora_A", std::make_shared<Linear>(base.in_features(), config.rank, false, gen));
  lora_B = register_module("lora_B", std::make_shared<Linear>(config.rank, base.out_features(), false, gen));
  {
    autograd::NoGradGuard no_grad;
    fill_(lora_B->weight, 0.0);
  }
  if (config.dropout > 0.0) dropout_ = register_module("lora_dropout", std::make_shared<Dropout>(config.dropout, config.dropout_seed));
}

LoRALinear::LoRALinear(int64_t in_features, int64_t out_features, const LoRAConfig& config, bool bias, Generator& gen)
    : LoRALinear(Linear(in_features, out_features, bias, gen), config, gen) {}

// y = x W0^T + b + s (x A^T) B^T, the update skipped once merged into W0
Tensor LoRALinear::forward(const Tensor& x) {
  Tensor base = linear(x, weight, bias);
  if (merged_) return base;
  const Tensor lora_in = dropout_ ? dropout_->forward(x) : x;
  return add(base, mul(lora_B->forward(lora_A->forward(lora_in)), scaling_));
}

Tensor LoRALinear::delta_weight() const { return mul(matmul(lora_B->weight, lora_A->weight), scaling_); }

void LoRALinear::merge() {
  NF_CHECK(!merged_, "LoRALinear: merge() called on a layer that is already merged");
  autograd::NoGradGuard no_grad;
  add_(weight, delta_weight());
  merged_ = true;
}

void LoRALinear::unmerge() {
  NF_CHECK(merged_, "LoRALinear: unmerge() called on a layer that is not merged");
  autograd::NoGradGuard no_grad;
  add_(weight, delta_weight(), -1.0);
  merged_ = false;
}

}  // namespace nf::nn
