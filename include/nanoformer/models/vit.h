#pragma once
// A ViT image classifier (Dosovitskiy et al. 2020; Hugging Face ViTForImageClassification, timm's
// VisionTransformer) built from a ViTConfig:
//   pixels (B, C, S, S) -> patch_embed -> [class_token; patches] -> + pos_embeddings (-> dropout)
//       -> layers (pre-norm, bidirectional attention, GELU MLP) -> norm -> head(class token) -> logits
// Parameter names: class_token (1, 1, dim), patch_embed.proj.{weight (dim, C*P*P), bias},
// pos_embeddings.weight (num_patches + 1, dim), layers.N.<TransformerBlock names>, norm.*, head.*.
#include <memory>
#include <string>
#include <vector>

#include "nanoformer/core/generator.h"
#include "nanoformer/models/config/vit_config.h"
#include "nanoformer/models/model.h"
#include "nanoformer/nn/absolute_position.h"
#include "nanoformer/nn/block.h"
#include "nanoformer/nn/patch_embed.h"

namespace nf::models {

struct ViTOutput {
  Tensor logits;  // (B, n_classes)
  Tensor loss;    // () mean cross-entropy, with labels only (undefined otherwise)
  // With return_hidden only (empty otherwise): the output of layers.N, (B, num_patches + 1, dim),
  // for every N (before the final norm).
  std::vector<Tensor> hidden;
};

class ViTClassifier : public Model {
 public:
  static constexpr const char* kArchitecture = ViTConfig::kArchitecture;

  // Validates the config (nf::Error naming the bad key); weights ~ normal(0, init_std), biases 0.
  explicit ViTClassifier(const ViTConfig& config, Generator& gen = default_generator());

  // pixel_values (B, in_channels, image_size, image_size) float; labels (B) integer class ids
  // (-100 = ignored) or undefined. return_hidden also keeps every block's output.
  ViTOutput forward(const Tensor& pixel_values, const Tensor& labels = {}, bool return_hidden = false);

  const ViTConfig& config() const { return config_; }
  std::string architecture() const override { return kArchitecture; }
  std::string config_json() const override;
  std::vector<ParameterPart> parameter_parts() const override;
  int64_t max_context() const override {  // the patches and the class token
    return (config().image_size / config().patch_size) * (config().image_size / config().patch_size) + 1;
  }

  Tensor class_token;  // (1, 1, dim)
  std::shared_ptr<nn::PatchEmbedding> patch_embed;
  std::shared_ptr<nn::LearnedPosition> pos_embeddings;  // (num_patches + 1, dim): the class token's first
  std::shared_ptr<nn::ModuleList<nn::TransformerBlock>> layers;
  std::shared_ptr<nn::UnaryModule> norm;
  std::shared_ptr<nn::Linear> head;

 private:
  ViTConfig config_;
  std::shared_ptr<nn::Dropout> dropout_;  // on the embeddings; null when config.dropout is 0
};

}  // namespace nf::models
