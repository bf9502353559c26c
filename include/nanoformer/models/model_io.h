#pragma once
// Loading and saving a model by name, whatever it is stored as. Today: a preset name or a config
// JSON file (a freshly initialised model, seed 0, so the same name always gives the same weights)
// and nanoformer checkpoints (checkpoint.h). The other formats of issue 7 (Hugging Face folders,
// MiniMind, nanochat, llama2.c .bin) plug in here.
#include <memory>
#include <string>
#include <vector>

#include "nanoformer/models/decoder_lm.h"

namespace nf::models {

// A preset name, a config .json, or a nanoformer checkpoint (.safetensors).
std::shared_ptr<DecoderLM> load_model(const std::string& path_or_preset);
// `format`: one of model_formats(); "nanoformer" writes save_checkpoint's file. A known format
// that this build cannot write yet, or an unknown name, throws nf::Error saying which.
void save_model(const DecoderLM& model, const std::string& path, const std::string& format);
// The format names save_model knows: nanoformer, hf, minimind, nanochat, llama2c.
const std::vector<std::string>& model_formats();

}  // namespace nf::models
