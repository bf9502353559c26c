#pragma once
// The configuration of a ViT image classifier (ViTClassifier, vit.h): one flat JSON object with
// "architecture": "vit". Parsing rejects unknown keys (naming the nearest known one) and bad values
// (naming key and value); docs/models.md lists every key with its default. Preset: configs/vit-tiny.json.
#include <cstdint>
#include <string>
#include <vector>

#include "nanoformer/models/model.h"
#include "nanoformer/nn/block.h"

namespace nf::models {

struct ViTConfig {
  static constexpr const char* kArchitecture = "vit";  // the config's "architecture" key (required)
  std::string name;              // a label ("vit-tiny"); "" when none
  int64_t image_size = 224;      // square images image_size x image_size, divisible by patch_size
  int64_t patch_size = 16;       // > 0
  int64_t in_channels = 3;       // > 0
  int64_t dim = 0;               // model width, > 0, divisible by n_heads
  int64_t n_layers = 0;          // > 0
  int64_t n_heads = 0;           // > 0
  int64_t mlp_hidden = 0;        // the GELU MLP's width; 0 = 4 dim
  int64_t n_classes = 0;         // > 0
  double norm_eps = 1e-12;       // every LayerNorm (Hugging Face ViT: 1e-12, timm: 1e-6)
  bool qkv_bias = true;          // biases of the query, key and value projections (the output one always has one)
  double dropout = 0.0;          // on the embeddings and on each sublayer's output (HF hidden_dropout_prob)
  double attention_dropout = 0.0;  // on the attention weights (HF attention_probs_dropout_prob)
  double init_std = 0.02;        // every weight ~ normal(0, init_std), biases 0, norms 1 and 0
};

// Parses a config from JSON text; `source` prefixes every error (unknown key, wrong type, bad value).
ViTConfig parse_vit_config(const std::string& json_text, const std::string& source = "<string>");
// The JSON of `config` with every key and "architecture": "vit" (pretty-printed).
std::string vit_config_to_json(const ViTConfig& config);
// Throws nf::Error naming the first bad option.
void validate_vit_config(const ViTConfig& config, const std::string& source = "<config>");

// The pieces the classifier builds from: every encoder layer (pre-norm LayerNorm, bidirectional
// attention, GELU (erf) MLP; resolved, see nn::resolved) and the number of patches
// (image_size / patch_size)^2.
nn::BlockConfig vit_block_config(const ViTConfig& config);
int64_t vit_num_patches(const ViTConfig& config);

// Exact parameter counts by part, without building the model (the layers' from
// nn::block_parameter_counts): patch embedding, class token + positions, attention, mlp, norms, head.
std::vector<ParameterPart> vit_parameter_parts(const ViTConfig& config);
int64_t count_parameters(const ViTConfig& config);

}  // namespace nf::models
