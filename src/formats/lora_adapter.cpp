// Adapter-only LoRA files: the adapter tensors with the options and the base's identity.
#include "nanoformer/formats/lora_adapter.h"

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "nanoformer/core/error.h"
#include "nanoformer/formats/checkpoint.h"
#include "nanoformer/io/safetensors.h"
#include "nanoformer/io/tensor_checksums.h"
#include "nanoformer/ops/view.h"
#include "util/json_input.h"

namespace nf::formats {
namespace {

constexpr const char* kFormat = "nanoformer-lora";
constexpr const char* kFormatVersion = "2";  // 2: with tensor checksums; 1 (read only): written without

std::string metadata_value(const io::SafetensorsFile& file, const std::string& key) {
  auto it = file.metadata().find(key);
  NF_CHECK(it != file.metadata().end(), file.path(), ": not a nanoformer LoRA adapter (no '", key,
           "' in the header metadata)");
  return it->second;
}

LoRAAdapterInfo info_of(const io::SafetensorsFile& file) {
  const std::string format = metadata_value(file, "format");
  NF_CHECK(format == kFormat, file.path(), ": metadata 'format' is '", format, "', expected '", kFormat, "'",
           format == "nanoformer" ? " (this is a full checkpoint, not an adapter)" : "");
  const std::string version = metadata_value(file, "format_version");
  NF_CHECK(version == "1" || version == kFormatVersion, file.path(), ": format_version '", version,
           "' is not supported (this build reads 1 and ", kFormatVersion, ")");
  LoRAAdapterInfo info;
  info.options = models::lora_options_from_json(metadata_value(file, "lora"), file.path() + ": metadata 'lora'");
  info.base_model = metadata_value(file, "base_model");
  info.base_config_json = metadata_value(file, "base_config");
  auto base_path = file.metadata().find("base_path");
  if (base_path != file.metadata().end()) info.base_path = base_path->second;
  return info;
}

// Config keys that do not change what the weights compute: a base may differ from the adapter's in them.
const std::set<std::string> kNonFunctionalKeys = {"name", "dropout", "residual_dropout", "init", "init_std"};

// "dim (32 there, 64 here), ..." or "": the keys (but `ignored`) in which the two configs differ.
std::string differing_keys(const std::string& adapter_base_json, const std::string& model_json, const std::string& path,
                           const std::set<std::string>& ignored = {}) {
  const nlohmann::json theirs = util::parse_json(adapter_base_json, path + ": metadata 'base_config': ");
  const nlohmann::json ours = util::parse_json(model_json, "the model's config: ");
  auto describe = [](const nlohmann::json& config, const std::string& key) {
    return config.contains(key) ? util::json_excerpt(config.at(key)) : std::string("absent");
  };
  std::string out;
  for (const std::string& key : util::differing_keys(theirs, ours, ignored))
    out += (out.empty() ? "" : ", ") + key + " (" + describe(theirs, key) + " there, " + describe(ours, key) + " here)";
  return out;
}

// "; the adapter's base config differs from this model's in: dim (32 there, 64 here), ..." or "".
std::string config_differences(const std::string& adapter_base_json, const std::string& model_json,
                               const std::string& path) {
  const std::string keys = differing_keys(adapter_base_json, model_json, path);
  return keys.empty() ? "" : "; the adapter's base config differs from this model's in: " + keys;
}

// Copies the file's adapter tensors into the model's, or throws listing every mismatch (tensors, or
// else the config keys that change what the base computes).
void copy_adapter_tensors(const models::Model& model, const io::SafetensorsFile& file, const LoRAAdapterInfo& info) {
  const std::vector<nn::NamedTensor> own = models::lora_parameters(model);
  std::vector<std::string> missing, misshaped, unexpected, mistyped;
  std::set<std::string> own_names;
  for (const auto& [name, tensor] : own) {
    own_names.insert(name);
    if (!file.contains(name)) {
      missing.push_back(name);
      continue;
    }
    const io::TensorEntry& entry = file.entry(name);
    if (!is_floating(entry.dtype))
      mistyped.push_back(name + " (" + io::safetensors_dtype_name(entry.dtype) + ")");
    else if (entry.shape != tensor.shape())
      misshaped.push_back(name + " (the base needs " + shape_str(tensor.shape()) + ", the file has " +
                          shape_str(entry.shape) + ")");
  }
  for (const io::TensorEntry& entry : file.entries())
    if (!own_names.count(entry.name) && entry.name.rfind("train/", 0) != 0) unexpected.push_back(entry.name);
  if (!missing.empty() || !misshaped.empty() || !unexpected.empty() || !mistyped.empty()) {
    std::ostringstream os;
    os << file.path() << ": the adapter does not fit this " << model.type_name();
    auto list = [&](const char* what, const std::vector<std::string>& names) {
      if (names.empty()) return;
      os << "; " << what << " (" << names.size() << "):";
      for (const auto& n : names) os << " " << n;
    };
    list("mis-shaped", misshaped);
    list("missing adapter tensors", missing);
    list("unexpected", unexpected);
    list("not floating point", mistyped);
    os << config_differences(info.base_config_json, model.config_json(), file.path());
    throw Error(os.str());
  }
  // shapes alone do not make the base the adapter was trained on: rope_theta, norm_eps, ... must agree too
  const std::string differences =
      differing_keys(info.base_config_json, model.config_json(), file.path(), kNonFunctionalKeys);
  NF_CHECK(differences.empty(), file.path(), ": the adapter was trained on another base: its base config differs ",
           "from this model's in: ", differences, " (merge it into the base it was trained on)");
  verify_checkpoint_tensors(file, std::vector<std::string>(own_names.begin(), own_names.end()));
  for (const auto& [name, tensor] : own) copy_into(tensor, file.view(name));
}

}  // namespace

std::map<std::string, std::string> lora_adapter_metadata(const models::Model& model, const models::LoRAOptions& options,
                                                         const std::string& base_path) {
  std::map<std::string, std::string> metadata{{"format", kFormat},
                                              {"format_version", kFormatVersion},
                                              {"lora", models::lora_options_to_json(options)},
                                              {"base_model", model.type_name()},
                                              {"base_config", model.config_json()}};
  if (!base_path.empty()) metadata["base_path"] = base_path;
  return metadata;
}

void save_lora_adapter(const models::Model& model, const models::LoRAOptions& options, const std::string& path,
                       const std::string& base_path) {
  const std::vector<nn::NamedTensor> adapters = models::lora_parameters(model);
  NF_CHECK(!adapters.empty(), path, ": this ", model.type_name(), " has no LoRA adapters to save");
  std::map<std::string, std::string> metadata = lora_adapter_metadata(model, options, base_path);
  metadata[io::kChecksumsKey] = io::tensor_checksums(adapters);
  io::save_safetensors(path, adapters, metadata);
}

LoRAAdapterInfo read_lora_adapter_info(const std::string& path) { return info_of(io::SafetensorsFile::open(path)); }

LoRAAdapterInfo load_lora_adapter(models::Model& model, const std::string& path, Generator& gen) {
  const io::SafetensorsFile file = io::SafetensorsFile::open(path);
  const LoRAAdapterInfo info = info_of(file);
  NF_CHECK(info.base_model == model.type_name(), path, ": an adapter for a ", info.base_model, ", not for a ",
           model.type_name());
  try {
    apply_lora(model, info.options, gen);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what() + config_differences(info.base_config_json, model.config_json(), path));
  }
  try {
    copy_adapter_tensors(model, file, info);
  } catch (const Error&) {
    merge_lora(model);  // the fresh adapters have B = 0: merging them leaves the base's weights as they were
    throw;
  }
  return info;
}

}  // namespace nf::formats
