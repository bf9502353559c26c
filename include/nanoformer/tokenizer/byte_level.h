#pragma once
// GPT-2's byte-level alphabet: every byte 0..255 is shown as one printable code point, so that a
// token (any byte string) can be written as a readable Unicode string in vocab files. Printable
// Latin-1 bytes ('!'..'~', '¡'..'¬', '®'..'ÿ') stand for themselves; the 68 others are mapped in
// order to U+0100, U+0101, ... (so the space 0x20 becomes 'Ġ' U+0120 and '\n' becomes 'Ċ').
// Tokens are kept as raw bytes inside nanoformer; this mapping is only used at the file boundary.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace nf::tokenizer::byte_level {

// The code point that stands for byte b.
char32_t byte_to_char(uint8_t b);

// The byte a code point stands for, or -1 when it is not in the alphabet.
int char_to_byte(char32_t c);

// Bytes -> token string as written in tokenizer.json (each byte as its UTF-8 encoded stand-in).
std::string encode(std::string_view bytes);

// Token string -> bytes; nullopt when the string is not valid UTF-8 or has a code point outside
// the alphabet (such tokens, e.g. special tokens with spaces, are kept as their literal bytes).
std::optional<std::string> decode(std::string_view token);

}  // namespace nf::tokenizer::byte_level
