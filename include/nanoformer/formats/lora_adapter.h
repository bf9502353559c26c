#pragma once
// Adapter-only LoRA files: a safetensors file holding only a model's adapter tensors
// ("layers.0.attn.q_proj.lora_A.weight", ..., f32, registration order) and, in the header metadata,
// what is needed to put them back on the right base:
//   "__metadata__": {"format": "nanoformer-lora", "format_version": "2",
//                    "lora": "{\"rank\": 8, \"alpha\": 16.0, \"dropout\": 0.0, \"targets\": [...]}",
//                    "base_model": "DecoderLM", "base_config": "{...the base's config JSON...}",
//                    "base_path": "<where the base was loaded from>" (when known),
//                    "checksums": every tensor's XXH3-64, verified on load (formats/checkpoint.h)}
// Tensors whose names start with "train/" (the optimizer state of a LoRA run's training checkpoint,
// which is an adapter file too) are not the adapter's: loading skips them, as load_checkpoint does.
// A file is a few percent of its base or less. Loading applies the stored options to a base model
// and copies the tensors in, refusing (one nf::Error naming the file) a base of another class,
// adapter tensors missing, unexpected or mis-shaped against the base (listed by name, with the
// config keys in which the two bases differ).
#include <map>
#include <string>

#include "nanoformer/models/lora.h"

namespace nf::formats {

struct LoRAAdapterInfo {
  models::LoRAOptions options;
  std::string base_model;        // the base's class (Module::type_name)
  std::string base_config_json;  // the base's config_json()
  std::string base_path;         // "" when unknown
};

// The header metadata save_lora_adapter writes (format, version, options, the base's identity).
std::map<std::string, std::string> lora_adapter_metadata(const models::Model& model, const models::LoRAOptions& options,
                                                         const std::string& base_path = "");
// Writes `model`'s adapters (atomically, io::save_safetensors); throws when it has none.
void save_lora_adapter(const models::Model& model, const models::LoRAOptions& options, const std::string& path,
                       const std::string& base_path = "");
// The metadata of an adapter file, without reading its tensors.
LoRAAdapterInfo read_lora_adapter_info(const std::string& path);
// Applies the file's options to `model` (a base without adapters) and loads the adapter tensors.
// Refuses a base whose config differs from the recorded base's in a key that changes what the
// weights compute (anything but name, dropout, residual_dropout, init, init_std), even when every
// shape agrees.
LoRAAdapterInfo load_lora_adapter(models::Model& model, const std::string& path, Generator& gen = default_generator());

}  // namespace nf::formats
