#pragma once
// nanoformer's own checkpoint format: a safetensors file holding the model's state dict (names as
// DecoderLM registers them, f32) with the model config JSON in the header metadata:
//   "__metadata__": {"format": "nanoformer", "format_version": "1", "model": "DecoderLM", "config": "{...}"}
// The write is atomic (io::save_safetensors); reading validates the file before touching a tensor
// (a truncated or overlapping file is refused), then lists every missing, unexpected, mis-shaped
// or wrongly typed tensor by name in one nf::Error.
#include <memory>
#include <string>

#include "nanoformer/models/decoder_lm.h"

namespace nf::models {

void save_checkpoint(const DecoderLM& model, const std::string& path);
// The config stored in a checkpoint (without reading its tensors).
DecoderLMConfig read_checkpoint_config(const std::string& path);
// Builds the model the checkpoint's config describes and loads its tensors.
std::shared_ptr<DecoderLM> load_checkpoint(const std::string& path);

}  // namespace nf::models
