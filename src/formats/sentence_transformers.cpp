// sentence-transformers folders' modules.json, Pooling config and max_seq_length (formats/sentence_transformers.h).
#include "nanoformer/formats/sentence_transformers.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "folder_io.h"
#include "util/json_input.h"

namespace nf::formats {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

json parse_object(std::string_view text, const std::string& where) {
  const json j = util::parse_json(text, where + ": ");
  NF_CHECK(j.is_object(), where, ": not a JSON object");
  return j;
}

// The module's class name, whatever package path sentence-transformers' version wrote before it.
std::string module_class(const std::string& type) {
  const size_t dot = type.rfind('.');
  return dot == std::string::npos ? type : type.substr(dot + 1);
}

// sentence-transformers' pooling mode names -> ours; the ones we do not compute are refused.
models::Pooling pooling_mode(const std::string& mode, const std::string& where) {
  if (mode == "mean") return models::Pooling::mean;
  if (mode == "cls") return models::Pooling::cls;
  if (mode == "max") return models::Pooling::max;
  if (mode == "lasttoken") return models::Pooling::last;
  throw Error(where + ": pooling mode '" + util::shorten(mode) + "' is not supported (mean, cls, max and lasttoken are)");
}

}  // namespace

SentenceTransformersModules parse_sentence_transformers_modules(std::string_view text, const std::string& where) {
  const json modules = util::parse_json(text, where + ": ");
  NF_CHECK(modules.is_array() && !modules.empty(), where, ": must be a non-empty JSON array of modules");
  SentenceTransformersModules out;
  bool pooled = false;
  for (size_t i = 0; i < modules.size(); ++i) {
    const json& m = modules[i];
    const std::string at = where + " [" + std::to_string(i) + "]";
    NF_CHECK(m.is_object() && m.contains("type") && m["type"].is_string(), at, ": a module needs a string \"type\"");
    const std::string type = module_class(m["type"].get<std::string>());
    const auto path = m.find("path");
    NF_CHECK(path == m.end() || path->is_string(), at, ": \"path\" must be a string, got ", util::json_excerpt(*path));
    if (type == "Transformer") {
      NF_CHECK(i == 0, at, ": the Transformer module must come first");
    } else if (type == "Pooling") {
      NF_CHECK(i == 1, at, ": the Pooling module must follow the Transformer");
      out.pooling_path = path == m.end() ? std::string() : path->get<std::string>();
      pooled = true;
    } else if (type == "Normalize") {
      NF_CHECK(pooled, at, ": Normalize must follow Pooling");
      out.normalize = true;
    } else {
      throw Error(at + ": module type '" + util::shorten(m["type"].get<std::string>()) +
                  "' is not supported (Transformer, Pooling and Normalize are)");
    }
  }
  NF_CHECK(pooled, where, ": no Pooling module");
  return out;
}

models::Pooling parse_sentence_transformers_pooling(std::string_view text, const std::string& where) {
  const json j = parse_object(text, where);
  if (const auto it = j.find("pooling_mode"); it != j.end()) {
    if (it->is_array()) {
      NF_CHECK(it->size() == 1 && (*it)[0].is_string(), where, ": pooling_mode ", util::json_excerpt(*it),
               ": one mode is supported, not several concatenated");
      return pooling_mode((*it)[0].get<std::string>(), where);
    }
    NF_CHECK(it->is_string(), where, ": pooling_mode must be a string, got ", util::json_excerpt(*it));
    return pooling_mode(it->get<std::string>(), where);
  }
  // older files: one boolean per mode; none set means mean, as sentence-transformers reads them
  static const std::pair<const char*, const char*> kLegacy[] = {
      {"pooling_mode_cls_token", "cls"},   {"pooling_mode_max_tokens", "max"},
      {"pooling_mode_mean_tokens", "mean"}, {"pooling_mode_mean_sqrt_len_tokens", "mean_sqrt_len_tokens"},
      {"pooling_mode_weightedmean_tokens", "weightedmean"}, {"pooling_mode_lasttoken", "lasttoken"}};
  std::vector<std::string> on;
  for (const auto& [key, mode] : kLegacy) {
    const auto it = j.find(key);
    if (it == j.end()) continue;
    NF_CHECK(it->is_boolean(), where, ": ", key, " must be true or false, got ", util::json_excerpt(*it));
    if (it->get<bool>()) on.push_back(mode);
  }
  NF_CHECK(on.size() <= 1, where, ": several pooling modes at once (", on[0], ", ", on[1], ") are not supported");
  return on.empty() ? models::Pooling::mean : pooling_mode(on[0], where);
}

int64_t parse_sentence_bert_config(std::string_view text, const std::string& where) {
  const json j = parse_object(text, where);
  int64_t max_tokens = 0;
  if (const auto it = j.find("max_seq_length"); it != j.end() && !it->is_null()) {
    NF_CHECK(it->is_number_integer() && it->get<int64_t>() > 0, where, ": max_seq_length must be a positive integer, got ",
             util::json_excerpt(*it));
    max_tokens = it->get<int64_t>();
  }
  const auto lower = j.find("do_lower_case");
  NF_CHECK(lower == j.end() || lower->is_null() || *lower == false, where,
           ": do_lower_case true is not supported (the tokenizer's own normalizer is)");
  return max_tokens;
}

std::optional<models::SentenceEmbedding> read_sentence_transformers(const std::string& dir) {
  const fs::path modules_path = fs::path(dir) / "modules.json";
  if (!fs::exists(modules_path)) return std::nullopt;
  const SentenceTransformersModules modules =
      parse_sentence_transformers_modules(read_text(modules_path), modules_path.string());
  const fs::path pooling_path = fs::path(dir) / modules.pooling_path / "config.json";
  models::SentenceEmbedding out{.pooling = parse_sentence_transformers_pooling(read_text(pooling_path), pooling_path.string()),
                        .normalize = modules.normalize,
                        .max_tokens = 0};
  const fs::path bert_config = fs::path(dir) / "sentence_bert_config.json";
  if (fs::exists(bert_config)) out.max_tokens = parse_sentence_bert_config(read_text(bert_config), bert_config.string());
  return out;
}

}  // namespace nf::formats
