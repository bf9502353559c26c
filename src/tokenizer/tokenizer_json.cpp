#include "nanoformer/tokenizer/tokenizer_json.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "nanoformer/core/error.h"
#include "tokenizer_json_fields.h"
#include "util/json_input.h"

namespace nf::tokenizer {
namespace {

using json_fields::added_tokens_json;
using json_fields::boolean;
using json_fields::construct;
using json_fields::IdLimit;
using json_fields::parse_added_tokens;
using json_fields::quote;
using json_fields::parse_root;
using json_fields::parse_vocab;
using json_fields::Reader;
using json_fields::require_null;
using nlohmann::json;
using util::json_excerpt;

PreTokenizerOptions parse_byte_level(const Reader& r, const json& p, const std::string& path) {
  PreTokenizerOptions pre;
  const json& aps = r.required(p, path, "add_prefix_space");
  if (!aps.is_boolean()) r.fail(path + ".add_prefix_space", "expected true or false");
  pre.add_prefix_space = aps.get<bool>();
  pre.pattern = r.boolean(p, path, "use_regex", true) ? SplitPattern::kGpt2 : SplitPattern::kNone;
  return pre;
}

PreTokenizerOptions parse_pre_tokenizer(const Reader& r, const json& root) {
  const json* p = r.optional(root, "", "pre_tokenizer");
  if (!p) r.fail("pre_tokenizer", "null is not supported (nanoformer implements byte-level BPE: ByteLevel)");
  const std::string type = r.type(*p, "pre_tokenizer");
  if (type == "ByteLevel") return parse_byte_level(r, *p, "pre_tokenizer");
  if (type != "Sequence")
    r.fail("pre_tokenizer", "type '" + type + "' is not supported (ByteLevel or Sequence[Split, ByteLevel])");
  const json& items = r.required(*p, "pre_tokenizer", "pretokenizers");
  if (!items.is_array()) r.fail("pre_tokenizer.pretokenizers", "expected an array");
  if (items.size() == 1) {
    if (r.type(items[0], "pre_tokenizer.pretokenizers[0]") != "ByteLevel")
      r.fail("pre_tokenizer.pretokenizers[0]", "only ByteLevel is supported as the only element");
    return parse_byte_level(r, items[0], "pre_tokenizer.pretokenizers[0]");
  }
  if (items.size() != 2)
    r.fail("pre_tokenizer.pretokenizers",
           "only [Split, ByteLevel] is supported, found " + std::to_string(items.size()) + " elements");
  const std::string split_path = "pre_tokenizer.pretokenizers[0]", bl_path = "pre_tokenizer.pretokenizers[1]";
  const std::string split_type = r.type(items[0], split_path);
  if (split_type != "Split")
    r.fail(split_path, "type '" + split_type + "' is not supported (only Split then ByteLevel)");
  if (r.type(items[1], bl_path) != "ByteLevel")
    r.fail(bl_path, "type '" + r.type(items[1], bl_path) + "' is not supported (only Split then ByteLevel)");
  const json& pattern = r.required(items[0], split_path, "pattern");
  const json* regex = r.optional(pattern, split_path + ".pattern", "Regex");
  if (!regex) r.fail(split_path + ".pattern", "only a Regex pattern is supported, found " + json_excerpt(pattern));
  const std::string source = r.string(*regex, split_path + ".pattern.Regex");
  const std::optional<SplitPattern> known = pattern_from_regex(source);
  if (!known)
    r.fail(split_path + ".pattern.Regex",
           "the regex " + json_excerpt(source, 200) + " is not supported (only the GPT-2, GPT-4 and LLaMA-3 split patterns)");
  const std::string behavior = r.string(r.required(items[0], split_path, "behavior"), split_path + ".behavior");
  if (behavior != "Isolated") r.fail(split_path + ".behavior", "'" + behavior + "' is not supported (only Isolated)");
  if (r.boolean(items[0], split_path, "invert", false)) r.fail(split_path + ".invert", "true is not supported");
  PreTokenizerOptions pre = parse_byte_level(r, items[1], bl_path);
  if (pre.pattern != SplitPattern::kNone) r.fail(bl_path + ".use_regex", "true after a Split is not supported");
  if (pre.add_prefix_space) r.fail(bl_path + ".add_prefix_space", "true after a Split is not supported");
  pre.pattern = *known;
  return pre;
}

BpeModel parse_model(const Reader& r, const json& root, const IdLimit& limit) {
  const json& m = r.required(root, "", "model");
  if (const json* t = r.optional(m, "model", "type"))
    if (r.string(*t, "model.type") != "BPE")
      r.fail("model.type", "'" + t->get<std::string>() + "' is not supported (only BPE)");
  if (r.optional(m, "model", "dropout")) r.fail("model.dropout", "BPE dropout is not supported (only null)");
  if (r.boolean(m, "model", "byte_fallback", false)) r.fail("model.byte_fallback", "true is not supported");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (const json* v = r.optional(m, "model", key))
      if (!r.string(*v, Reader::join("model", key)).empty())
        r.fail(Reader::join("model", key), "a non-empty value is not supported");

  BpeOptions options;
  options.ignore_merges = r.boolean(m, "model", "ignore_merges", false);
  options.fuse_unk = r.boolean(m, "model", "fuse_unk", false);
  if (const json* unk = r.optional(m, "model", "unk_token")) options.unk_token = r.string(*unk, "model.unk_token");

  std::vector<std::optional<std::string>> tokens = parse_vocab(r, m, limit);

  const json& merges_json = r.required(m, "model", "merges");
  if (!merges_json.is_array()) r.fail("model.merges", "expected an array");
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(merges_json.size());
  for (size_t i = 0; i < merges_json.size(); ++i) {
    const json& e = merges_json[i];
    const std::string path = "model.merges[" + std::to_string(i) + "]";
    if (e.is_string()) {
      const std::string s = e.get<std::string>();
      const size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
        r.fail(path, "expected two tokens separated by one space, found " + json_excerpt(s));
      merges.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else if (e.is_array() && e.size() == 2) {
      merges.emplace_back(r.string(e[0], path + "[0]"), r.string(e[1], path + "[1]"));
    } else {
      r.fail(path, "expected \"a b\" or [\"a\", \"b\"], found " + json_excerpt(e));
    }
  }
  try {
    return BpeModel(std::move(tokens), merges, options);
  } catch (const Error& e) {
    r.fail("model", e.what());
  }
}

void check_pipeline(const Reader& r, const json& root) {
  require_null(r, root, "truncation");
  require_null(r, root, "padding");
  if (const json* n = r.optional(root, "", "normalizer")) {
    const std::string type = r.type(*n, "normalizer");
    const json* list = type == "Sequence" ? r.optional(*n, "normalizer", "normalizers") : nullptr;
    if (!(list && list->is_array() && list->empty()))
      r.fail("normalizer", "type '" + type + "' is not supported (only null)");
  }
  if (const json* p = r.optional(root, "", "post_processor")) {
    const std::string type = r.type(*p, "post_processor");
    if (type != "ByteLevel") r.fail("post_processor", "type '" + type + "' is not supported (only null or ByteLevel)");
  }
  const json* d = r.optional(root, "", "decoder");
  if (!d) r.fail("decoder", "null is not supported (byte-level BPE needs the ByteLevel decoder)");
  const std::string type = r.type(*d, "decoder");
  if (type != "ByteLevel") r.fail("decoder", "type '" + type + "' is not supported (only ByteLevel)");
}

std::string pre_tokenizer_json(const PreTokenizerOptions& pre) {
  auto byte_level = [](bool aps, bool use_regex) {
    return std::string("{\"type\": \"ByteLevel\", \"add_prefix_space\": ") + boolean(aps) +
           ", \"trim_offsets\": true, \"use_regex\": " + boolean(use_regex) + "}";
  };
  if (pre.pattern != SplitPattern::kGpt4 && pre.pattern != SplitPattern::kQwen2)
    return byte_level(pre.add_prefix_space, pre.pattern == SplitPattern::kGpt2);
  NF_CHECK(!pre.add_prefix_space, "tokenizer.json cannot express the ", pattern_name(pre.pattern), " pattern with add_prefix_space");
  return "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"Regex\": " +
         quote(pattern_regex(pre.pattern)) + "}, \"behavior\": \"Isolated\", \"invert\": false}, " +
         byte_level(false, false) + "]}";
}

}  // namespace

namespace json_fields {

BpeTokenizer bpe_from_root(const json& root, const Reader& r) {
  return parse_root(root, r, [&](const IdLimit& limit) {
    check_pipeline(r, root);
    const PreTokenizerOptions pre = parse_pre_tokenizer(r, root);
    BpeModel model = parse_model(r, root, limit);
    return construct<BpeTokenizer>(r, std::move(model), parse_added_tokens(r, root, limit), pre);
  });
}

}  // namespace json_fields

BpeTokenizer tokenizer_from_json(std::string_view json_text, std::string_view source) {
  return json_fields::bpe_from_root(util::parse_json(json_text, std::string(source) + ": "), Reader(source));
}

BpeTokenizer load_tokenizer_json(const std::string& path) { return tokenizer_from_json(read_file(path), path); }

std::unique_ptr<Tokenizer> any_tokenizer_from_json(std::string_view json_text, std::string_view source) {
  const json root = util::parse_json(json_text, std::string(source) + ": ");
  const auto model = root.is_object() ? root.find("model") : root.end();
  const bool wordpiece = model != root.end() && model->is_object() && model->contains("type") &&
                         (*model)["type"] == "WordPiece";
  const Reader r(source);
  if (wordpiece) return std::make_unique<WordPieceTokenizer>(json_fields::wordpiece_from_root(root, r));
  return std::make_unique<BpeTokenizer>(json_fields::bpe_from_root(root, r));
}

std::string tokenizer_to_json(const BpeTokenizer& tokenizer) {
  const BpeModel& model = tokenizer.model();
  std::string out = "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n  \"added_tokens\": ";
  out += added_tokens_json(tokenizer.added().tokens()) + ",\n";
  out += "  \"normalizer\": null,\n  \"pre_tokenizer\": " + pre_tokenizer_json(tokenizer.pre_tokenizer()) + ",\n";
  out += "  \"post_processor\": null,\n";
  out +=
      "  \"decoder\": {\"type\": \"ByteLevel\", \"add_prefix_space\": true, \"trim_offsets\": true, \"use_regex\": "
      "true},\n";
  const BpeOptions& o = model.options();
  out += "  \"model\": {\n    \"type\": \"BPE\",\n    \"dropout\": null,\n    \"unk_token\": ";
  out += o.unk_token ? quote(*o.unk_token) : "null";
  out += ",\n    \"continuing_subword_prefix\": null,\n    \"end_of_word_suffix\": null,\n    \"fuse_unk\": ";
  out += std::string(boolean(o.fuse_unk)) +
         ",\n    \"byte_fallback\": false,\n    \"ignore_merges\": " + boolean(o.ignore_merges) + ",\n";
  out += "    \"vocab\": " + json_fields::vocab_json(model, [&](TokenId id) { return model.spelling(id); });
  out += ",\n    \"merges\": [";
  const auto merges = model.merges();
  for (size_t i = 0; i < merges.size(); ++i) {
    const std::string& a = model.spelling(merges[i].first);
    const std::string& b = model.spelling(merges[i].second);
    out += i ? ",\n      " : "\n      ";
    // The legacy "a b" form is read by every tokenizers version; tokens with a space need a pair.
    if (a.find(' ') == std::string::npos && b.find(' ') == std::string::npos)
      out += quote(a + " " + b);
    else
      out.append("[").append(quote(a)).append(", ").append(quote(b)).append("]");
  }
  out += merges.empty() ? "]\n  }\n}\n" : "\n    ]\n  }\n}\n";
  return out;
}

void save_tokenizer_json(const BpeTokenizer& tokenizer, const std::string& path) {
  json_fields::write_json_file(path, [&] { return tokenizer_to_json(tokenizer); });
}

}  // namespace nf::tokenizer
