// The Jinja lexer (jinja/ast.h), following jinja2's: newlines normalised to "\n" and one trailing
// newline dropped; "{%-"/"{{-"/"{#-" strip the whitespace before a tag and "-%}"/"-}}"/"-#}" the
// whitespace after it; trim_blocks drops the newline right after a block or comment tag, and
// lstrip_blocks the spaces and tabs between a line's start and a block or comment tag ("{%+" keeps
// them). Brackets inside a tag are balanced, so "}}" closes a tag only outside them.
#include <algorithm>
#include <cctype>
#include <cstdint>

#include "jinja/ast.h"
#include "nanoformer/core/error.h"
#include "nanoformer/tokenizer/unicode.h"

namespace nf::jinja {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

class Lexer {
 public:
  explicit Lexer(std::string_view src) : src_(src) {}

  std::vector<Token> run() {
    size_t pos = 0;
    bool line_starting = true;
    while (true) {
      const size_t open = next_tag(pos);
      std::string text(src_.substr(pos, open == std::string_view::npos ? std::string_view::npos : open - pos));
      if (open != std::string_view::npos) {
        const char kind = src_[open + 1];
        const char modifier = open + 2 < src_.size() ? src_[open + 2] : '\0';
        if (modifier == '-') {
          while (!text.empty() && is_space(text.back())) text.pop_back();
        } else if (modifier != '+' && kind != '{') {
          const size_t line_start = text.rfind('\n') + 1;  // 0 when there is no newline
          if ((line_start > 0 || line_starting) && line_start < text.size() &&
              std::all_of(text.begin() + static_cast<std::ptrdiff_t>(line_start), text.end(), is_space))
            text.resize(line_start);
        }
      }
      if (!text.empty()) out_.push_back({Token::Kind::text, std::move(text), pos});
      if (open == std::string_view::npos) break;
      const char kind = src_[open + 1];
      size_t body = open + 2;
      if (body < src_.size() && (src_[body] == '-' || (kind != '{' && src_[body] == '+'))) ++body;
      size_t close = 0;
      bool strip_after = false;
      if (kind == '#') {
        const size_t end = src_.find("#}", body);
        NF_CHECK(end != std::string_view::npos, "chat template ", where(src_, open), ": a comment is not closed with #}");
        strip_after = end > body && src_[end - 1] == '-';
        close = end + 2;
      } else {
        close = lex_tag(open, body, kind == '{', strip_after);
      }
      const size_t tag_end = close;
      if (strip_after)
        while (close < src_.size() && is_space(src_[close])) ++close;
      else if (kind != '{' && close < src_.size() && src_[close] == '\n')
        ++close;  // trim_blocks
      line_starting = close > tag_end ? src_[close - 1] == '\n' : false;
      pos = close;
    }
    out_.push_back({Token::Kind::end, "", src_.size()});
    return std::move(out_);
  }

 private:
  size_t next_tag(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string_view::npos; i = src_.find('{', i + 1))
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    return std::string_view::npos;
  }

  // Lexes a tag's tokens from `p`; returns the offset after its closing "}}" or "%}".
  size_t lex_tag(size_t open, size_t p, bool expression, bool& strip_after) {
    out_.push_back({expression ? Token::Kind::expr_open : Token::Kind::stmt_open, "", open});
    const char closer = expression ? '}' : '%';
    int depth = 0;
    while (true) {
      while (p < src_.size() && is_space(src_[p])) ++p;
      NF_CHECK(p < src_.size(), "chat template ", where(src_, open), ": the tag is not closed with ",
               expression ? "}}" : "%}");
      if (depth == 0) {
        const bool minus = src_[p] == '-' && src_.substr(p + 1, 2) == std::string{closer, '}'};
        if (minus || src_.substr(p, 2) == std::string{closer, '}'}) {
          strip_after = minus;
          out_.push_back({expression ? Token::Kind::expr_close : Token::Kind::stmt_close, "", p});
          return p + (minus ? 3 : 2);
        }
      }
      const char c = src_[p];
      if (is_name_start(c)) {
        size_t e = p;
        while (e < src_.size() && is_name_char(src_[e])) ++e;
        out_.push_back({Token::Kind::name, std::string(src_.substr(p, e - p)), p});
        p = e;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        p = lex_number(p);
      } else if (c == '\'' || c == '"') {
        p = lex_string(p);
      } else {
        static constexpr std::string_view kTwo[] = {"//", "**", "==", "!=", "<=", ">="};
        std::string op(1, c);
        for (const auto two : kTwo)
          if (src_.substr(p, 2) == two) op = two;
        NF_CHECK(op.size() == 2 || std::string_view("+-*/%~<>()[]{},.:|=").find(c) != std::string_view::npos,
                 "chat template ", where(src_, p), ": unexpected character '", std::string(1, c), "' in a tag");
        if (c == '(' || c == '[' || c == '{') ++depth;
        if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
        out_.push_back({Token::Kind::op, op, p});
        p += op.size();
      }
    }
  }

  size_t lex_number(size_t p) {
    size_t e = p;
    while (e < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[e])) || src_[e] == '_')) ++e;
    bool real = false;
    if (e + 1 < src_.size() && src_[e] == '.' && std::isdigit(static_cast<unsigned char>(src_[e + 1]))) {
      real = true;
      ++e;
      while (e < src_.size() && std::isdigit(static_cast<unsigned char>(src_[e]))) ++e;
    }
    if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
      size_t x = e + 1;
      if (x < src_.size() && (src_[x] == '+' || src_[x] == '-')) ++x;
      if (x < src_.size() && std::isdigit(static_cast<unsigned char>(src_[x]))) {
        real = true;
        e = x;
        while (e < src_.size() && std::isdigit(static_cast<unsigned char>(src_[e]))) ++e;
      }
    }
    std::string digits;
    for (const char c : src_.substr(p, e - p))
      if (c != '_') digits += c;
    out_.push_back({real ? Token::Kind::real : Token::Kind::integer, digits, p});
    return e;
  }

  // A string literal with Python's escapes (\n \t \r \\ \' \" \xHH \uHHHH \UHHHHHHHH \0; an
  // unknown escape keeps its backslash).
  size_t lex_string(size_t p) {
    const char quote = src_[p];
    std::string value;
    size_t i = p + 1;
    while (true) {
      NF_CHECK(i < src_.size(), "chat template ", where(src_, p), ": a string is not closed");
      const char c = src_[i];
      if (c == quote) break;
      if (c != '\\') {
        value += c;
        ++i;
        continue;
      }
      NF_CHECK(i + 1 < src_.size(), "chat template ", where(src_, p), ": a string is not closed");
      const char e = src_[i + 1];
      i += 2;
      switch (e) {
        case 'n': value += '\n'; break;
        case 't': value += '\t'; break;
        case 'r': value += '\r'; break;
        case 'b': value += '\b'; break;
        case 'f': value += '\f'; break;
        case 'v': value += '\v'; break;
        case 'a': value += '\a'; break;
        case '0': value += '\0'; break;
        case '\\': value += '\\'; break;
        case '\'': value += '\''; break;
        case '"': value += '"'; break;
        case '\n': break;  // a backslash at a line's end continues the line
        case 'x':
        case 'u':
        case 'U': {
          const size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          NF_CHECK(i + n <= src_.size(), "chat template ", where(src_, i - 2), ": a truncated \\", std::string(1, e),
                   " escape");
          uint32_t cp = 0;
          for (size_t k = 0; k < n; ++k) {
            const char h = src_[i + k];
            NF_CHECK(std::isxdigit(static_cast<unsigned char>(h)), "chat template ", where(src_, i - 2),
                     ": a bad \\", std::string(1, e), " escape");
            cp = cp * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0'
                                                                                              : std::tolower(h) - 'a' + 10);
          }
          NF_CHECK(cp <= 0x10FFFF && (cp < 0xD800 || cp > 0xDFFF), "chat template ", where(src_, i - 2),
                   ": the escape names no character");
          char buf[4];
          value.append(buf, tokenizer::unicode::encode_utf8(cp, buf));
          i += n;
          break;
        }
        default:
          value += '\\';
          value += e;
      }
    }
    out_.push_back({Token::Kind::string, std::move(value), p});
    return i + 1;
  }

  std::string_view src_;
  std::vector<Token> out_;
};

}  // namespace

std::string where(std::string_view source, size_t pos) {
  pos = std::min(pos, source.size());
  const auto line = 1 + std::count(source.begin(), source.begin() + static_cast<std::ptrdiff_t>(pos), '\n');
  const size_t line_start = source.rfind('\n', pos == 0 ? 0 : pos - 1);
  const size_t col = line_start == std::string_view::npos || pos == 0 ? pos + 1 : pos - line_start;
  return "line " + std::to_string(line) + " col " + std::to_string(col);
}

std::vector<Token> lex(std::string_view source) { return Lexer(source).run(); }

}  // namespace nf::jinja
