#pragma once
// nanoformer's own checkpoint format, for every architecture (model.h): a safetensors file holding
// the model's state dict (names as the model registers them, f32) with the config JSON in the
// header metadata:
//   "__metadata__": {"format": "nanoformer", "format_version": "1", "model": "DecoderLM", "config": "{...}"}
// where "model" is the class (Module::type_name) and the config's "architecture" key says which
// class builds it.
// Tensors whose names start with "train/" (a training checkpoint's optimizer state; no module
// name holds a '/') are not the model's: loading skips them.
// The write is atomic (io::save_safetensors); reading validates the file before touching a tensor
// (a truncated or overlapping file is refused), then lists every missing, unexpected, mis-shaped
// or wrongly typed tensor by name in one nf::Error.
#include <map>
#include <memory>
#include <string>

#include "nanoformer/models/decoder_lm.h"

namespace nf::models {

void save_checkpoint(const Model& model, const std::string& path);
// The header metadata save_checkpoint writes for `model` (format, version, class, config).
std::map<std::string, std::string> checkpoint_metadata(const Model& model);
// The config JSON stored in a checkpoint (without reading its tensors).
std::string read_checkpoint_config_json(const std::string& path);
// The same parsed as a decoder LM's config (an error naming the file for other architectures).
DecoderLMConfig read_checkpoint_config(const std::string& path);
// Builds the model the checkpoint's config describes and loads its tensors.
std::shared_ptr<Model> load_checkpoint(const std::string& path);

}  // namespace nf::models
