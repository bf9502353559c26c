#pragma once
// One entry point for every model file format:
//   load_model(x): x is a nanoformer checkpoint (.safetensors with our metadata), a Hugging Face
//     folder (config.json + model.safetensors / index; GPT-2, LLaMA, BERT, ViT, by config.json's
//     model_type),
//     a MiniMind folder (config.json with model_type "minimind", 002's form or the Hugging Face
//     form), a nanochat folder (meta_<step>.json + model_<step>.safetensors), a llama2.c .bin, a
//     GGUF file (llama.cpp's; told by its first bytes, "GGUF"), a
//     config JSON file or a preset name (the last two build a freshly initialised model, seed 0, so
//     the same name always gives the same weights). The model is of whichever architecture the
//     file holds (model.h); load_decoder_lm insists on a language model.
//   save_model(model, path, format): format "nanoformer" (a .safetensors file, every
//     architecture), "hf" (a decoder LM as GPT-2 / LLaMA, an encoder as
//     BertModel, a ViTClassifier), "minimind" (002's form),
//     "minimind-hf" (MiniMind's Hugging Face form), "nanochat" (folders), "llama2c" (a .bin file), "gguf" (llama / gpt2, quantised
//     weights as the model holds them, gguf_checkpoint.h);
//     hf, minimind and minimind-hf folders are sharded when SaveOptions says so.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nanoformer/models/decoder_lm.h"

namespace nf::formats {

enum class ModelFormat { nanoformer, hf, minimind, minimind_hf, nanochat, llama2c, gguf, config, preset };

// "nanoformer", "hf", "minimind", "minimind-hf", "nanochat", "llama2c", "gguf", "config", "preset".
std::string model_format_name(ModelFormat format);
// The format names save_model writes: nanoformer, hf, minimind, minimind-hf, nanochat, llama2c, gguf.
const std::vector<std::string>& model_formats();
// What load_model would read `path_or_preset` as: a name that is no file or folder is taken as a
// preset (resolve_model_config then names it when it is unknown); a folder of no known kind throws.
ModelFormat detect_model_format(const std::string& path_or_preset);
std::shared_ptr<models::Model> load_model(const std::string& path_or_preset);
// load_model, then an nf::Error naming the file when the model is not a DecoderLM.
std::shared_ptr<models::DecoderLM> load_decoder_lm(const std::string& path_or_preset);
struct SaveOptions {
  // > 0: write the weights of a folder format (hf, minimind, minimind-hf) as shards of at most this
  // many bytes plus model.safetensors.index.json, as transformers' save_pretrained(max_shard_size);
  // 0: one model.safetensors.
  int64_t max_shard_bytes = 0;
  // gguf: a tokenizer file to embed (tokenizer.json, or a .gguf's tokenizer); "" = none.
  std::string tokenizer = {};
  // gguf: general.file_type (llama.cpp's llama_ftype); unset: the one of the blocks' main type
  std::optional<uint32_t> gguf_file_type = {};
};
// Throws nf::Error naming an unknown format (and the known ones), a format that cannot hold the
// model's architecture, what the format cannot express, or a shard size for a format without shards.
void save_model(const models::Model& model, const std::string& path, const std::string& format,
                const SaveOptions& options = {});

}  // namespace nf::formats
