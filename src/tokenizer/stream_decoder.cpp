#include "nanoformer/tokenizer/stream_decoder.h"

namespace nf::tokenizer {
namespace {

// Number of bytes of the UTF-8 sequence led by byte c (0 when c cannot lead one).
size_t sequence_length(unsigned char c) {
  if (c >= 0xC2 && c <= 0xDF) return 2;
  if (c >= 0xE0 && c <= 0xEF) return 3;
  if (c >= 0xF0 && c <= 0xF4) return 4;
  return 0;
}

// Whether b can follow the lead byte `lead` as its first continuation byte (the ranges that
// exclude overlong forms, surrogates and code points above U+10FFFF).
bool valid_second(unsigned char lead, unsigned char b) {
  if (lead == 0xE0) return b >= 0xA0 && b <= 0xBF;
  if (lead == 0xED) return b >= 0x80 && b <= 0x9F;
  if (lead == 0xF0) return b >= 0x90 && b <= 0xBF;
  if (lead == 0xF4) return b >= 0x80 && b <= 0x8F;
  return (b & 0xC0) == 0x80;
}

}  // namespace

// Look back at most 3 bytes for the lead byte of the last sequence; if the bytes from it to the
// end are a proper prefix of a valid sequence, they wait for the next token.
size_t complete_utf8_prefix(std::string_view bytes) {
  const size_t n = bytes.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto c = static_cast<unsigned char>(bytes[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: keep looking for the lead
    const size_t need = sequence_length(c);
    if (need <= back) return n;  // ASCII, an invalid byte, or a sequence that is complete
    if (back >= 2 && !valid_second(c, static_cast<unsigned char>(bytes[n - back + 1]))) return n;
    return n - back;
  }
  return n;
}

// A sequence led by a valid lead byte extends while its bytes could still complete it; if it
// stops short (an unexpected byte or the end), the bytes it covered are one maximal subpart.
std::string replace_invalid_utf8(std::string_view bytes) {
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    const auto lead = static_cast<unsigned char>(bytes[i]);
    if (lead < 0x80) {
      out += bytes[i++];
      continue;
    }
    const size_t need = sequence_length(lead);
    size_t length = 1;
    while (length < need && i + length < bytes.size()) {
      const auto b = static_cast<unsigned char>(bytes[i + length]);
      if (length == 1 ? !valid_second(lead, b) : (b & 0xC0) != 0x80) break;
      ++length;
    }
    out += length == need ? bytes.substr(i, length) : kReplacement;
    i += length;
  }
  return out;
}

std::string StreamDecoder::finished(std::string_view bytes) const {
  return invalid_ == InvalidUtf8::replace ? replace_invalid_utf8(bytes) : std::string(bytes);
}

std::string StreamDecoder::push(TokenId id) {
  pending_ += tokenizer_.token_bytes(id);
  const size_t ready = complete_utf8_prefix(pending_);
  std::string out = finished(std::string_view(pending_).substr(0, ready));
  pending_.erase(0, ready);
  return out;
}

std::string StreamDecoder::flush() {
  std::string out = finished(pending_);
  pending_.clear();
  return out;
}

}  // namespace nf::tokenizer
