#pragma once
// Pre-tokenization: cutting text into the pieces ("words") that BPE encodes independently, by
// the split regex of GPT-2 or of GPT-4 / LLaMA-3. The regexes are hand-compiled into matchers
// over UTF-8 code points (see pretokenizer.cpp), with the exact semantics of the backtracking
// regex engines Hugging Face tokenizers and tiktoken use: at each position the first alternative
// that matches wins, and the pieces cover the text without gaps.
#include <cstddef>
#include <optional>
#include <string_view>

namespace nf::tokenizer {

enum class SplitPattern {
  // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  kGpt2,
  // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
  // \s*[\r\n]+|\s+(?!\S)|\s+  (LLaMA-3's spelling; tiktoken's cl100k_base regex is equivalent)
  kGpt4,
  // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|
  // \s+(?!\S)|\s+  (Qwen2's tokenizer.json: LLaMA-3's with one digit a piece)
  kQwen2,
  // No splitting: the whole text is one piece.
  kNone,
};

// "gpt2", "gpt4", "qwen2" or "none".
std::string_view pattern_name(SplitPattern pattern);
std::optional<SplitPattern> pattern_from_name(std::string_view name);

// The regex source of a pattern, as written in tokenizer.json (kNone has none: empty).
std::string_view pattern_regex(SplitPattern pattern);
// Recognises the regex sources of GPT-2, LLaMA-3, tiktoken's cl100k_base and Qwen2; nullopt otherwise.
std::optional<SplitPattern> pattern_from_regex(std::string_view regex);

// The end of the piece that starts at text[pos] (pos < text.size()).
size_t next_split(std::string_view text, size_t pos, SplitPattern pattern);

// Calls f(piece) for each piece of text, in order.
template <class F>
void for_each_piece(std::string_view text, SplitPattern pattern, F&& f) {
  for (size_t pos = 0; pos < text.size();) {
    const size_t end = next_split(text, pos, pattern);
    f(text.substr(pos, end - pos));
    pos = end;
  }
}

}  // namespace nf::tokenizer
