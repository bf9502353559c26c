#pragma once
// Reading Hugging Face tokenizer.json files: field access whose errors name the file and the
// field path, the bound on token ids, the added tokens; JSON writing helpers. Private to the
// tokenizer.json readers and writers (BPE: tokenizer_json.cpp, WordPiece: wordpiece_json.cpp).
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "nanoformer/core/error.h"
#include "nanoformer/tokenizer/added_vocabulary.h"
#include "nanoformer/tokenizer/bpe_tokenizer.h"
#include "nanoformer/tokenizer/wordpiece_tokenizer.h"
#include "util/json_input.h"

namespace nf::tokenizer::json_fields {

using nlohmann::json;
using util::json_excerpt;

// Ids index the decoding tables, so an id alone must never size them: every id must be below the
// number of vocabulary entries plus added tokens (real files use dense ids, so this only refuses
// ids that leave more gaps than the file has tokens).
struct IdLimit {
  uint64_t entries = 0, added = 0;

  static IdLimit of(const json& root) {
    IdLimit limit;
    const auto model = root.find("model");
    if (model != root.end() && model->is_object()) {
      const auto vocab = model->find("vocab");
      if (vocab != model->end() && vocab->is_object()) limit.entries = vocab->size();
    }
    const auto added = root.find("added_tokens");
    if (added != root.end() && added->is_array()) limit.added = added->size();
    return limit;
  }
  uint64_t bound() const { return std::min<uint64_t>(entries + added, uint64_t{1} << 31); }
  std::string describe() const {
    return "ids must be below " + std::to_string(bound()) + " (" + std::to_string(entries) +
           " vocabulary entries + " + std::to_string(added) + " added tokens)";
  }
};

// Field access that names the file and the field path in every error.
class Reader {
 public:
  explicit Reader(std::string_view source) : source_(source) {}

  [[noreturn]] void fail(const std::string& path, const std::string& problem) const {
    NF_FAIL(source_, ": ", path.empty() ? "" : path + ": ", problem);
  }

  const json* optional(const json& obj, const std::string& path, const char* key) const {
    if (!obj.is_object()) fail(path, "expected an object");
    auto it = obj.find(key);
    return it == obj.end() || it->is_null() ? nullptr : &*it;
  }
  const json& required(const json& obj, const std::string& path, const char* key) const {
    const json* v = optional(obj, path, key);
    if (!v) fail(join(path, key), "missing");
    return *v;
  }
  std::string string(const json& v, const std::string& path) const {
    if (!v.is_string()) fail(path, "expected a string, found " + std::string(v.type_name()));
    return v.get<std::string>();
  }
  bool boolean(const json& obj, const std::string& path, const char* key, bool fallback) const {
    const json* v = optional(obj, path, key);
    if (!v) return fallback;
    if (!v->is_boolean()) fail(join(path, key), "expected true or false, found " + std::string(v->type_name()));
    return v->get<bool>();
  }
  uint32_t id(const json& v, const std::string& path, const IdLimit& limit) const {
    if (!v.is_number_unsigned()) fail(path, "expected a token id (a non-negative integer), found " + json_excerpt(v));
    if (v.get<uint64_t>() >= limit.bound())
      fail(path, "id " + std::to_string(v.get<uint64_t>()) + " is out of range: " + limit.describe());
    return static_cast<uint32_t>(v.get<uint64_t>());
  }
  std::string type(const json& obj, const std::string& path) const {
    return string(required(obj, path, "type"), join(path, "type"));
  }

  static std::string join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }

 private:
  std::string source_;
};

// Fields that must be null (or absent) because nanoformer does not implement them.
inline void require_null(const Reader& r, const json& root, const char* key) {
  if (const json* v = r.optional(root, "", key)) {
    std::string what = v->is_object() && v->contains("type") && (*v)["type"].is_string()
                           ? "'" + (*v)["type"].get<std::string>() + "' "
                           : "";
    r.fail(key, what + "is not supported (only null)");
  }
}

inline std::vector<AddedToken> parse_added_tokens(const Reader& r, const json& root, const IdLimit& limit) {
  std::vector<AddedToken> out;
  const json* list = r.optional(root, "", "added_tokens");
  if (!list) return out;
  if (!list->is_array()) r.fail("added_tokens", "expected an array");
  for (size_t i = 0; i < list->size(); ++i) {
    const json& e = (*list)[i];
    const std::string path = "added_tokens[" + std::to_string(i) + "]";
    AddedToken t;
    t.id = r.id(r.required(e, path, "id"), path + ".id", limit);
    t.content = r.string(r.required(e, path, "content"), path + ".content");
    t.special = r.boolean(e, path, "special", false);
    t.single_word = r.boolean(e, path, "single_word", false);
    t.lstrip = r.boolean(e, path, "lstrip", false);
    t.rstrip = r.boolean(e, path, "rstrip", false);
    t.normalized = r.boolean(e, path, "normalized", !t.special);
    out.push_back(std::move(t));
  }
  return out;
}

// model.vocab, {token: id, ...}: the tokens by id (none at an id no token has), every id below
// `limit` and given once.
inline std::vector<std::optional<std::string>> parse_vocab(const Reader& r, const json& model, const IdLimit& limit) {
  const json& vocab = r.required(model, "model", "vocab");
  if (!vocab.is_object()) r.fail("model.vocab", "expected an object of token: id");
  std::vector<std::optional<std::string>> tokens;
  for (const auto& [token, value] : vocab.items()) {
    const uint32_t id = r.id(value, "model.vocab['" + util::shorten(token) + "']", limit);
    if (id >= tokens.size()) tokens.resize(size_t{id} + 1);
    if (tokens[id])
      r.fail("model.vocab", "id " + std::to_string(id) + " is given to both '" + *tokens[id] + "' and '" + token + "'");
    tokens[id] = token;
  }
  return tokens;
}

// A tokenizer.json's root read by parse(IdLimit::of(root)): the root must be an object, and
// nlohmann's exceptions on the way become errors naming the file.
template <class Parse>
auto parse_root(const json& root, const Reader& r, Parse&& parse) {
  if (!root.is_object()) r.fail("", "expected a JSON object at the top level");
  try {
    return parse(IdLimit::of(root));
  } catch (const json::exception& e) {
    r.fail("", e.what());
  }
}

// The tokenizer built from its parsed parts; what its constructor refuses (the added tokens,
// checked against the model there) named as the file's added_tokens.
template <class Tokenizer, class... Parts>
Tokenizer construct(const Reader& r, Parts&&... parts) {
  try {
    return Tokenizer(std::forward<Parts>(parts)...);
  } catch (const Error& e) {
    r.fail("added_tokens", e.what());
  }
}

// JSON writing helpers: strings escaped by nlohmann, structure written by hand so that the vocab
// keeps id order (and 50k entries need no ordered-map inserts).
inline std::string quote(std::string_view s) { return json(std::string(s)).dump(); }
inline const char* boolean(bool b) { return b ? "true" : "false"; }

// The "added_tokens" array of tokenizer.json.
inline std::string added_tokens_json(const std::vector<AddedToken>& added) {
  std::string out = "[";
  for (size_t i = 0; i < added.size(); ++i) {
    const AddedToken& t = added[i];
    out += i ? ",\n    " : "\n    ";
    out += "{\"id\": " + std::to_string(t.id) + ", \"content\": " + quote(t.content) +
           ", \"single_word\": " + boolean(t.single_word) + ", \"lstrip\": " + boolean(t.lstrip) +
           ", \"rstrip\": " + boolean(t.rstrip) + ", \"normalized\": " + boolean(t.normalized) +
           ", \"special\": " + boolean(t.special) + "}";
  }
  out += added.empty() ? "]" : "\n  ]";
  return out;
}

// The model's "vocab" object in id order, `spelling(id)` for each id the model has, indented as
// inside "model".
template <class Model, class Spelling>
std::string vocab_json(const Model& model, Spelling&& spelling) {
  std::string out = "{";
  bool first = true;
  for (TokenId id = 0; id < model.size(); ++id) {
    if (!model.contains(id)) continue;
    out += first ? "\n      " : ",\n      ";
    first = false;
    out += quote(spelling(id)) + ": " + std::to_string(id);
  }
  return out + "\n    }";
}

// Writes the text make_text() returns to path through a temporary file renamed into place.
template <class MakeText>
void write_json_file(const std::string& path, MakeText&& make_text) {
  std::string text;
  try {
    text = make_text();
  } catch (const json::exception& e) {
    NF_FAIL(path, ": cannot write the tokenizer (token contents must be valid UTF-8): ", e.what());
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    NF_CHECK(f, tmp, ": cannot open for writing");
    f.write(text.data(), static_cast<std::streamsize>(text.size()));
    f.close();
    NF_CHECK(f, tmp, ": write failed");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  NF_CHECK(!ec, path, ": cannot rename ", tmp, " into place: ", ec.message());
}

// The tokenizers of a parsed tokenizer.json (tokenizer_json.cpp, wordpiece_json.cpp).
BpeTokenizer bpe_from_root(const json& root, const Reader& r);
WordPieceTokenizer wordpiece_from_root(const json& root, const Reader& r);

}  // namespace nf::tokenizer::json_fields
