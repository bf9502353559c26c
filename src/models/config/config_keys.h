#pragma once
// Reading and writing a model config's JSON keys, shared by every architecture's config parser:
// ObjectReader reads typed keys and rejects, in finish(), every key nobody asked for (naming it and
// the nearest known spelling); ObjectWriter walks the same key list to write the JSON back, so that
// one visit_keys function per config serves both. Internal to src/: the config parsers here and the
// optimizer config (optim/optimizer_set.cpp).
#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "nanoformer/core/error.h"
#include "util/json_input.h"

namespace nf::models::config_keys {

using nlohmann::json;

template <class E, size_t N>
std::string name_of(const std::array<std::pair<E, const char*>, N>& table, E value) {
  for (const auto& [v, name] : table)
    if (v == value) return name;
  NF_FAIL("model config: an enum value without a name");
}

// Levenshtein distance, for "did you mean" on a misspelled key.
inline size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      diagonal = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, substitute});
    }
  }
  return row[b.size()];
}

// Reads the keys of one JSON object into typed fields, remembering which keys were read, so that
// finish() can reject every key nobody asked for.
class ObjectReader {
 public:
  ObjectReader(const json& object, std::string where) : object_(object), where_(std::move(where)) {
    NF_CHECK(object_.is_object(), where_, ": expected a JSON object, got ", object_.type_name());
  }

  template <class T>
  void value(const char* key, T& field) {
    known_.insert(key);
    auto it = object_.find(key);
    if (it == object_.end()) return;
    try {
      if constexpr (std::is_same_v<T, bool>) {
        NF_CHECK(it->is_boolean(), "expected true or false");
      } else if constexpr (std::is_integral_v<T>) {
        NF_CHECK(it->is_number_integer(), "expected an integer");
      } else if constexpr (std::is_floating_point_v<T>) {
        NF_CHECK(it->is_number(), "expected a number");
      } else {
        NF_CHECK(it->is_string(), "expected a string");
      }
      field = it->get<T>();
    } catch (const Error& e) {
      NF_FAIL(where_, ": key '", key, "' has value ", util::json_excerpt(*it), ": ", e.what());
    }
  }

  // A string key parsed into an enum by `parse` (which throws naming the accepted values).
  template <class E, class Parse, class Name>
  void choice(const char* key, E& field, Parse parse, Name) {
    std::string text;
    value(key, text);
    if (!object_.contains(key)) return;
    try {
      field = parse(text);
    } catch (const Error& e) {
      NF_FAIL(where_, ": key '", key, "' has value \"", text, "\": ", e.what());
    }
  }

  const json* child(const char* key) {
    known_.insert(key);
    auto it = object_.find(key);
    return it == object_.end() || it->is_null() ? nullptr : &*it;
  }

  void finish() const {
    for (const auto& [key, value] : object_.items()) {
      if (known_.count(key)) continue;
      const std::string* nearest = nullptr;
      size_t best = 3;  // suggest only close spellings
      for (const auto& k : known_)
        if (size_t d = edit_distance(key, k); d < best) best = d, nearest = &k;
      NF_FAIL(where_, ": unknown key '", key, "'", nearest ? " (did you mean '" + *nearest + "'?)" : std::string());
    }
  }

 private:
  const json& object_;
  std::string where_;
  std::set<std::string> known_;
};

template <class E, size_t N>
auto table_parser(const std::array<std::pair<E, const char*>, N>& table) {
  return [&table](const std::string& text) {
    std::string accepted;
    for (const auto& [v, name] : table) {
      if (text == name) return v;
      accepted += (accepted.empty() ? "" : ", ") + std::string(name);
    }
    NF_FAIL("expected one of ", accepted);
  };
}

template <class E, size_t N>
auto table_namer(const std::array<std::pair<E, const char*>, N>& table) {
  return [&table](E value) { return name_of(table, value); };
}

// Writes the keys a visit walks into a JSON object.
struct ObjectWriter {
  json object = json::object();
  template <class T>
  void value(const char* key, const T& field) {
    object[key] = field;
  }
  template <class E, class Parse, class Name>
  void choice(const char* key, const E& field, Parse, Name name) {
    object[key] = std::string(name(field));
  }
};

// Every key of the config, once: parsing and writing both walk these lists (moe is nested).
inline void check(bool ok, const std::string& source, const char* key, const auto& value, const char* requirement) {
  NF_CHECK(ok, source, ": key '", key, "' has value ", value, ": ", requirement);
}


// A config of an architecture that requires its "architecture" key (Config::kArchitecture):
// parsed through visit(reader, config), which names every key once, with unknown keys refused.
template <class Config, class Visit>
Config parse_config(const std::string& json_text, const std::string& source, Visit visit) {
  const json root = util::parse_json(json_text, source + ": ");
  Config c;
  ObjectReader r(root, source);
  std::string architecture;
  r.value("architecture", architecture);
  check(architecture == Config::kArchitecture, source, "architecture", "\"" + architecture + "\"",
        ("must be \"" + std::string(Config::kArchitecture) + "\" for this config").c_str());
  visit(r, c);
  r.finish();
  return c;
}

// The JSON of such a config, with its "architecture" key: parse_config gives it back.
template <class Config, class Visit>
std::string config_to_json(const Config& config, Visit visit) {
  Config c = config;
  ObjectWriter w;
  w.object["architecture"] = Config::kArchitecture;
  visit(w, c);
  return w.object.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);  // names need not be UTF-8
}

// The largest sizes the encoder, encoder-decoder and ViT configs take: far beyond any model, and
// small enough that every parameter count formed from them fits int64_t (vocab x dim <= 2^44,
// layers x 6 dim x hidden <= 2^55, channels x patch^2 x dim <= 2^56).
constexpr int64_t kMaxWidth = int64_t{1} << 20;    // dim, mlp_hidden
constexpr int64_t kMaxEntries = int64_t{1} << 24;  // vocabularies, positions, classes, token types
constexpr int64_t kMaxLayers = int64_t{1} << 12;
constexpr int64_t kMaxImageSide = int64_t{1} << 14;
constexpr int64_t kMaxChannels = int64_t{1} << 8;

inline void check_at_most(int64_t value, int64_t limit, const std::string& source, const char* key) {
  check(value <= limit, source, key, value, ("is beyond any model this engine builds (at most " + std::to_string(limit) + ")").c_str());
}

}  // namespace nf::models::config_keys
