#pragma once
// LoRA (reference 000, section 4.5): a Linear whose pretrained weight W0 is frozen, plus a trained
// low-rank update:  h = W0 x + b + (alpha / r) B A x.
#include <cstdint>
#include <memory>

#include "nanoformer/core/generator.h"
#include "nanoformer/nn/linear.h"

namespace nf::nn {

struct LoRAConfig {
  int64_t rank = 8;      // r >= 1
  double alpha = 16.0;   // > 0; the update is scaled by alpha / r
  double dropout = 0.0;  // in [0, 1): dropout on the LoRA branch's input (training only)
  uint64_t dropout_seed = 0;
};

// y = x W0^T + b + (alpha / r) dropout(x) A^T B^T:  x (..., in) -> (..., out)
// Parameters named as PEFT's Linear adapter without the adapter name, and with the base layer's
// own names kept, so a pretrained checkpoint loads unchanged (strict = false: lora_* missing) and a
// PEFT adapter file's "<path>.lora_A.weight" maps one to one:
//   weight (out, in) and bias (out): frozen (requires_grad false);
//   lora_A.weight (r, in): kaiming-uniform as PEFT (= torch.nn.Linear's init, U(-1/sqrt(in), 1/sqrt(in)));
//   lora_B.weight (out, r): zeros, so the wrapped layer starts equal to the base.
class LoRALinear : public UnaryModule {
 public:
  // Wraps an existing Linear: shares (and freezes) its weight and bias.
  LoRALinear(const Linear& base, const LoRAConfig& config, Generator& gen = default_generator());
  // A fresh base Linear(in, out, bias) initialised as torch.nn.Linear, then wrapped.
  LoRALinear(int64_t in_features, int64_t out_features, const LoRAConfig& config, bool bias = true,
             Generator& gen = default_generator());
  Tensor forward(const Tensor& x) override;

  // W0 += (alpha / r) B A, after which forward is the base product alone; unmerge() subtracts it
  // again. Both throw when already in the requested state.
  void merge();
  void unmerge();
  bool merged() const { return merged_; }
  double scaling() const { return scaling_; }

  Tensor weight;
  Tensor bias;  // undefined when the base has none
  std::shared_ptr<Linear> lora_A, lora_B;

 private:
  Tensor delta_weight() const;  // (alpha / r) B A  (out, in)

  double scaling_;
  bool merged_ = false;
  std::shared_ptr<Dropout> dropout_;
};

}  // namespace nf::nn
