// LoRA on a whole model: targets by role, apply (freeze + adapters), merge, options as JSON.
#include "nanoformer/models/lora.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <memory>
#include <set>

#include "models/config/config_keys.h"
#include "nanoformer/core/error.h"
#include "nanoformer/models/quantize.h"
#include "nanoformer/nn/attention.h"
#include "nanoformer/nn/lora.h"
#include "nanoformer/nn/mlp.h"

namespace nf::models {
namespace {

using nlohmann::json;

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// A Linear some target role can name, with its dotted path in the model.
struct RoleLayer {
  std::string role;
  std::string path;
  std::shared_ptr<nn::Linear> layer;
};

// Visits `module` and every descendant (depth first, registration order) with its dotted path.
// The child of `parent` that is `layer`, as a dotted path under `path`.
std::string child_path(const nn::Module& parent, const std::string& path, const nn::Linear* layer) {
  for (const auto& [name, child] : parent.named_children())
    if (child.get() == layer) return path.empty() ? name : path + "." + name;
  NF_FAIL("LoRA: a layer of ", parent.type_name(), " at '", path, "' is not its registered child");
}

// Every Linear of `model` that a role names, in registration order.
std::vector<RoleLayer> role_layers(Model& model) {
  std::vector<RoleLayer> out;
  auto add = [&](const std::string& role, const nn::Module& parent, const std::string& path,
                 const std::shared_ptr<nn::Linear>& layer) {
    out.push_back({role, child_path(parent, path, layer.get()), layer});
  };
  model.apply([&](const std::string& path, nn::Module& m) {
    if (auto* attention = dynamic_cast<nn::MultiHeadAttention*>(&m)) {
      add("q", *attention, path, attention->q_proj);
      add("k", *attention, path, attention->k_proj);
      add("v", *attention, path, attention->v_proj);
      add("o", *attention, path, attention->o_proj);
    } else if (auto* swiglu = dynamic_cast<nn::SwiGLU*>(&m)) {
      add("gate", *swiglu, path, swiglu->w1);
      add("up", *swiglu, path, swiglu->w3);
      add("down", *swiglu, path, swiglu->w2);
    } else if (auto* two_layer = dynamic_cast<nn::TwoLayerMLP*>(&m)) {
      add("fc", *two_layer, path, two_layer->fc);
      add("proj", *two_layer, path, two_layer->proj);
    }
  });
  return out;
}

// Every Linear of `model` carrying an adapter, with its path.
std::vector<std::pair<std::string, const nn::Linear*>> adapted_layers(const Model& model) {
  std::vector<std::pair<std::string, const nn::Linear*>> out;
  for (const auto& [path, m] : model.named_modules())
    if (auto* layer = dynamic_cast<const nn::Linear*>(m); layer && layer->has_lora()) out.emplace_back(path, layer);
  return out;
}

void check_targets(const std::vector<std::string>& targets) {
  NF_CHECK(!targets.empty(), "LoRA: no targets (known: ", joined(lora_target_names()), ")");
  std::set<std::string> seen;
  for (const auto& t : targets) {
    const auto& known = lora_target_names();
    NF_CHECK(std::find(known.begin(), known.end(), t) != known.end(), "LoRA: unknown target '", t, "' (known: ",
             joined(known), ")");
    NF_CHECK(seen.insert(t).second, "LoRA: target '", t, "' named twice");
  }
}

}  // namespace

const std::vector<std::string>& lora_target_names() {
  static const std::vector<std::string> names{"q", "k", "v", "o", "gate", "up", "down", "fc", "proj"};
  return names;
}

std::vector<std::string> parse_lora_targets(const std::string& comma_separated) {
  std::vector<std::string> targets;
  size_t start = 0;
  while (start <= comma_separated.size()) {
    const size_t end = std::min(comma_separated.find(',', start), comma_separated.size());
    targets.push_back(comma_separated.substr(start, end - start));
    start = end + 1;
  }
  check_targets(targets);
  return targets;
}

std::string lora_options_to_json(const LoRAOptions& options) {
  json j{{"rank", options.rank}, {"alpha", options.alpha}, {"dropout", options.dropout}, {"targets", options.targets}};
  if (options.base_type) j["base_type"] = quant_type_name(*options.base_type);
  return j.dump();
}

LoRAOptions lora_options_from_json(const std::string& json_text, const std::string& source) {
  const json root = util::parse_json(json_text, source + ": ");
  config_keys::ObjectReader reader(root, source);
  LoRAOptions options;
  reader.value("rank", options.rank);
  reader.value("alpha", options.alpha);
  reader.value("dropout", options.dropout);
  if (const json* targets = reader.child("targets")) {
    NF_CHECK(targets->is_array() && std::all_of(targets->begin(), targets->end(), [](const json& t) { return t.is_string(); }),
             source, ": key 'targets' has value ", util::json_excerpt(*targets), ": expected an array of strings");
    options.targets = targets->get<std::vector<std::string>>();
  }
  std::string base_type;
  reader.value("base_type", base_type);
  reader.finish();
  try {
    if (!base_type.empty()) options.base_type = quant_type_from_name(base_type);
    check_lora_options(options);
  } catch (const Error& e) {
    NF_FAIL(source, ": ", e.what());
  }
  return options;
}

void check_lora_options(const LoRAOptions& options) {
  nn::check_lora_config({options.rank, options.alpha, options.dropout});
  check_targets(options.targets);
  NF_CHECK(!options.base_type || is_block_quantized(*options.base_type), "LoRA: base type ",
           options.base_type ? quant_type_name(*options.base_type) : "", " is no block-quantised type (q8_0, q4_0, ...)");
}

// The Linears of `model` that `options` targets; throws, naming the problem, on bad options, a model
// that already has adapters, or a target that names no layer of this model.
std::vector<RoleLayer> targeted_layers(Model& model, const LoRAOptions& options) {
  check_lora_options(options);
  NF_CHECK(!has_lora(model), "LoRA: this ", model.type_name(), " already has adapters (merge them first)");
  const std::vector<RoleLayer> layers = role_layers(model);
  std::vector<std::string> roles_here;
  for (const auto& name : lora_target_names())
    if (std::any_of(layers.begin(), layers.end(), [&](const RoleLayer& l) { return l.role == name; }))
      roles_here.push_back(name);
  for (const auto& t : options.targets)
    NF_CHECK(std::find(roles_here.begin(), roles_here.end(), t) != roles_here.end(), "LoRA: target '", t,
             "' names no layer of this ", model.type_name(), " (its layers take: ", joined(roles_here), ")");
  std::vector<RoleLayer> targeted;
  for (const RoleLayer& l : layers)
    if (std::find(options.targets.begin(), options.targets.end(), l.role) != options.targets.end()) targeted.push_back(l);
  return targeted;
}

std::vector<std::string> apply_lora(Model& model, const LoRAOptions& options, Generator& gen) {
  const std::vector<RoleLayer> layers = targeted_layers(model, options);
  const nn::LoRAConfig config{options.rank, options.alpha, options.dropout};
  if (options.base_type) {
    auto* lm = dynamic_cast<DecoderLM*>(&model);
    NF_CHECK(lm != nullptr, "LoRA: a quantised base (base_type ", quant_type_name(*options.base_type),
             ") needs a decoder LM, not a ", model.architecture());
    quantize_weights(*lm, {.type = *options.base_type, .output_type = QuantType::f32, .embedding_type = QuantType::f32});
  }
  model.requires_grad_(false);
  std::vector<std::string> adapted;
  for (const RoleLayer& l : layers) {
    l.layer->add_lora(config, gen);
    adapted.push_back(l.path);
  }
  return adapted;
}

int64_t lora_parameter_count(Model& model, const LoRAOptions& options) {
  int64_t total = 0;
  for (const RoleLayer& l : targeted_layers(model, options)) {
    int64_t adapter = 0;  // A (rank, in) and B (out, rank)
    if (__builtin_mul_overflow(options.rank, l.layer->in_features() + l.layer->out_features(), &adapter) ||
        __builtin_add_overflow(total, adapter, &total))
      return std::numeric_limits<int64_t>::max();
  }
  return total;
}

bool has_lora(const Model& model) { return !adapted_layers(model).empty(); }

std::vector<nn::NamedTensor> lora_parameters(const Model& model) {
  std::vector<nn::NamedTensor> out;
  for (const auto& [path, layer] : adapted_layers(model)) {
    out.emplace_back(path + ".lora_A.weight", layer->lora_A->weight);
    out.emplace_back(path + ".lora_B.weight", layer->lora_B->weight);
  }
  return out;
}

void merge_lora(Model& model) {
  NF_CHECK(has_lora(model), "LoRA: merge_lora on a ", model.type_name(), " without adapters");
  model.apply([](const std::string&, nn::Module& m) {
    if (auto* layer = dynamic_cast<nn::Linear*>(&m); layer && layer->has_lora()) layer->merge_lora();
  });
  dequantize_weights(model);  // a quantised base (QLoRA, a GGUF) merges into its dense form
  model.requires_grad_(true);
}

LoRAAdaptersOff::LoRAAdaptersOff(Model& model) {
  model.apply([this](const std::string&, nn::Module& m) {
    if (auto* layer = dynamic_cast<nn::Linear*>(&m); layer && layer->lora_active()) {
      layer->set_lora_enabled(false);
      layers_.push_back(layer);
    }
  });
}

LoRAAdaptersOff::~LoRAAdaptersOff() {
  for (nn::Linear* layer : layers_) layer->set_lora_enabled(true);
}

}  // namespace nf::models
