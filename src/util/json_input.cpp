#include "util/json_input.h"

#include "nanoformer/core/error.h"

namespace nf::util {
namespace {

using nlohmann::json;

// Containers below this depth are shown as [...] or {...} in an excerpt.
constexpr int kExcerptDepth = 4;

void append_excerpt(const json& v, std::string& out, size_t budget, int depth) {
  if (out.size() > budget) return;
  const bool array = v.is_array();
  if (!array && !v.is_object()) {
    out += v.dump(-1, ' ', false, json::error_handler_t::replace);
    return;
  }
  if (depth == kExcerptDepth) {
    out += array ? (v.empty() ? "[]" : "[...]") : (v.empty() ? "{}" : "{...}");
    return;
  }
  out += array ? '[' : '{';
  bool first = true;
  for (auto it = v.begin(); it != v.end() && out.size() <= budget; ++it) {
    if (!first) out += ',';
    first = false;
    if (!array) out += json(it.key()).dump(-1, ' ', false, json::error_handler_t::replace) + ":";
    append_excerpt(it.value(), out, budget, depth + 1);
  }
  out += array ? ']' : '}';
}

}  // namespace

int json_depth(std::string_view text, int max_depth) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest && (deepest = depth) > max_depth) break;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

namespace {

template <typename Json>
Json parse_bounded(std::string_view text, const std::string& context, int max_depth) {
  NF_CHECK(json_depth(text, max_depth) <= max_depth, context, "nests deeper than ", max_depth, " levels");
  try {
    return Json::parse(text);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for numbers like 1e400
    NF_FAIL(context, "not valid JSON (", e.what(), ")");
  }
}

}  // namespace

json parse_json(std::string_view text, const std::string& context, int max_depth) {
  return parse_bounded<json>(text, context, max_depth);
}

nlohmann::ordered_json parse_ordered_json(std::string_view text, const std::string& context, int max_depth) {
  return parse_bounded<nlohmann::ordered_json>(text, context, max_depth);
}

std::string json_excerpt(const json& value, size_t max_chars) {
  std::string out;
  append_excerpt(value, out, max_chars, 0);
  return shorten(out, max_chars);
}

std::string shorten(std::string_view s, size_t max_chars) {
  if (s.size() <= max_chars) return std::string(s);
  size_t cut = max_chars > 3 ? max_chars - 3 : 0;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
  std::string out(s.substr(0, cut));
  return out += "...";
}

std::vector<std::string> differing_keys(const json& a, const json& b, const std::set<std::string>& ignored) {
  if (!a.is_object() || !b.is_object()) return {};
  std::set<std::string> keys;
  for (const auto& [key, value] : a.items()) keys.insert(key);
  for (const auto& [key, value] : b.items()) keys.insert(key);
  std::vector<std::string> out;
  for (const std::string& key : keys)
    if (!ignored.count(key) && !(a.contains(key) && b.contains(key) && a.at(key) == b.at(key))) out.push_back(key);
  return out;
}

}  // namespace nf::util
