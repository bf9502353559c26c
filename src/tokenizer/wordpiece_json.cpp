// tokenizer.json for WordPiece (BERT) tokenizers: reading and writing the fields of
// wordpiece_tokenizer.h; anything else is refused with an error naming the field.
#include "nanoformer/tokenizer/tokenizer_json.h"
#include "tokenizer_json_fields.h"

namespace nf::tokenizer {
namespace json_fields {
namespace {

// A field that nanoformer keeps but does not apply: null or an object, kept as JSON text.
std::string kept_object(const Reader& r, const json& root, const char* key) {
  const json* v = r.optional(root, "", key);
  if (!v) return "null";
  if (!v->is_object()) r.fail(key, "expected null or an object, found " + json_excerpt(*v));
  return v->dump();
}

std::optional<BertNormalizerOptions> parse_normalizer(const Reader& r, const json& root) {
  const json* n = r.optional(root, "", "normalizer");
  if (!n) return std::nullopt;
  const std::string type = r.type(*n, "normalizer");
  if (type != "BertNormalizer")
    r.fail("normalizer", "type '" + type + "' is not supported (only BertNormalizer or null with WordPiece)");
  BertNormalizerOptions o;
  o.clean_text = r.boolean(*n, "normalizer", "clean_text", true);
  o.handle_chinese_chars = r.boolean(*n, "normalizer", "handle_chinese_chars", true);
  o.lowercase = r.boolean(*n, "normalizer", "lowercase", true);
  if (r.optional(*n, "normalizer", "strip_accents")) o.strip_accents = r.boolean(*n, "normalizer", "strip_accents", false);
  return o;
}

void check_pre_tokenizer(const Reader& r, const json& root) {
  const json* p = r.optional(root, "", "pre_tokenizer");
  if (!p) r.fail("pre_tokenizer", "null is not supported (WordPiece needs BertPreTokenizer)");
  const std::string type = r.type(*p, "pre_tokenizer");
  if (type != "BertPreTokenizer")
    r.fail("pre_tokenizer", "type '" + type + "' is not supported (only BertPreTokenizer with WordPiece)");
}

WordPieceModel parse_model(const Reader& r, const json& root, const IdLimit& limit) {
  const json& m = r.required(root, "", "model");
  WordPieceOptions options;
  if (const json* v = r.optional(m, "model", "unk_token")) options.unk_token = r.string(*v, "model.unk_token");
  if (const json* v = r.optional(m, "model", "continuing_subword_prefix"))
    options.continuing_subword_prefix = r.string(*v, "model.continuing_subword_prefix");
  if (const json* v = r.optional(m, "model", "max_input_chars_per_word")) {
    if (!v->is_number_unsigned())
      r.fail("model.max_input_chars_per_word", "expected a non-negative integer, found " + json_excerpt(*v));
    options.max_input_chars_per_word = v->get<size_t>();
  }
  for (const auto& [key, value] : m.items())
    if (key != "type" && key != "vocab" && key != "unk_token" && key != "continuing_subword_prefix" &&
        key != "max_input_chars_per_word")
      r.fail("model." + util::shorten(key), "is not a WordPiece field nanoformer knows");
  std::vector<std::optional<std::string>> tokens = parse_vocab(r, m, limit);
  try {
    return WordPieceModel(std::move(tokens), std::move(options));
  } catch (const Error& e) {
    r.fail("model", e.what());
  }
}

// The id of a special token named by the post-processor: an added token or a vocabulary entry.
TokenId token_id_of(const Reader& r, const std::string& path, const std::string& token, const WordPieceModel& model,
                    const std::vector<AddedToken>& added) {
  for (const AddedToken& t : added)
    if (t.content == token) return t.id;
  if (auto id = model.token_to_id(token)) return *id;
  r.fail(path, "the token '" + token + "' is not in the vocabulary");
}

// TemplateProcessing's single template: special tokens, one $A, special tokens.
void parse_template(const Reader& r, const json& p, WordPieceConfig& config) {
  const std::string path = "post_processor.single";
  const json& single = r.required(p, "post_processor", "single");
  if (!single.is_array()) r.fail(path, "expected an array");
  const json& specials = r.required(p, "post_processor", "special_tokens");
  bool seen_sequence = false;
  for (size_t i = 0; i < single.size(); ++i) {
    const std::string item = path + "[" + std::to_string(i) + "]";
    if (const json* seq = r.optional(single[i], item, "Sequence")) {
      const std::string id = r.string(r.required(*seq, item + ".Sequence", "id"), item + ".Sequence.id");
      if (id != "A") r.fail(item + ".Sequence.id", "'" + id + "' is not supported in the single template (only A)");
      if (seen_sequence) r.fail(item, "a second $A is not supported");
      seen_sequence = true;
      continue;
    }
    const json* special = r.optional(single[i], item, "SpecialToken");
    if (!special) r.fail(item, "expected a Sequence or a SpecialToken, found " + json_excerpt(single[i]));
    const std::string name = r.string(r.required(*special, item + ".SpecialToken", "id"), item + ".SpecialToken.id");
    const json* entry = r.optional(specials, "post_processor.special_tokens", name.c_str());
    if (!entry) r.fail("post_processor.special_tokens", "'" + name + "' is missing");
    const std::string entry_path = "post_processor.special_tokens['" + util::shorten(name) + "']";
    const json& ids = r.required(*entry, entry_path, "ids");
    if (!ids.is_array()) r.fail(entry_path + ".ids", "expected an array of token ids");
    for (const json& id : ids) {
      if (!id.is_number_unsigned() || id.get<uint64_t>() > 0xFFFFFFFFu)
        r.fail(entry_path + ".ids", "expected token ids, found " + json_excerpt(id));
      (seen_sequence ? config.suffix_ids : config.prefix_ids).push_back(static_cast<TokenId>(id.get<uint64_t>()));
    }
  }
  if (!seen_sequence) r.fail(path, "has no $A sequence");
}

void parse_post_processor(const Reader& r, const json& root, const WordPieceModel& model,
                          const std::vector<AddedToken>& added, WordPieceConfig& config) {
  const json* p = r.optional(root, "", "post_processor");
  if (!p) return;
  const std::string type = r.type(*p, "post_processor");
  if (type == "TemplateProcessing") {
    parse_template(r, *p, config);
  } else if (type == "BertProcessing") {
    // "cls": ["[CLS]", 101], "sep": ["[SEP]", 102]; the token's id in the vocabulary wins, as in HF
    for (const char* key : {"cls", "sep"}) {
      const std::string path = std::string("post_processor.") + key;
      const json& pair = r.required(*p, "post_processor", key);
      if (!pair.is_array() || pair.size() != 2) r.fail(path, "expected [token, id], found " + json_excerpt(pair));
      const TokenId id = token_id_of(r, path, r.string(pair[0], path + "[0]"), model, added);
      (key[0] == 'c' ? config.prefix_ids : config.suffix_ids).push_back(id);
    }
  } else {
    r.fail("post_processor",
           "type '" + type + "' is not supported (only TemplateProcessing, BertProcessing or null with WordPiece)");
  }
  config.post_processor_json = p->dump();
}

void parse_decoder(const Reader& r, const json& root, WordPieceConfig& config) {
  const json* d = r.optional(root, "", "decoder");
  if (!d) r.fail("decoder", "null is not supported (WordPiece needs the WordPiece decoder)");
  const std::string type = r.type(*d, "decoder");
  if (type != "WordPiece") r.fail("decoder", "type '" + type + "' is not supported (only WordPiece with WordPiece)");
  if (const json* v = r.optional(*d, "decoder", "prefix")) config.decoder_prefix = r.string(*v, "decoder.prefix");
  config.decoder_cleanup = r.boolean(*d, "decoder", "cleanup", true);
}

}  // namespace

WordPieceTokenizer wordpiece_from_root(const json& root, const Reader& r) {
  return parse_root(root, r, [&](const IdLimit& limit) {
    WordPieceConfig config;
    config.truncation_json = kept_object(r, root, "truncation");
    config.padding_json = kept_object(r, root, "padding");
    config.normalizer = parse_normalizer(r, root);
    check_pre_tokenizer(r, root);
    parse_decoder(r, root, config);
    WordPieceModel model = parse_model(r, root, limit);
    std::vector<AddedToken> added = parse_added_tokens(r, root, limit);
    parse_post_processor(r, root, model, added, config);
    return construct<WordPieceTokenizer>(r, std::move(model), std::move(added), std::move(config));
  });
}

}  // namespace json_fields

WordPieceTokenizer wordpiece_tokenizer_from_json(std::string_view json_text, std::string_view source) {
  const json_fields::Reader r(source);
  const nlohmann::json root = util::parse_json(json_text, std::string(source) + ": ");
  if (!root.is_object()) r.fail("", "expected a JSON object at the top level");
  const auto model = root.find("model");
  if (model == root.end() || !model->is_object() || !model->contains("type") || (*model)["type"] != "WordPiece")
    r.fail("model.type", "expected 'WordPiece'");
  return json_fields::wordpiece_from_root(root, r);
}

std::string tokenizer_to_json(const WordPieceTokenizer& tokenizer) {
  using json_fields::boolean;
  using json_fields::quote;
  const WordPieceConfig& c = tokenizer.config();
  std::string out = "{\n  \"version\": \"1.0\",\n  \"truncation\": " + c.truncation_json + ",\n  \"padding\": " +
                    c.padding_json + ",\n  \"added_tokens\": ";
  out += json_fields::added_tokens_json(tokenizer.added().tokens()) + ",\n";
  out += "  \"normalizer\": ";
  if (const auto& n = c.normalizer) {
    out += std::string("{\"type\": \"BertNormalizer\", \"clean_text\": ") + boolean(n->clean_text) +
           ", \"handle_chinese_chars\": " + boolean(n->handle_chinese_chars) + ", \"strip_accents\": " +
           (n->strip_accents ? boolean(*n->strip_accents) : "null") + ", \"lowercase\": " + boolean(n->lowercase) + "}";
  } else {
    out += "null";
  }
  out += ",\n  \"pre_tokenizer\": {\"type\": \"BertPreTokenizer\"},\n";
  out += "  \"post_processor\": " + c.post_processor_json + ",\n";
  out += "  \"decoder\": {\"type\": \"WordPiece\", \"prefix\": " + quote(c.decoder_prefix) +
         ", \"cleanup\": " + boolean(c.decoder_cleanup) + "},\n";
  const WordPieceModel& model = tokenizer.model();
  const WordPieceOptions& o = model.options();
  out += "  \"model\": {\n    \"type\": \"WordPiece\",\n    \"unk_token\": " + quote(o.unk_token) +
         ",\n    \"continuing_subword_prefix\": " + quote(o.continuing_subword_prefix) +
         ",\n    \"max_input_chars_per_word\": " + std::to_string(o.max_input_chars_per_word) + ",\n    \"vocab\": ";
  out += json_fields::vocab_json(model, [&](TokenId id) { return model.token(id); }) + "\n  }\n}\n";
  return out;
}

void save_tokenizer_json(const WordPieceTokenizer& tokenizer, const std::string& path) {
  json_fields::write_json_file(path, [&] { return tokenizer_to_json(tokenizer); });
}

}  // namespace nf::tokenizer
