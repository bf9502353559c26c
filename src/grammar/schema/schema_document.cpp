// Drafts and references of a JSON Schema document (schema/schema_document.h).
#include "grammar/schema/schema_document.h"

#include <set>
#include <vector>

#include "nanoformer/core/error.h"

namespace nf::grammar {
namespace {

constexpr int kMaxIndexDepth = 256;

// Keywords that assert something, with the first draft that has them and the last (JSON Schema's
// validation vocabularies, json-schema.org/specification-links, as the `jsonschema` package
// implements them).
struct KeywordDrafts {
  const char* name;
  Draft first, last;
};
constexpr KeywordDrafts kAssertions[] = {
    {"type", Draft::draft4, Draft::draft2020},          {"enum", Draft::draft4, Draft::draft2020},
    {"const", Draft::draft6, Draft::draft2020},         {"$ref", Draft::draft4, Draft::draft2020},
    {"allOf", Draft::draft4, Draft::draft2020},         {"anyOf", Draft::draft4, Draft::draft2020},
    {"oneOf", Draft::draft4, Draft::draft2020},         {"not", Draft::draft4, Draft::draft2020},
    {"if", Draft::draft7, Draft::draft2020},            {"minimum", Draft::draft4, Draft::draft2020},
    {"maximum", Draft::draft4, Draft::draft2020},       {"exclusiveMinimum", Draft::draft4, Draft::draft2020},
    {"exclusiveMaximum", Draft::draft4, Draft::draft2020}, {"multipleOf", Draft::draft4, Draft::draft2020},
    {"minLength", Draft::draft4, Draft::draft2020},     {"maxLength", Draft::draft4, Draft::draft2020},
    {"pattern", Draft::draft4, Draft::draft2020},       {"format", Draft::draft4, Draft::draft2020},
    {"items", Draft::draft4, Draft::draft2020},         {"additionalItems", Draft::draft4, Draft::draft2019},
    {"prefixItems", Draft::draft2020, Draft::draft2020}, {"contains", Draft::draft6, Draft::draft2020},
    {"minContains", Draft::draft2019, Draft::draft2020}, {"maxContains", Draft::draft2019, Draft::draft2020},
    {"minItems", Draft::draft4, Draft::draft2020},      {"maxItems", Draft::draft4, Draft::draft2020},
    {"uniqueItems", Draft::draft4, Draft::draft2020},   {"unevaluatedItems", Draft::draft2019, Draft::draft2020},
    {"properties", Draft::draft4, Draft::draft2020},    {"patternProperties", Draft::draft4, Draft::draft2020},
    {"additionalProperties", Draft::draft4, Draft::draft2020}, {"propertyNames", Draft::draft6, Draft::draft2020},
    {"required", Draft::draft4, Draft::draft2020},      {"minProperties", Draft::draft4, Draft::draft2020},
    {"maxProperties", Draft::draft4, Draft::draft2020}, {"dependencies", Draft::draft4, Draft::draft7},
    {"dependentRequired", Draft::draft2019, Draft::draft2020}, {"dependentSchemas", Draft::draft2019, Draft::draft2020},
    {"unevaluatedProperties", Draft::draft2019, Draft::draft2020},
};

Draft draft_of(const nlohmann::ordered_json& root) {
  if (!root.is_object() || !root.contains("$schema") || !root["$schema"].is_string()) return Draft::draft2020;
  const std::string s = root["$schema"].get<std::string>();
  if (s.find("draft-04") != std::string::npos || s.find("draft-03") != std::string::npos) return Draft::draft4;
  if (s.find("draft-06") != std::string::npos) return Draft::draft6;
  if (s.find("draft-07") != std::string::npos) return Draft::draft7;
  if (s.find("2019-09") != std::string::npos) return Draft::draft2019;
  return Draft::draft2020;
}

// "a~1b%25" -> "a/b%": a JSON pointer token (RFC 6901) from a URI fragment (RFC 3986 %-escapes).
std::string pointer_token(std::string_view token) {
  std::string decoded;
  for (size_t i = 0; i < token.size(); ++i) {
    if (token[i] == '%' && i + 2 < token.size() && std::isxdigit(static_cast<unsigned char>(token[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(token[i + 2]))) {
      decoded += static_cast<char>(std::stoi(std::string(token.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      decoded += token[i];
    }
  }
  std::string out;
  for (size_t i = 0; i < decoded.size(); ++i) {
    if (decoded[i] == '~' && i + 1 < decoded.size() && (decoded[i + 1] == '0' || decoded[i + 1] == '1')) {
      out += decoded[i + 1] == '0' ? '~' : '/';
      ++i;
    } else {
      out += decoded[i];
    }
  }
  return out;
}

std::string last_segment(const std::string& uri) {
  const size_t slash = uri.find_last_of('/');
  return slash == std::string::npos ? uri : uri.substr(slash + 1);
}

}  // namespace

SchemaDocument::SchemaDocument(const json& root) : root_(root), draft_(draft_of(root)) { index_ids(root, 0); }

bool SchemaDocument::asserts(std::string_view keyword) const {
  for (const KeywordDrafts& k : kAssertions)
    if (keyword == k.name) return draft_ >= k.first && draft_ <= k.last;
  return false;
}

void SchemaDocument::index_ids(const json& node, int depth) {
  if (depth > kMaxIndexDepth) return;  // deeper nesting is refused when it is compiled
  if (node.is_array()) {
    for (const json& item : node) index_ids(item, depth + 1);
    return;
  }
  if (!node.is_object()) return;
  for (const char* key : {"$id", "id"}) {
    const auto it = node.find(key);
    if (it == node.end() || !it->is_string()) continue;
    if (std::string(key) == "id" && draft_ > Draft::draft4) continue;
    const std::string id = it->get<std::string>();
    if (!id.empty() && id[0] == '#') {
      anchors_.emplace(id.substr(1), &node);
    } else {
      const std::string base = id.substr(0, id.find('#'));
      ids_.emplace(base, &node);
      ids_.emplace(last_segment(base), &node);
    }
  }
  if (const auto it = node.find("$anchor"); it != node.end() && it->is_string()) anchors_.emplace(it->get<std::string>(), &node);
  for (const auto& [key, value] : node.items())
    if (key != "enum" && key != "const" && key != "default" && key != "examples") index_ids(value, depth + 1);
}

const SchemaDocument::json& SchemaDocument::resolve(const std::string& ref, const std::string& where) const {
  const size_t hash = ref.find('#');
  const std::string base = ref.substr(0, hash), fragment = hash == std::string::npos ? "" : ref.substr(hash + 1);
  const json* node = &root_;
  if (!base.empty()) {
    auto it = ids_.find(base);
    if (it == ids_.end()) it = ids_.find(last_segment(base));
    NF_CHECK(it != ids_.end(), "json_schema: the $ref '", ref, "' at ", where,
             " points outside the schema (remote references are not fetched)");
    node = it->second;
  }
  if (fragment.empty()) return *node;
  if (fragment[0] != '/') {
    const auto it = anchors_.find(fragment);
    NF_CHECK(it != anchors_.end(), "json_schema: the $ref '", ref, "' at ", where, " names no anchor of the schema");
    return *it->second;
  }
  size_t start = 1;
  while (true) {
    const size_t end = fragment.find('/', start);
    const std::string token = pointer_token(std::string_view(fragment).substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (node->is_object() && node->contains(token)) {
      node = &(*node)[token];
    } else if (node->is_array() && !token.empty() && token.find_first_not_of("0123456789") == std::string::npos &&
               token.size() < 10 && std::stoul(token) < node->size()) {
      node = &(*node)[std::stoul(token)];
    } else {
      throw Error("json_schema: the $ref '" + ref + "' at " + where + " is not found (no '" + token + "' there)");
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return *node;
}

}  // namespace nf::grammar
