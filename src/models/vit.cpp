// ViTClassifier: patches -> class token + positions -> pre-norm encoder -> norm -> head on the class token.
#include "nanoformer/models/vit.h"

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/join.h"
#include "nanoformer/ops/loss.h"
#include "nanoformer/ops/view.h"

namespace nf::models {
namespace {

// Hugging Face ViT's initialisation: every weight (class token and positions included) ~ normal(0, std),
// biases 0; LayerNorms keep their 1 and 0.
void init_weights(ViTClassifier& model, double std, Generator& gen) {
  autograd::NoGradGuard no_grad;
  normal_(model.class_token, 0.0, std, gen);
  normal_(model.pos_embeddings->weight, 0.0, std, gen);
  for (const auto& [name, m] : model.named_modules())
    if (auto* fc = dynamic_cast<const nn::Linear*>(m)) {
      normal_(fc->weight, 0.0, std, gen);
      if (fc->bias.defined()) fill_(fc->bias, 0.0);
    }
}

}  // namespace

ViTClassifier::ViTClassifier(const ViTConfig& config, Generator& gen) : Model("ViTClassifier"), config_(config) {
  validate_vit_config(config_, config_.name.empty() ? "ViTClassifier" : config_.name);
  const ViTConfig& c = config_;
  const nn::BlockConfig block = vit_block_config(c);
  class_token = register_parameter("class_token", zeros({1, 1, c.dim}));
  patch_embed = register_module("patch_embed",
                                std::make_shared<nn::PatchEmbedding>(c.image_size, c.patch_size, c.in_channels, c.dim, gen));
  pos_embeddings = register_module("pos_embeddings", std::make_shared<nn::LearnedPosition>(vit_num_patches(c) + 1, c.dim, gen));
  if (auto d = nn::make_dropout(c.dropout, gen)) dropout_ = register_module("dropout", d);
  layers = register_module("layers", std::make_shared<nn::ModuleList<nn::TransformerBlock>>());
  for (int64_t i = 0; i < c.n_layers; ++i) layers->push_back(std::make_shared<nn::TransformerBlock>(block, nullptr, gen));
  norm = register_module("norm", nn::make_norm(block.norm));
  head = register_module("head", std::make_shared<nn::Linear>(c.dim, c.n_classes, true, gen));
  init_weights(*this, c.init_std, gen);
}

std::string ViTClassifier::config_json() const { return vit_config_to_json(config_); }

std::vector<ParameterPart> ViTClassifier::parameter_parts() const { return vit_parameter_parts(config_); }

ViTOutput ViTClassifier::forward(const Tensor& pixel_values, const Tensor& labels, bool return_hidden) {
  const ViTConfig& c = config_;
  const Tensor& x0 = pixel_values;
  NF_CHECK(x0.dim() == 4 && x0.size(1) == c.in_channels && x0.size(2) == c.image_size && x0.size(3) == c.image_size,
           "ViTClassifier: pixel_values ", shape_str(x0.shape()), " must be (B, ", c.in_channels, ", ", c.image_size,
           ", ", c.image_size, "): the config's in_channels and image_size");
  const int64_t B = x0.size(0);
  const Tensor patches = patch_embed->forward(x0);                                    // (B, N, D)
  Tensor x = cat({expand(class_token, {B, 1, c.dim}), patches}, 1);                   // (B, N + 1, D)
  x = pos_embeddings->forward(x);                                                     // + E_pos
  if (dropout_) x = dropout_->forward(x);
  ViTOutput out;
  for (const auto& layer : *layers) {
    x = layer->forward(x);  // x + attn(norm(x)), then x + mlp(norm(x))
    if (return_hidden) out.hidden.push_back(x);
  }
  x = norm->forward(x);
  out.logits = head->forward(select(x, 1, 0));  // the class token's state -> (B, n_classes)
  if (!labels.defined()) return out;
  NF_CHECK(labels.dim() == 1 && labels.size(0) == B, "ViTClassifier: labels ", shape_str(labels.shape()),
           " must be (", B, ")");
  out.loss = cross_entropy(out.logits, labels, -100);
  return out;
}

}  // namespace nf::models
