// Checkpoints: the state dict as safetensors with the config in the header metadata.
#include "nanoformer/formats/checkpoint.h"

#include <sstream>

#include "nanoformer/core/error.h"
#include "nanoformer/io/safetensors.h"
#include "nanoformer/models/quantize.h"
#include "nanoformer/io/tensor_checksums.h"
#include "nanoformer/ops/factory.h"

namespace nf::formats {
namespace {

constexpr const char* kFormat = "nanoformer";
constexpr const char* kFormatVersion = "2";  // 2: with tensor checksums; 1 (read only): written without

std::string metadata_value(const io::SafetensorsFile& file, const std::string& key) {
  auto it = file.metadata().find(key);
  NF_CHECK(it != file.metadata().end(), file.path(), ": not a nanoformer checkpoint (no '", key,
           "' in the header metadata)");
  return it->second;
}

// The checked config JSON of a checkpoint.
std::string config_json_of(const io::SafetensorsFile& file) {
  const std::string format = metadata_value(file, "format");
  NF_CHECK(format == kFormat, file.path(), ": metadata 'format' is '", format, "', expected '", kFormat, "'",
           format == "nanoformer-lora" ? " (a LoRA adapter: fold it into its base with `nanoformer lora merge`)" : "");
  const std::string version = metadata_value(file, "format_version");
  NF_CHECK(version == "1" || version == kFormatVersion, file.path(), ": format_version '", version,
           "' is not supported (this build reads 1 and ", kFormatVersion, ")");
  return metadata_value(file, "config");
}

// A corrupt header must not make us allocate a model sized by it: a config describing far more
// parameters than the file holds values is refused before the model is built (a smaller
// shortfall, a tensor or two missing, is left to load_state_dict, which names them).
void check_file_can_hold(const io::SafetensorsFile& file, const std::string& config_json) {
  const int64_t claimed = models::config_parameter_count(config_json, file.path() + ": config");
  int64_t held = 0;  // <= the file's size in bytes, so no overflow
  for (const io::TensorEntry& entry : file.entries()) held += shape_numel(entry.shape);
  NF_CHECK(claimed <= 2 * held + (int64_t{1} << 20), file.path(), ": its config describes ", claimed,
           " parameters, but the file holds only ", held, " values");
}

}  // namespace

void verify_checkpoint_tensors(const io::SafetensorsFile& file, const std::vector<std::string>& names) {
  const auto version = file.metadata().find("format_version");
  if (version != file.metadata().end() && version->second == "1") return;  // written before checksums
  io::verify_tensor_checksums(file, names);
}

std::map<std::string, std::string> checkpoint_metadata(const models::Model& model) {
  return {{"format", kFormat}, {"format_version", kFormatVersion}, {"model", model.type_name()}, {"config", model.config_json()}};
}

void save_checkpoint(const models::Model& model, const std::string& path) {
  models::check_dense(model, "save_checkpoint: " + path, "a nanoformer checkpoint stores dense weights: write gguf, or dequantise first");
  // registration order: parameters, then persistent buffers
  std::vector<nn::NamedTensor> ordered = model.named_parameters();
  const nn::StateDict state = model.state_dict();
  for (auto& buffer : model.named_buffers())
    if (state.count(buffer.first)) ordered.push_back(buffer);
  std::map<std::string, std::string> metadata = checkpoint_metadata(model);
  metadata[io::kChecksumsKey] = io::tensor_checksums(ordered);
  io::save_safetensors(path, ordered, metadata);
}

std::string read_checkpoint_config_json(const std::string& path) {
  return config_json_of(io::SafetensorsFile::open(path));
}

models::DecoderLMConfig read_checkpoint_config(const std::string& path) {
  return models::parse_model_config(read_checkpoint_config_json(path), path + ": config");
}

std::shared_ptr<models::Model> load_checkpoint(const std::string& path) {
  const io::SafetensorsFile file = io::SafetensorsFile::open(path);
  const std::string config_json = config_json_of(file);
  check_file_can_hold(file, config_json);
  Generator gen(0);
  std::shared_ptr<models::Model> model;
  {
    const SkipRandomInitGuard every_weight_is_loaded;  // load_state_dict below refuses a missing one
    model = models::build_model(config_json, path + ": config", gen);
  }
  NF_CHECK(metadata_value(file, "model") == model->type_name(), path, ": metadata 'model' is '",
           metadata_value(file, "model"), "', but its config builds a ", model->type_name());
  const nn::StateDict own = model->state_dict();
  std::vector<std::string> mistyped, names;
  nn::StateDict state;
  for (const io::TensorEntry& entry : file.entries()) {
    if (entry.name.rfind("train/", 0) == 0) continue;  // a training checkpoint's optimizer state
    names.push_back(entry.name);
    auto it = own.find(entry.name);
    if (it != own.end() && entry.dtype != it->second.dtype())
      mistyped.push_back(entry.name + " (" + io::safetensors_dtype_name(entry.dtype) + ", expected " +
                         io::safetensors_dtype_name(it->second.dtype()) + ")");
    state[entry.name] = file.view(entry.name);
  }
  if (!mistyped.empty()) {
    std::ostringstream os;
    os << path << ": wrong dtype (" << mistyped.size() << "):";
    for (const auto& m : mistyped) os << " " << m;
    throw Error(os.str());
  }
  try {
    model->load_state_dict(state);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  verify_checkpoint_tensors(file, names);  // after the names and shapes, which say more when wrong
  return model;
}

}  // namespace nf::formats
