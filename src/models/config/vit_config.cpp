// ViTConfig: JSON keys (unknown ones rejected), validation, the encoder layer and the exact parameter count.
#include "nanoformer/models/config/vit_config.h"

#include <nlohmann/json.hpp>

#include "models/config/config_keys.h"
#include "nanoformer/core/error.h"
#include "util/json_input.h"

namespace nf::models {
namespace {

using namespace config_keys;

template <class Visitor>
void visit_keys(Visitor& v, ViTConfig& c) {
  v.value("name", c.name);
  v.value("image_size", c.image_size);
  v.value("patch_size", c.patch_size);
  v.value("in_channels", c.in_channels);
  v.value("dim", c.dim);
  v.value("n_layers", c.n_layers);
  v.value("n_heads", c.n_heads);
  v.value("mlp_hidden", c.mlp_hidden);
  v.value("n_classes", c.n_classes);
  v.value("norm_eps", c.norm_eps);
  v.value("qkv_bias", c.qkv_bias);
  v.value("dropout", c.dropout);
  v.value("attention_dropout", c.attention_dropout);
  v.value("init_std", c.init_std);
}

}  // namespace

ViTConfig parse_vit_config(const std::string& json_text, const std::string& source) {
  const ViTConfig c = parse_config<ViTConfig>(json_text, source, [](auto& visitor, ViTConfig& config) { visit_keys(visitor, config); });
  validate_vit_config(c, source);
  return c;
}

std::string vit_config_to_json(const ViTConfig& config) {
  return config_to_json(config, [](auto& visitor, ViTConfig& c) { visit_keys(visitor, c); });
}

void validate_vit_config(const ViTConfig& c, const std::string& source) {
  check(c.patch_size > 0, source, "patch_size", c.patch_size, "must be > 0");
  check_at_most(c.image_size, kMaxImageSide, source, "image_size");
  check_at_most(c.in_channels, kMaxChannels, source, "in_channels");
  check_at_most(c.dim, kMaxWidth, source, "dim");
  check_at_most(c.n_layers, kMaxLayers, source, "n_layers");
  check_at_most(c.mlp_hidden, kMaxWidth, source, "mlp_hidden");
  check_at_most(c.n_classes, kMaxEntries, source, "n_classes");
  check(c.image_size > 0 && c.image_size % c.patch_size == 0, source, "image_size", c.image_size,
        "must be a positive multiple of patch_size");
  check(c.in_channels > 0, source, "in_channels", c.in_channels, "must be > 0");
  check(c.dim > 0, source, "dim", c.dim, "must be > 0");
  check(c.n_layers > 0, source, "n_layers", c.n_layers, "must be > 0");
  check(c.n_heads > 0 && c.dim % c.n_heads == 0, source, "n_heads", c.n_heads, "must be > 0 and divide dim");
  check(c.mlp_hidden >= 0, source, "mlp_hidden", c.mlp_hidden, "must be >= 0 (0 = 4 dim)");
  check(c.n_classes > 0, source, "n_classes", c.n_classes, "must be > 0");
  check(c.norm_eps > 0, source, "norm_eps", c.norm_eps, "must be > 0");
  check(c.dropout >= 0 && c.dropout < 1, source, "dropout", c.dropout, "must be in [0, 1)");
  check(c.attention_dropout >= 0 && c.attention_dropout < 1, source, "attention_dropout", c.attention_dropout,
        "must be in [0, 1)");
  check(c.init_std > 0, source, "init_std", c.init_std, "must be > 0");
}

nn::BlockConfig vit_block_config(const ViTConfig& c) {
  nn::BlockConfig b;
  b.attention = {.dim = c.dim, .n_heads = c.n_heads, .bias = c.qkv_bias, .output_bias = true,
                 .dropout = c.attention_dropout, .causal = false};
  b.mlp = {.kind = nn::MLPKind::gelu, .dim = c.dim, .hidden = c.mlp_hidden, .bias = true, .dropout = 0.0};
  b.norm = {.kind = nn::NormKind::layernorm, .dim = c.dim, .eps = c.norm_eps, .bias = true};
  b.placement = nn::NormPlacement::pre;
  b.residual_dropout = c.dropout;  // HF ViT drops each sublayer's output before the residual sum
  return nn::resolved(b);
}

int64_t vit_num_patches(const ViTConfig& c) { return (c.image_size / c.patch_size) * (c.image_size / c.patch_size); }

std::vector<ParameterPart> vit_parameter_parts(const ViTConfig& c) {
  validate_vit_config(c);
  const nn::BlockConfig block = vit_block_config(c);
  const nn::BlockParameterCounts layer = nn::block_parameter_counts(block);
  const int64_t D = c.dim, L = c.n_layers;
  // the patch projection Linear(C P^2, D); the class token and the N + 1 positions
  const int64_t patch = nn::linear_parameter_count(c.in_channels * c.patch_size * c.patch_size, D, true);
  const int64_t positions = D + nn::embedding_parameter_count(vit_num_patches(c) + 1, D);
  return {{"patch embedding", patch},
          {"class token + positions", positions},
          {"attention", L * layer.attention},
          {"mlp", L * layer.mlp},
          {"norms", L * layer.norms + nn::norm_parameter_count(block.norm)},  // the layers' and the final norm
          {"head", nn::linear_parameter_count(D, c.n_classes, true)}};
}

int64_t count_parameters(const ViTConfig& c) {
  int64_t total = 0;
  for (const ParameterPart& p : vit_parameter_parts(c)) total += p.count;
  return total;
}

}  // namespace nf::models
