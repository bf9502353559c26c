// The final answer of a generated solution (eval/answer_extraction.h).
#include "nanoformer/eval/answer_extraction.h"

#include <cctype>

namespace nf::eval {
namespace {

bool digit(char c) { return c >= '0' && c <= '9'; }
bool number_char(char c) { return digit(c) || c == '.' || c == ',' || c == '$' || c == '-'; }

}  // namespace

std::string normalize_answer(std::string_view text) {
  std::string out;
  for (char c : text)
    if (c != ',' && c != '$' && !std::isspace(static_cast<unsigned char>(c))) out += c;
  if (!out.empty() && out.back() == '.') out.pop_back();
  return out;
}

std::optional<std::string> extract_answer(std::string_view text) {
  const size_t hashes = text.rfind("#### ");
  if (hashes != std::string_view::npos) {
    size_t end = hashes + 5;
    if (end < text.size() && text[end] == '-') ++end;
    while (end < text.size() && (digit(text[end]) || text[end] == '.' || text[end] == ',')) ++end;
    const std::string number = normalize_answer(text.substr(hashes + 5, end - hashes - 5));
    for (char c : number)
      if (digit(c)) return number;
  }
  std::optional<std::string> last;
  for (size_t i = 0; i < text.size();) {
    if (!number_char(text[i])) {
      ++i;
      continue;
    }
    size_t end = i;
    bool has_digit = false;
    while (end < text.size() && number_char(text[end]) && (end == i || text[end] != '-')) has_digit |= digit(text[end++]);
    if (has_digit) last = normalize_answer(text.substr(i, end - i));
    i = end;
  }
  return last;
}

}  // namespace nf::eval
