#include "nanoformer/tokenizer/bert_normalizer.h"

#include "nanoformer/tokenizer/unicode.h"

namespace nf::tokenizer {
namespace {

using unicode::CodePoint;

CodePoint decode_at(std::string_view text, size_t pos) {
  return unicode::decode_utf8(reinterpret_cast<const unsigned char*>(text.data()) + pos, text.size() - pos);
}

// HF's is_chinese_char: the CJK Unified Ideographs blocks and their extensions.
bool is_chinese(uint32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

bool is_space(uint32_t cp) { return unicode::classify(cp) & unicode::kSpace; }

// Rust's char::is_ascii_punctuation or a Unicode punctuation category.
bool is_bert_punctuation(uint32_t cp) {
  if (cp < 128) return (cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126);
  return unicode::classify(cp) & unicode::kPunctuation;
}

void append_utf8(std::u32string_view cps, std::string& out) {
  char buf[4];
  for (char32_t c : cps) out.append(buf, unicode::encode_utf8(c, buf));
}

}  // namespace

std::string bert_normalize(std::string_view text, const BertNormalizerOptions& o) {
  const bool strip = o.strips_accents();
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  std::u32string run;  // the valid code points since the last invalid byte, after the steps so far
  auto flush = [&] {
    if (run.empty()) return;
    if (strip) {
      // NFD of the run, then without the nonspacing marks
      std::u32string nfd;
      for (char32_t c : run) unicode::append_nfd(c, nfd);
      unicode::canonical_order(nfd);
      run.clear();
      for (char32_t c : nfd)
        if (!(unicode::classify(c) & unicode::kNonspacingMark)) run += c;
    }
    if (o.lowercase) {
      std::u32string lower;
      for (char32_t c : run) unicode::append_lowercase(c, lower);
      run.swap(lower);
    }
    append_utf8(run, out);
    run.clear();
  };
  for (size_t pos = 0; pos < text.size();) {
    const CodePoint cp = decode_at(text, pos);
    if (cp.value == unicode::kInvalid) {
      flush();
      out += text[pos++];
      continue;
    }
    pos += cp.length;
    uint32_t c = cp.value;
    if (o.clean_text) {
      if (c == 0 || c == 0xFFFD) continue;
      const bool tab_or_newline = c == '\t' || c == '\n' || c == '\r';
      if (!tab_or_newline && (unicode::classify(c) & unicode::kOther)) continue;
      if (tab_or_newline || is_space(c)) c = ' ';
    }
    if (o.handle_chinese_chars && is_chinese(c)) {
      run += U' ';
      run += static_cast<char32_t>(c);
      run += U' ';
    } else {
      run += static_cast<char32_t>(c);
    }
  }
  flush();
  return out;
}

size_t bert_skip_space(std::string_view text, size_t pos) {
  while (pos < text.size()) {
    const CodePoint cp = decode_at(text, pos);
    if (!is_space(cp.value)) break;
    pos += cp.length;
  }
  return pos;
}

size_t bert_word_end(std::string_view text, size_t pos) {
  const CodePoint first = decode_at(text, pos);
  if (first.value == unicode::kInvalid || is_bert_punctuation(first.value)) return pos + first.length;
  pos += first.length;
  while (pos < text.size()) {
    const CodePoint cp = decode_at(text, pos);
    if (cp.value == unicode::kInvalid || is_space(cp.value) || is_bert_punctuation(cp.value)) break;
    pos += cp.length;
  }
  return pos;
}

}  // namespace nf::tokenizer
