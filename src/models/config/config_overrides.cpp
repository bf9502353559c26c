// "key=value" overrides of a model config (--set): merged into a preset's or file's JSON, or onto a
// loaded model's config.
#include "nanoformer/models/config/config_overrides.h"

#include <nlohmann/json.hpp>

#include "nanoformer/core/error.h"
#include "nanoformer/models/config/model_config.h"
#include "util/json_input.h"

namespace nf::models {

using nlohmann::json;

namespace {

// `config` with "key=value" overrides: a value is JSON (numbers, true/false, null, quoted strings),
// else a bare string (--set norm=rmsnorm).
json with_overrides(json config, const std::string& source, const std::vector<std::string>& overrides) {
  NF_CHECK(config.is_object(), source, ": a model config must be a JSON object");
  for (const std::string& item : overrides) {
    const size_t eq = item.find('=');
    NF_CHECK(eq != std::string::npos && eq > 0, "--set '", item, "': expected key=value (e.g. vocab_size=65)");
    const std::string key = item.substr(0, eq), text = item.substr(eq + 1);
    json value;
    try {
      value = json::parse(text);
    } catch (const json::exception&) {
      value = text;
    }
    config[key] = value;
  }
  return config;
}

// "dim 32 -> 64, dropout 0.0 -> 0.1": the keys in which two configs differ, the name aside.
std::string changed_keys(const json& from, const json& to) {
  auto describe = [](const json& config, const std::string& key) {
    return config.contains(key) ? util::json_excerpt(config.at(key)) : std::string("(absent)");
  };
  std::string out;
  for (const std::string& key : util::differing_keys(from, to, {"name"}))
    out += (out.empty() ? "" : ", ") + key + " " + describe(from, key) + " -> " + describe(to, key);
  return out;
}

}  // namespace

std::string model_config_with_overrides(const std::string& name_or_path, const std::vector<std::string>& overrides) {
  const std::string path = resolve_config_path(name_or_path);
  return with_overrides(util::parse_json(read_config_text(path), path + ": "), path, overrides).dump();
}

std::shared_ptr<DecoderLM> with_model_overrides(std::shared_ptr<DecoderLM> model,
                                                        const std::vector<std::string>& overrides,
                                                        const std::string& source, Generator& gen) {
  if (overrides.empty()) return model;
  const json before = json::parse(model_config_to_json(model->config()));
  const DecoderLMConfig changed =
      parse_model_config(with_overrides(before, source, overrides).dump(), source + " with --set");
  const std::string changes = changed_keys(before, json::parse(model_config_to_json(changed)));
  if (changes.empty()) return model;
  auto refuse = [&] {
    NF_FAIL("train --init-from ", source, ": --set would change its weights (", changes,
            "); fine-tuning can change only settings that keep every weight's name and shape (dropout, rope_theta, ...)");
  };
  if (count_parameters(changed) != model->num_parameters()) refuse();
  auto rebuilt = std::make_shared<DecoderLM>(changed, gen);
  try {
    rebuilt->load_state_dict(model->state_dict());
  } catch (const Error&) {
    refuse();
  }
  return rebuilt;
}


}  // namespace nf::models
