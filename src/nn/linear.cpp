// Linear, Embedding, Dropout modules over the ops of the same names.
#include "nanoformer/nn/linear.h"

#include <cmath>

#include "nanoformer/core/error.h"
#include "nanoformer/ops/dropout.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/indexing.h"
#include "nanoformer/ops/matmul.h"
#include "nanoformer/ops/quantized.h"

namespace nf::nn {

Linear::Linear(int64_t in_features, int64_t out_features, bool bias, Generator& gen)
    : UnaryModule("Linear"), in_(in_features), out_(out_features) {
  NF_CHECK(in_features > 0 && out_features > 0, "Linear: in_features and out_features must be positive, got ",
           in_features, " and ", out_features);
  const double bound = 1.0 / std::sqrt(static_cast<double>(in_features));
  weight = register_parameter("weight", uniform({out_features, in_features}, -bound, bound, gen));
  if (bias) this->bias = register_parameter("bias", uniform({out_features}, -bound, bound, gen));
}

Tensor Linear::forward(const Tensor& x) {
  NF_CHECK(x.dim() >= 1 && x.size(-1) == in_, "Linear: input ", shape_str(x.shape()), " does not end in in_features ",
           in_);
  const Tensor base = is_quantized() ? linear(x, quantized_weight_, bias) : linear(x, weight, bias);
  return lora_active() ? add(base, lora_update(x)) : base;
}

std::vector<Tensor> forward_together(std::span<Linear* const> layers, const Tensor& x) {
  bool dense = true, quantized = true;
  for (const Linear* l : layers) {
    dense = dense && !l->is_quantized() && !l->lora_active();
    quantized = quantized && l->is_quantized() && !l->lora_active() && l->quantized_weight().type() == layers[0]->quantized_weight().type();
  }
  std::vector<Tensor> biases;
  for (const Linear* l : layers) biases.push_back(l->bias);
  if (dense) {
    std::vector<Tensor> weights;
    for (const Linear* l : layers) weights.push_back(l->weight);
    return linear_together(x, weights, biases);
  }
  if (quantized) {
    std::vector<const QuantizedTensor*> weights;
    for (const Linear* l : layers) weights.push_back(&l->quantized_weight());
    return linear_together(x, weights, biases);
  }
  std::vector<Tensor> out;
  for (Linear* l : layers) out.push_back(l->forward(x));
  return out;
}

void Linear::set_quantized_weight(QuantizedTensor q) {
  quantize_parameter("weight", q);  // checks the shape
  quantized_weight_ = std::move(q);
  weight = Tensor();
}

void Linear::set_dense_weight(Tensor w) {
  NF_CHECK(w.shape() == Shape({out_, in_}), "Linear(", in_, ", ", out_, "): weight ", shape_str(w.shape()),
           " is not (", out_, ", ", in_, ")");
  weight = w;
  replace_tensor("weight", weight);  // the entry and the member share the tensor
  quantized_weight_ = {};
}

Embedding::Embedding(int64_t num_embeddings, int64_t dim, Generator& gen)
    : Module("Embedding"), num_embeddings_(num_embeddings), dim_(dim) {
  NF_CHECK(num_embeddings > 0 && dim > 0, "Embedding: num_embeddings and dim must be positive, got ", num_embeddings,
           " and ", dim);
  weight = register_parameter("weight", randn({num_embeddings, dim}, gen));
}

Tensor Embedding::forward(const Tensor& ids) {
  return is_quantized() ? embedding(quantized_weight_, ids) : embedding(weight, ids);
}

Tensor Embedding::attend(const Tensor& x) { return is_quantized() ? linear(x, quantized_weight_) : linear(x, weight); }

void Embedding::set_quantized_weight(QuantizedTensor q) {
  quantize_parameter("weight", q);
  quantized_weight_ = std::move(q);
  weight = Tensor();
}

void Embedding::set_dense_weight(Tensor w) {
  NF_CHECK(w.shape() == Shape({num_embeddings_, dim_}), "Embedding(", num_embeddings_, ", ", dim_, "): weight ",
           shape_str(w.shape()), " is not (", num_embeddings_, ", ", dim_, ")");
  weight = w;
  replace_tensor("weight", weight);
  quantized_weight_ = {};
}

Dropout::Dropout(double p, uint64_t seed) : UnaryModule("Dropout"), p_(p), gen_(seed) {
  NF_CHECK(p >= 0.0 && p < 1.0, "Dropout: p must be in [0, 1), got ", p);
}

Tensor Dropout::forward(const Tensor& x) { return dropout(x, p_, is_training(), gen_); }

std::shared_ptr<Dropout> make_dropout(double p, Generator& gen) {
  if (p == 0.0) return nullptr;
  return std::make_shared<Dropout>(p, draw_seed(gen));
}

}  // namespace nf::nn
