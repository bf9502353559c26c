// The architecture registry: which class a config's "architecture" key builds.
#include "nanoformer/models/model.h"


#include "nanoformer/models/config/model_config.h"
#include "nanoformer/models/decoder_lm.h"
#include "nanoformer/models/encoder_decoder.h"
#include "nanoformer/models/encoder_model.h"
#include "nanoformer/models/vit.h"
#include "util/json_input.h"

namespace nf::models {

const std::vector<std::string>& architectures() {
  static const std::vector<std::string> names = {
      DecoderLMConfig::kArchitecture,
      EncoderConfig::kArchitecture,
      EncoderDecoderConfig::kArchitecture,
      ViTConfig::kArchitecture,
  };
  return names;
}

std::string config_architecture(const std::string& json_text, const std::string& source) {
  const nlohmann::json root = util::parse_json(json_text, source + ": ");
  NF_CHECK(root.is_object(), source, ": a model config must be a JSON object, got ", root.type_name());
  auto it = root.find("architecture");
  if (it == root.end()) return DecoderLMConfig::kArchitecture;
  NF_CHECK(it->is_string(), source, ": key 'architecture' has value ", util::json_excerpt(*it), ": expected a string");
  const std::string name = it->get<std::string>();
  std::string known;
  for (const auto& a : architectures()) {
    if (a == name) return name;
    known += (known.empty() ? "" : ", ") + a;
  }
  NF_FAIL(source, ": key 'architecture' has value \"", name, "\": expected one of ", known);
}

std::shared_ptr<Model> build_model(const std::string& json_text, const std::string& source, Generator& gen) {
  const std::string architecture = config_architecture(json_text, source);
  if (architecture == DecoderLMConfig::kArchitecture)
    return std::make_shared<DecoderLM>(parse_model_config(json_text, source), gen);
  if (architecture == EncoderConfig::kArchitecture)
    return std::make_shared<EncoderModel>(parse_encoder_config(json_text, source), gen);
  if (architecture == EncoderDecoderConfig::kArchitecture)
    return std::make_shared<EncoderDecoder>(parse_encoder_decoder_config(json_text, source), gen);
  if (architecture == ViTConfig::kArchitecture)
    return std::make_shared<ViTClassifier>(parse_vit_config(json_text, source), gen);
  NF_FAIL(source, ": architecture '", architecture, "' has no builder");
}

int64_t config_parameter_count(const std::string& json_text, const std::string& source) {
  const std::string architecture = config_architecture(json_text, source);
  if (architecture == DecoderLMConfig::kArchitecture) return count_parameters(parse_model_config(json_text, source));
  if (architecture == EncoderConfig::kArchitecture) {
    int64_t total = 0;
    for (const ParameterPart& part : encoder_parameter_parts(parse_encoder_config(json_text, source))) total += part.count;
    return total;
  }
  if (architecture == EncoderDecoderConfig::kArchitecture)
    return count_parameters(parse_encoder_decoder_config(json_text, source));
  if (architecture == ViTConfig::kArchitecture) return count_parameters(parse_vit_config(json_text, source));
  NF_FAIL(source, ": architecture '", architecture, "' has no parameter count");
}

std::shared_ptr<Model> build_model_from(const std::string& name_or_path, Generator& gen) {
  const std::string path = resolve_config_path(name_or_path);
  return build_model(read_config_text(path), path, gen);
}

std::vector<std::string> preset_names_of(const std::string& architecture) {
  std::vector<std::string> names;
  for (const std::string& name : preset_names())
    if (config_architecture(read_config_text(preset_path(name)), name) == architecture) names.push_back(name);
  return names;
}

void throw_wrong_architecture(const Model& model, const std::string& source, const char* wanted) {
  NF_FAIL(source, ": a model of architecture '", model.architecture(), "', where '", wanted, "' is needed");
}

}  // namespace nf::models
