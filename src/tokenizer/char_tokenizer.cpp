#include "nanoformer/tokenizer/char_tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "nanoformer/core/error.h"
#include "nanoformer/tokenizer/unicode.h"
#include "util/json_input.h"

namespace nf::tokenizer {
namespace {

constexpr uint32_t kRawByte = unicode::kInvalid;  // 0x110000 + b stands for the invalid byte b

// The character value at text[i] and its length in bytes.
unicode::CodePoint character_at(std::string_view text, size_t i) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  unicode::CodePoint cp = unicode::decode_utf8(s + i, text.size() - i);
  if (cp.value == unicode::kInvalid) cp.value = kRawByte + s[i];
  return cp;
}

std::string describe(uint32_t c) {
  char buf[32];
  if (c >= kRawByte) {
    std::snprintf(buf, sizeof buf, "byte 0x%02X", c - kRawByte);
    return buf;
  }
  std::snprintf(buf, sizeof buf, "U+%04X", c);
  std::string out(buf);
  if (c >= 0x20 && c != 0x7F) {
    char utf8[4];
    out += " '" + std::string(utf8, unicode::encode_utf8(c, utf8)) + "'";
  }
  return out;
}

}  // namespace

CharTokenizer CharTokenizer::train(std::string_view text) {
  std::set<uint32_t> seen;
  for (size_t i = 0; i < text.size();) {
    const unicode::CodePoint cp = character_at(text, i);
    seen.insert(cp.value);
    i += cp.length;
  }
  return CharTokenizer(std::vector<uint32_t>(seen.begin(), seen.end()));
}

CharTokenizer::CharTokenizer(std::vector<uint32_t> characters) : characters_(std::move(characters)) {
  std::fill(std::begin(ascii_), std::end(ascii_), -1);
  bytes_.reserve(characters_.size());
  for (size_t id = 0; id < characters_.size(); ++id) {
    const uint32_t c = characters_[id];
    const bool valid = c < 0xD800 || (c > 0xDFFF && c < 0x110000) || (c >= kRawByte && c < kRawByte + 256);
    NF_CHECK(valid, "character vocabulary: entry ", id, " (", c, ") is neither a code point nor 0x110000 + byte");
    NF_CHECK(ids_.emplace(c, static_cast<TokenId>(id)).second, "character vocabulary: ", describe(c),
             " is listed twice");
    char buf[4];
    if (c >= kRawByte)
      bytes_.emplace_back(1, static_cast<char>(c - kRawByte));
    else
      bytes_.emplace_back(buf, unicode::encode_utf8(c, buf));
    if (c < 128) ascii_[c] = static_cast<int32_t>(id);
  }
}

void CharTokenizer::encode(std::string_view text, std::vector<TokenId>& out) const {
  out.reserve(out.size() + text.size());
  for (size_t i = 0; i < text.size();) {
    const auto b = static_cast<unsigned char>(text[i]);
    if (b < 128 && ascii_[b] >= 0) {
      out.push_back(static_cast<TokenId>(ascii_[b]));
      ++i;
      continue;
    }
    const unicode::CodePoint cp = character_at(text, i);
    auto it = ids_.find(cp.value);
    NF_CHECK(it != ids_.end(), "character tokenizer: ", describe(cp.value), " at byte ", i,
             " is not in the vocabulary");
    out.push_back(it->second);
    i += cp.length;
  }
}

std::string_view CharTokenizer::token_bytes(TokenId id) const {
  NF_CHECK(id < bytes_.size(), "token id ", id, " is out of range (vocabulary size ", bytes_.size(), ")");
  return bytes_[id];
}

std::optional<TokenId> CharTokenizer::token_id(std::string_view content) const {
  if (content.empty()) return std::nullopt;
  const unicode::CodePoint cp = character_at(content, 0);
  if (cp.length != content.size()) return std::nullopt;
  auto it = ids_.find(cp.value);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

std::string CharTokenizer::to_json() const {
  nlohmann::json j;
  j["type"] = kFileType;
  j["version"] = 1;
  j["code_points"] = characters_;
  return j.dump() + "\n";
}

CharTokenizer CharTokenizer::from_json(std::string_view json_text, std::string_view source) {
  const std::string where = std::string(source) + ": ";
  const nlohmann::json j = util::parse_json(json_text, where + "malformed character vocabulary: ");
  const auto field = [&](const char* key) {
    return j.is_object() && j.contains(key) ? j[key] : nlohmann::json();  // null when absent
  };
  const nlohmann::json type = field("type"), version = field("version"), code_points = field("code_points");
  NF_CHECK(type.is_string() && type.get<std::string>() == kFileType, where,
           "not a character vocabulary (type must be '", kFileType, "')");
  // Numbers must be exact non-negative integers: 1e10, 65.7, -1 or true are refused, not converted.
  NF_CHECK(version.is_number_unsigned() && version.get<uint64_t>() == 1, where,
           "unsupported character vocabulary version ", util::json_excerpt(version), " (expected 1)");
  NF_CHECK(code_points.is_array(), where, "'code_points' must be an array");
  std::vector<uint32_t> characters;
  characters.reserve(code_points.size());
  for (size_t i = 0; i < code_points.size(); ++i) {
    const nlohmann::json& c = code_points[i];
    NF_CHECK(c.is_number_unsigned() && c.get<uint64_t>() < kRawByte + 256, where, "code_points[", i, "] is ",
             util::json_excerpt(c), ", not a character value (an integer from 0 to ", kRawByte + 255, ")");
    characters.push_back(static_cast<uint32_t>(c.get<uint64_t>()));
  }
  try {
    return CharTokenizer(std::move(characters));
  } catch (const Error& e) {
    NF_FAIL(where, e.what());
  }
}

void CharTokenizer::save(const std::string& path) const {
  std::ofstream f(path, std::ios::binary);
  NF_CHECK(f, path, ": cannot open for writing");
  f << to_json();
  f.close();
  NF_CHECK(f, path, ": write failed");
}

}  // namespace nf::tokenizer
