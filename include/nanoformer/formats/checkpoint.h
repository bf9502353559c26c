#pragma once
// nanoformer's own checkpoint format, for every architecture (model.h): a safetensors file holding
// the model's state dict (names as the model registers them, f32) with the config JSON in the
// header metadata:
//   "__metadata__": {"format": "nanoformer", "format_version": "2", "model": "DecoderLM", "config": "{...}",
//                    "checksums": "{\"tok_embeddings.weight\": \"<XXH3-64, 16 hex digits>\", ...}"}
// where "model" is the class (Module::type_name) and the config's "architecture" key says which
// class builds it. Every tensor's bytes are checksummed (io/tensor_checksums.h) and verified on
// load, so a flipped bit is refused, naming the file and the tensor; files of format_version 1
// (written before checksums) still load, unverified.
// Tensors whose names start with "train/" (a training checkpoint's optimizer state; no module
// name holds a '/') are not the model's: loading skips them.
// The write is atomic (io::save_safetensors); reading validates the file before touching a tensor
// (a truncated or overlapping file is refused), then lists every missing, unexpected, mis-shaped
// or wrongly typed tensor by name in one nf::Error.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "nanoformer/io/safetensors.h"
#include "nanoformer/models/decoder_lm.h"

namespace nf::formats {

void save_checkpoint(const models::Model& model, const std::string& path);
// Verifies the named tensors of one of our files (a checkpoint, training checkpoint or LoRA
// adapter) against its checksums: required from format_version 2 on (an nf::Error naming the file
// and the damaged tensor); a version-1 file has none to check.
void verify_checkpoint_tensors(const io::SafetensorsFile& file, const std::vector<std::string>& names);
// The header metadata save_checkpoint writes for `model` (format, version, class, config).
std::map<std::string, std::string> checkpoint_metadata(const models::Model& model);
// The config JSON stored in a checkpoint (without reading its tensors).
std::string read_checkpoint_config_json(const std::string& path);
// The same parsed as a decoder LM's config (an error naming the file for other architectures).
models::DecoderLMConfig read_checkpoint_config(const std::string& path);
// Builds the model the checkpoint's config describes and loads its tensors.
std::shared_ptr<models::Model> load_checkpoint(const std::string& path);

}  // namespace nf::formats
