#pragma once
// How deeply a JSON text nests, read without parsing it: a bound checked before nlohmann::json parses
// a client's (or a model's) text, since copying, comparing and printing a parsed value recurse once
// a level. Every JSON text the server parses passes it first.
#include <cstddef>
#include <string_view>

namespace nf::serve {

// JSON texts nested deeper than this are refused (the JSON schemas inside nest 256 deep at most).
constexpr size_t kMaxJsonDepth = 512;

// The deepest nesting of arrays and objects in `text` (brackets inside strings not counted); a
// single pass, whatever the text holds, valid or not.
size_t json_depth(std::string_view text);

}  // namespace nf::serve
