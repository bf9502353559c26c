// load_model / save_model: dispatch on what the name or path is, and on the format name.
#include "nanoformer/models/model_io.h"

#include <algorithm>
#include <filesystem>

#include "nanoformer/core/error.h"
#include "nanoformer/models/checkpoint.h"

namespace nf::models {

const std::vector<std::string>& model_formats() {
  static const std::vector<std::string> formats = {"nanoformer", "hf", "minimind", "nanochat", "llama2c"};
  return formats;
}

std::shared_ptr<DecoderLM> load_model(const std::string& path_or_preset) {
  const std::filesystem::path path(path_or_preset);
  NF_CHECK(!std::filesystem::is_directory(path), path_or_preset,
           ": model folders (Hugging Face, MiniMind, nanochat) are not supported yet; give a preset name, a config "
           ".json or a nanoformer .safetensors checkpoint");
  if (std::filesystem::is_regular_file(path) && path.extension() != ".json") return load_checkpoint(path_or_preset);
  Generator gen(0);
  return std::make_shared<DecoderLM>(resolve_model_config(path_or_preset), gen);
}

void save_model(const DecoderLM& model, const std::string& path, const std::string& format) {
  const auto& formats = model_formats();
  if (std::find(formats.begin(), formats.end(), format) == formats.end()) {
    std::string known;
    for (const auto& f : formats) known += (known.empty() ? "" : ", ") + f;
    NF_FAIL("save_model: format '", format, "' is unknown (known: ", known, ")");
  }
  NF_CHECK(format == "nanoformer", "save_model: format '", format,
           "' is not supported yet (this build writes: nanoformer)");
  save_checkpoint(model, path);
}

}  // namespace nf::models
