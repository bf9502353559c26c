#include "nanoformer/tokenizer/byte_level.h"

#include <array>

#include "nanoformer/tokenizer/unicode.h"

namespace nf::tokenizer::byte_level {
namespace {

struct Alphabet {
  std::array<char32_t, 256> to_char{};
  std::array<std::string, 256> utf8;   // to_char[b] encoded as UTF-8
  std::array<int16_t, 324> to_byte{};  // code points 0..323 cover the whole alphabet

  Alphabet() {
    to_byte.fill(-1);
    auto printable = [](unsigned b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE); };
    char32_t next = 256;
    for (unsigned b = 0; b < 256; ++b) {
      to_char[b] = printable(b) ? static_cast<char32_t>(b) : next++;
      to_byte[to_char[b]] = static_cast<int16_t>(b);
      char buf[4];
      utf8[b].assign(buf, unicode::encode_utf8(to_char[b], buf));
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet a;
  return a;
}

}  // namespace

char32_t byte_to_char(uint8_t b) { return alphabet().to_char[b]; }

int char_to_byte(char32_t c) {
  const Alphabet& a = alphabet();
  return c < a.to_byte.size() ? a.to_byte[c] : -1;
}

std::string encode(std::string_view bytes) {
  const Alphabet& a = alphabet();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) out += a.utf8[b];
  return out;
}

std::optional<std::string> decode(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  const auto* s = reinterpret_cast<const unsigned char*>(token.data());
  for (size_t i = 0; i < token.size();) {
    const unicode::CodePoint cp = unicode::decode_utf8(s + i, token.size() - i);
    const int b = cp.value == unicode::kInvalid ? -1 : char_to_byte(cp.value);
    if (b < 0) return std::nullopt;
    out += static_cast<char>(b);
    i += cp.length;
  }
  return out;
}

}  // namespace nf::tokenizer::byte_level
