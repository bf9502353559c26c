#pragma once
// UTF-8 decoding, the Unicode classes the pre-tokenizers need (\p{L}, \p{N}, \s, \w, P*, C*, Mn),
// and the NFD / lowercase mappings of BERT's normalizer.
//
// Tokenizers see arbitrary bytes, not only valid UTF-8. decode_utf8() follows the strict rules
// of Rust's str (no overlong forms, no surrogates, nothing above U+10FFFF); a byte that does not
// start a valid sequence is reported as an invalid one-byte unit, which the pre-tokenizer treats
// like a punctuation character (not a letter, number or space). That keeps encode/decode exact
// inverses for any byte string.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace nf::tokenizer::unicode {

// Class bits of a code point, as generated from the Unicode Character Database.
enum : uint8_t {
  kLetter = 1,  // \p{L}: Lu Ll Lt Lm Lo
  kNumber = 2,  // \p{N}: Nd Nl No
  kSpace = 4,   // \s: the White_Space property
  kWord = 8,    // \w as Rust's regex crate defines it (used by added tokens' single_word)
  kPunctuation = 16,     // P*: Pc Pd Ps Pe Pi Pf Po (BERT's punctuation, with ASCII symbols added)
  kOther = 32,           // Cc Cf Co Cs (BERT's "control" characters; unassigned Cn is not, as in HF)
  kNonspacingMark = 64,  // Mn (the accents BERT's strip_accents removes after NFD)
};

// The code point value given to an invalid byte: outside Unicode, so it has no class bits.
inline constexpr uint32_t kInvalid = 0x110000;

struct CodePoint {
  uint32_t value;   // the code point, or kInvalid
  uint32_t length;  // bytes consumed: 1..4 (1 for an invalid byte)
};

// Decodes the code point at the start of s[0, n), n >= 1.
inline CodePoint decode_utf8(const unsigned char* s, size_t n) {
  const unsigned c = s[0];
  if (c < 0x80) return {c, 1};
  auto cont = [&](size_t i) { return i < n && (s[i] & 0xC0) == 0x80; };
  if (c >= 0xC2 && c <= 0xDF) {
    if (cont(1)) return {((c & 0x1Fu) << 6) | (s[1] & 0x3Fu), 2};
  } else if (c >= 0xE0 && c <= 0xEF) {
    // E0 needs A0..BF next (no overlong forms), ED needs 80..9F (no surrogates).
    const bool second_ok = n > 1 && (c == 0xE0   ? (s[1] >= 0xA0 && s[1] <= 0xBF)
                                     : c == 0xED ? (s[1] >= 0x80 && s[1] <= 0x9F)
                                                 : cont(1));
    if (second_ok && cont(2)) return {((c & 0x0Fu) << 12) | ((s[1] & 0x3Fu) << 6) | (s[2] & 0x3Fu), 3};
  } else if (c >= 0xF0 && c <= 0xF4) {
    // F0 needs 90..BF next (no overlong forms), F4 needs 80..8F (nothing above U+10FFFF).
    const bool second_ok = n > 1 && (c == 0xF0   ? (s[1] >= 0x90 && s[1] <= 0xBF)
                                     : c == 0xF4 ? (s[1] >= 0x80 && s[1] <= 0x8F)
                                                 : cont(1));
    if (second_ok && cont(2) && cont(3))
      return {((c & 0x07u) << 18) | ((s[1] & 0x3Fu) << 12) | ((s[2] & 0x3Fu) << 6) | (s[3] & 0x3Fu), 4};
  }
  return {kInvalid, 1};
}

// Class bits of a code point outside ASCII (0 for kInvalid).
uint8_t classify_non_ascii(uint32_t cp);

namespace detail {
// Class bits of the ASCII range, so the common case needs no table walk.
inline constexpr auto kAsciiClasses = [] {
  struct Table {
    uint8_t bits[128]{};
  } t;
  for (unsigned c = 0; c < 128; ++c) {
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    const bool digit = c >= '0' && c <= '9';
    const bool space = c == ' ' || (c >= 0x09 && c <= 0x0D);
    const bool control = c < 0x20 || c == 0x7F;  // Cc
    // the ASCII characters of categories P*; $ + < = > ^ ` | ~ are symbols (S*)
    const bool punctuation = c < 0x7F && std::string_view("!\"#%&'()*,-./:;?@[\\]_{}").find(static_cast<char>(c)) !=
                                            std::string_view::npos;
    t.bits[c] = static_cast<uint8_t>((letter ? kLetter | kWord : 0) | (digit ? kNumber | kWord : 0) |
                                     (space ? kSpace : 0) | (c == '_' ? kWord : 0) | (control ? kOther : 0) |
                                     (punctuation ? kPunctuation : 0));
  }
  return t;
}();
}  // namespace detail

inline uint8_t classify(uint32_t cp) { return cp < 128 ? detail::kAsciiClasses.bits[cp] : classify_non_ascii(cp); }

// Appends the full canonical decomposition of cp (NFD, not yet reordered) to out: cp itself
// when it has none.
void append_nfd(uint32_t cp, std::u32string& out);
// Sorts each run of nonzero combining classes stably by class (the canonical ordering of NFD).
void canonical_order(std::u32string& s);
uint8_t combining_class(uint32_t cp);
// Appends the full lowercase mapping of cp (one or more code points; cp itself when none).
void append_lowercase(uint32_t cp, std::u32string& out);

// Appends the UTF-8 encoding of a valid code point to a buffer of at least 4 bytes; returns the
// number of bytes written.
size_t encode_utf8(uint32_t cp, char* out);

}  // namespace nf::tokenizer::unicode
