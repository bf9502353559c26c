// load_model / save_model: recognise a model file's format and dispatch to its reader or writer.
#include "nanoformer/formats/model_io.h"

#include <filesystem>
#include <fstream>

#include "formats/folder_io.h"
#include "nanoformer/core/error.h"
#include "nanoformer/formats/checkpoint.h"
#include "nanoformer/formats/gguf_checkpoint.h"
#include "nanoformer/formats/hf_bert.h"
#include "nanoformer/formats/hf_checkpoint.h"
#include "nanoformer/formats/hf_vit.h"
#include "nanoformer/formats/llama2c.h"
#include "nanoformer/formats/minimind_checkpoint.h"
#include "nanoformer/formats/nanochat_checkpoint.h"
#include "nanoformer/models/quantize.h"

namespace nf::formats {
namespace {

namespace fs = std::filesystem;

bool has_extension(const fs::path& p, const std::string& ext) { return p.extension() == ext; }

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// A Hugging Face folder, by the reader of its config.json's model_type.
std::shared_ptr<models::Model> load_hf_folder(const std::string& dir) {
  const std::string type = hf_model_type(dir);
  if (type == "gpt2" || type == "llama" || type == "mistral" || type == "qwen2" || type == "qwen3") return load_hf(dir);
  if (type == "bert") return load_hf_bert(dir);
  if (type == "vit") return load_hf_vit(dir);
  NF_FAIL(dir, "/config.json: model_type '", type, "' is not supported (gpt2, llama, mistral, qwen2, qwen3, bert, vit)");
}

}  // namespace

std::string model_format_name(ModelFormat format) {
  switch (format) {
    case ModelFormat::nanoformer: return "nanoformer";
    case ModelFormat::hf: return "hf";
    case ModelFormat::llama2c: return "llama2c";
    case ModelFormat::minimind: return "minimind";
    case ModelFormat::minimind_hf: return "minimind-hf";
    case ModelFormat::nanochat: return "nanochat";
    case ModelFormat::gguf: return "gguf";
    case ModelFormat::config: return "config";
    case ModelFormat::preset: return "preset";
  }
  return "?";
}

const std::vector<std::string>& model_formats() {
  static const std::vector<std::string> formats = {"nanoformer", "hf", "minimind", "minimind-hf", "nanochat",
                                                     "llama2c", "gguf"};
  return formats;
}

ModelFormat detect_model_format(const std::string& path_or_preset) {
  const fs::path p(path_or_preset);
  if (fs::is_directory(p)) {
    if (is_minimind_folder(path_or_preset))
      return minimind_folder_form(path_or_preset) == MiniMindForm::lmconfig ? ModelFormat::minimind : ModelFormat::minimind_hf;
    if (is_nanochat_folder(path_or_preset)) return ModelFormat::nanochat;
    NF_CHECK(is_hf_folder(path_or_preset), path_or_preset,
             ": a folder, but not a model folder (Hugging Face or MiniMind: config.json + model.safetensors or "
             "model.safetensors.index.json; nanochat: meta_<step>.json + model_<step>.safetensors)");
    return ModelFormat::hf;
  }
  if (fs::is_regular_file(p)) {
    if (io::is_gguf_file(path_or_preset)) return ModelFormat::gguf;  // by its magic, whatever its name
    NF_CHECK(!has_extension(p, ".gguf"), path_or_preset, ": named .gguf but not a GGUF file (it does not start with 'GGUF')");
    if (has_extension(p, ".safetensors")) return ModelFormat::nanoformer;
    if (has_extension(p, ".bin")) return ModelFormat::llama2c;
    if (has_extension(p, ".json")) return ModelFormat::config;
    NF_FAIL(path_or_preset, ": unknown model file type (expected .safetensors, .gguf, .bin, .json or a folder)");
  }
  return ModelFormat::preset;
}

namespace {

std::shared_ptr<models::Model> load_model_as_detected(const std::string& path_or_preset) {
  switch (detect_model_format(path_or_preset)) {
    case ModelFormat::nanoformer: return load_checkpoint(path_or_preset);
    case ModelFormat::hf: return load_hf_folder(path_or_preset);
    case ModelFormat::llama2c: return load_llama2c(path_or_preset);
    case ModelFormat::minimind:
    case ModelFormat::minimind_hf: return load_minimind(path_or_preset);
    case ModelFormat::nanochat: return load_nanochat(path_or_preset);
    case ModelFormat::gguf: return load_gguf(path_or_preset);
    case ModelFormat::config:
    case ModelFormat::preset: {
      Generator gen(0);
      return models::build_model_from(path_or_preset, gen);
    }
  }
  NF_FAIL(path_or_preset, ": unknown model format");
}

}  // namespace

std::shared_ptr<models::Model> load_model(const std::string& path_or_preset) {
  try {
    return load_model_as_detected(path_or_preset);
  } catch (const OutOfMemory& e) {  // the file's numbers asked for more than the machine has
    throw OutOfMemory(path_or_preset + ": loading it ran " + e.what());
  } catch (const std::bad_alloc&) {
    throw OutOfMemory(path_or_preset + ": loading it ran out of memory");
  }
}

std::shared_ptr<models::DecoderLM> load_decoder_lm(const std::string& path_or_preset) {
  return models::model_as<models::DecoderLM>(load_model(path_or_preset), path_or_preset);
}

namespace {

// The model as a DecoderLM, for the formats that hold nothing else.
const models::DecoderLM& decoder_for(const models::Model& model, const std::string& format) {
  const auto* lm = dynamic_cast<const models::DecoderLM*>(&model);
  NF_CHECK(lm, "save_model: format '", format, "' holds decoder language models, not architecture '",
           model.architecture(), "' (nanoformer holds every architecture)");
  return *lm;
}

}  // namespace

void save_model(const models::Model& model, const std::string& path, const std::string& format, const SaveOptions& options) {
  const bool folder_of_shards = format == "hf" || format == "minimind" || format == "minimind-hf";
  NF_CHECK(options.max_shard_bytes == 0 || folder_of_shards, "save_model: format '", format,
           "' is not written in shards (a maximum shard size applies to hf, minimind and minimind-hf)");
  NF_CHECK(options.tokenizer.empty() || format == "gguf", "save_model: format '", format,
           "' does not embed a tokenizer (gguf does)");
  if (format != "gguf")
    models::check_dense(model, "save_model: " + path, "format '" + format + "' stores dense weights: write gguf, or dequantise first");
  if (format == "nanoformer")
    save_checkpoint(model, path);
  else if (const auto* vit = dynamic_cast<const models::ViTClassifier*>(&model); vit && format == "hf")
    save_hf_vit(*vit, path, options.max_shard_bytes);
  else if (format == "hf" && dynamic_cast<const models::EncoderModel*>(&model))
    save_hf_bert(dynamic_cast<const models::EncoderModel&>(model), path, options.max_shard_bytes);
  else if (format == "hf")
    save_hf(decoder_for(model, format), path, options.max_shard_bytes);
  else if (format == "minimind")
    save_minimind(decoder_for(model, format), path, options.max_shard_bytes);
  else if (format == "minimind-hf")
    save_minimind_hf(decoder_for(model, format), path, options.max_shard_bytes);
  else if (format == "nanochat")
    save_nanochat(decoder_for(model, format), path);
  else if (format == "llama2c")
    save_llama2c(decoder_for(model, format), path);
  else if (format == "gguf")
    save_gguf(decoder_for(model, format), path, {.tokenizer = options.tokenizer, .file_type = options.gguf_file_type});
  else
    NF_FAIL("save_model: format '", format, "' is unknown (known: ", joined(model_formats()), ")");
}

}  // namespace nf::formats
