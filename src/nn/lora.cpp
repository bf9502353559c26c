// LoRA adapters on Linear: add (frozen base, A random, B zero), the update, merge.
#include "nanoformer/nn/lora.h"

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/matmul.h"
#include "nanoformer/ops/quantized.h"

namespace nf::nn {

void check_lora_config(const LoRAConfig& c) {
  NF_CHECK(c.rank >= 1, "LoRA: rank ", c.rank, " must be >= 1");
  NF_CHECK(c.alpha > 0.0, "LoRA: alpha ", c.alpha, " must be > 0");
  NF_CHECK(c.dropout >= 0.0 && c.dropout < 1.0, "LoRA: dropout ", c.dropout, " must be in [0, 1)");
}

void Linear::add_lora(const LoRAConfig& config, Generator& gen) {
  check_lora_config(config);
  NF_CHECK(!has_lora(), "Linear(", in_, ", ", out_, "): already has a LoRA adapter");
  if (weight.defined()) weight.set_requires_grad(false);  // a quantised weight is frozen already
  if (bias.defined()) bias.set_requires_grad(false);
  lora_A = register_module("lora_A", std::make_shared<Linear>(in_, config.rank, false, gen));
  lora_B = register_module("lora_B", std::make_shared<Linear>(config.rank, out_, false, gen));
  {
    autograd::NoGradGuard no_grad;
    fill_(lora_B->weight, 0.0);
  }
  lora_dropout = make_dropout(config.dropout, gen);
  if (lora_dropout) register_module("lora_dropout", lora_dropout);
  lora_scaling_ = config.alpha / static_cast<double>(config.rank);
}

// (alpha / r) (dropout(x) A^T) B^T
Tensor Linear::lora_update(const Tensor& x) {
  const Tensor lora_in = lora_dropout ? lora_dropout->forward(x) : x;
  return mul(lora_B->forward(lora_A->forward(lora_in)), lora_scaling_);
}

void Linear::merge_lora() {
  NF_CHECK(has_lora(), "Linear(", in_, ", ", out_, "): merge_lora() on a layer without a LoRA adapter");
  {
    autograd::NoGradGuard no_grad;
    if (is_quantized()) set_dense_weight(dequantize(quantized_weight_));  // merged: the dequantised base + the update
    add_(weight, mul(matmul(lora_B->weight, lora_A->weight), lora_scaling_));  // W0 += (alpha / r) B A
  }
  remove_module("lora_A");
  remove_module("lora_B");
  if (lora_dropout) remove_module("lora_dropout");
  lora_A = lora_B = nullptr;
  lora_dropout = nullptr;
  lora_scaling_ = 0.0;
  weight.set_requires_grad(true);
  if (bias.defined()) bias.set_requires_grad(true);
}

}  // namespace nf::nn
