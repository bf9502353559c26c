#pragma once
// Linear, Embedding and Dropout: the modules every model starts from, named as torch.nn's.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "nanoformer/core/generator.h"
#include "nanoformer/nn/module.h"

namespace nf::nn {

class Dropout;
struct LoRAConfig;  // nn/lora.h

// y = x W^T + b:  x (..., in) -> (..., out);  weight (out, in), bias (out) when `bias`.
// Initialised as torch.nn.Linear: W and b uniform in [-1/sqrt(in), 1/sqrt(in)].
// With a LoRA adapter (add_lora, nn/lora.h): y = x W^T + b + (alpha / r) dropout(x) A^T B^T.
class Linear : public UnaryModule {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true, Generator& gen = default_generator());
  Tensor forward(const Tensor& x) override;

  int64_t in_features() const { return in_; }
  int64_t out_features() const { return out_; }
  Tensor weight;  // undefined while the weight is quantised
  Tensor bias;    // undefined without bias

  // The weight held block-quantised from now on (nf::quantize of it, or a GGUF tensor in place):
  // forward multiplies by the blocks (ops/quantized.h), `weight` becomes undefined and leaves the
  // parameters (Module::named_quantized lists it). A LoRA adapter trains over it as over a frozen
  // dense weight; merging dequantises it. Throws when the shape is not (out, in).
  void set_quantized_weight(QuantizedTensor q);
  // A dense weight again (after a quantised one: dequantised, or merged); a frozen one stays frozen.
  void set_dense_weight(Tensor w);
  const QuantizedTensor& quantized_weight() const { return quantized_weight_; }
  bool is_quantized() const { return quantized_weight_.defined(); }

  // LoRA (defined in src/nn/lora.cpp): add_lora freezes weight and bias and registers the adapter's
  // children lora_A (r, in), lora_B (out, r) = 0 [and lora_dropout], so the layer starts equal to
  // its base and its state dict gains PEFT's names "lora_A.weight", "lora_B.weight". merge_lora
  // folds the adapter into the weight (W += (alpha / r) B A), removes it and unfreezes weight and bias.
  void add_lora(const LoRAConfig& config, Generator& gen = default_generator());
  void merge_lora();
  bool has_lora() const { return lora_A != nullptr; }
  // Off: forward is the base's alone, the adapter kept (a DPO reference: PEFT's disable_adapter()).
  void set_lora_enabled(bool on) { lora_enabled_ = on; }
  bool lora_active() const { return has_lora() && lora_enabled_; }
  double lora_scaling() const { return lora_scaling_; }  // alpha / r; 0 without an adapter
  std::shared_ptr<Linear> lora_A, lora_B;                // null without an adapter
  std::shared_ptr<Dropout> lora_dropout;                 // null without an adapter or dropout

 private:
  Tensor lora_update(const Tensor& x);  // (alpha / r) dropout(x) A^T B^T

  int64_t in_, out_;
  double lora_scaling_ = 0.0;
  bool lora_enabled_ = true;
  QuantizedTensor quantized_weight_;
};

// Linear(in, out, bias)'s parameters: in x out weights and out biases. In arithmetic N: int64_t for
// the exact count, long double to bound a config whose exact count might not fit int64_t.
template <class N>
constexpr N linear_parameter_count(N in, N out, bool bias) {
  return in * out + (bias ? out : N(0));
}

// y = weight[ids]:  ids (...) integer -> (..., dim);  weight (num_embeddings, dim) ~ normal(0, 1).
// attend(x) = x weight^T: the table as an output head (tied embeddings), as flax's Embed.attend.
// Each layer's forward of the same x, with the same values. Without LoRA adapters and with weights of
// one kind (all dense, or all quantised in one type), by linear_together: decoding's q, k and v (or
// gate and up) in one hand-off between the threads. Otherwise one at a time.
std::vector<Tensor> forward_together(std::span<Linear* const> layers, const Tensor& x);

class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t dim, Generator& gen = default_generator());
  Tensor forward(const Tensor& ids);
  Tensor operator()(const Tensor& ids) { return forward(ids); }
  Tensor attend(const Tensor& x);
  Tensor weight;  // undefined while the table is quantised

  // The table held block-quantised from now on (rows read dequantised), as Linear's.
  void set_quantized_weight(QuantizedTensor q);
  // A dense weight again (after a quantised one: dequantised, or merged); a frozen one stays frozen.
  void set_dense_weight(Tensor w);
  const QuantizedTensor& quantized_weight() const { return quantized_weight_; }
  bool is_quantized() const { return quantized_weight_.defined(); }
  int64_t num_embeddings() const { return num_embeddings_; }
  int64_t dim() const { return dim_; }

 private:
  int64_t num_embeddings_, dim_;
  QuantizedTensor quantized_weight_;
};

// Embedding(num_embeddings, dim)'s parameters (and a learned position table's), in arithmetic N.
template <class N>
constexpr N embedding_parameter_count(N num_embeddings, N dim) {
  return num_embeddings * dim;
}

// In training: zero each element with probability p, scale the rest by 1 / (1 - p); in eval, the
// identity. Draws its masks from its own generator (seeded), so runs are reproducible.
class Dropout : public UnaryModule {
 public:
  explicit Dropout(double p = 0.5, uint64_t seed = 0);
  Tensor forward(const Tensor& x) override;
  double p() const { return p_; }
  Generator& generator() { return gen_; }

 protected:
  Generator* own_generator() override { return &gen_; }

 private:
  double p_;
  Generator gen_;
};

// A Dropout of probability p seeded from one draw of `gen`, or null when p is 0 (no module needed).
std::shared_ptr<Dropout> make_dropout(double p, Generator& gen);

}  // namespace nf::nn
