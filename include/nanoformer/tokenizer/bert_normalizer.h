#pragma once
// BERT's text normalizer and pre-tokenizer, as Hugging Face tokenizers defines them
// (BertNormalizer, BertPreTokenizer). The normalizer works one code point at a time:
//   clean_text            drops U+0000, U+FFFD and "control" characters (categories C*, except
//                         \t \n \r) and turns every whitespace character into ' '
//   handle_chinese_chars  puts ' ' around each CJK ideograph (so each one becomes a word)
//   strip_accents         NFD, then drops the nonspacing marks (Mn); unset: follows lowercase
//   lowercase             the full Unicode lowercase mapping of each code point
// The pre-tokenizer splits at whitespace (removed) and makes each punctuation character (P*, or
// any ASCII punctuation such as $ + < = > ^ ` | ~) a word of its own.
// Bytes that are not valid UTF-8 pass through the normalizer unchanged and are pieces of their
// own in the pre-tokenizer (HF only ever sees valid UTF-8).
#include <optional>
#include <string>
#include <string_view>

namespace nf::tokenizer {

struct BertNormalizerOptions {
  bool clean_text = true;
  bool handle_chinese_chars = true;
  std::optional<bool> strip_accents;  // nullopt: the value of lowercase
  bool lowercase = true;

  bool strips_accents() const { return strip_accents.value_or(lowercase); }
};

// The normalized form of text.
std::string bert_normalize(std::string_view text, const BertNormalizerOptions& options);

// The end of the BERT word that starts at text[pos], which must not be whitespace.
size_t bert_word_end(std::string_view text, size_t pos);
// The end of the whitespace run at text[pos] (pos itself when there is none).
size_t bert_skip_space(std::string_view text, size_t pos);

// Calls f(word) for each BERT pre-tokenizer word of text, in order.
template <class F>
void for_each_bert_word(std::string_view text, F&& f) {
  for (size_t pos = bert_skip_space(text, 0); pos < text.size(); pos = bert_skip_space(text, pos)) {
    const size_t end = bert_word_end(text, pos);
    f(text.substr(pos, end - pos));
    pos = end;
  }
}

}  // namespace nf::tokenizer
