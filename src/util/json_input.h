#pragma once
// Reading JSON from files we do not trust (tokenizer.json, character vocabularies, safetensors
// headers): nesting is bounded before the parser sees the text, every nlohmann exception becomes
// an nf::Error, and error messages quote a short excerpt of a value without recursing into it
// (nlohmann's dump() recurses once per level, so a deeply nested value would overflow the stack).
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace nf::util {

// Deeper than any real tokenizer or config file nests (tokenizer.json needs about 6 levels).
inline constexpr int kMaxJsonDepth = 64;

// The deepest nesting of arrays and objects in text, brackets inside strings not counted; the
// scan stops at max_depth + 1. Linear, no recursion.
int json_depth(std::string_view text, int max_depth);

// Parses text, refusing nesting deeper than max_depth. Throws nf::Error "<context>not valid JSON
// (...)" or "<context>nests deeper than <max_depth> levels".
nlohmann::json parse_json(std::string_view text, const std::string& context, int max_depth = kMaxJsonDepth);
// As parse_json, keeping the objects' keys in the text's order (what a chat template's tojson writes).
nlohmann::ordered_json parse_ordered_json(std::string_view text, const std::string& context,
                                          int max_depth = kMaxJsonDepth);

// A single-line rendering of a value for an error message, as dump() writes it but at most
// max_chars bytes (cut at a character boundary, ending in "..."), containers shown only a few
// levels deep, invalid UTF-8 replaced.
std::string json_excerpt(const nlohmann::json& value, size_t max_chars = 60);

// s itself when it has at most max_chars bytes, else its start cut at a character boundary and
// "..." (max_chars bytes in all).
std::string shorten(std::string_view s, size_t max_chars = 60);

// The top-level keys, sorted, whose values differ between two objects (a key in one only counts),
// but those in `ignored`; none when either is not an object.
std::vector<std::string> differing_keys(const nlohmann::json& a, const nlohmann::json& b,
                                        const std::set<std::string>& ignored = {});

}  // namespace nf::util
