#pragma once
// The tokens and syntax tree of a Jinja template (jinja/template.h): the lexer (jinja/lexer.cpp) cuts the
// source into text and tag tokens with whitespace control applied, the parser (jinja/parser.cpp)
// builds the tree, the evaluator (jinja/eval.cpp) walks it.
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "nanoformer/jinja/template.h"

namespace nf::jinja {

struct Token {
  enum class Kind { text, expr_open, expr_close, stmt_open, stmt_close, name, string, integer, real, op, end };
  Kind kind;
  std::string text;  // the text, name, operator, or a string literal's value
  size_t pos = 0;    // byte offset in the source
};

// The tokens of a template, with trim_blocks and lstrip_blocks applied as transformers sets them.
std::vector<Token> lex(std::string_view source);

// "line L col C" of a byte offset, for error messages.
std::string where(std::string_view source, size_t pos);

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    literal,    // value
    name,       // name
    list,       // args (name "tuple" for a tuple)
    dict,       // kwargs (keys literal strings)
    attr,       // args[0].name
    subscript,  // args[0][args[1]]
    slice,      // args[0][args[1]:args[2]:args[3]], a missing part a null pointer
    call,       // args[0](args[1..], kwargs)
    filter,     // args[0] | name(args[1..], kwargs)
    test,       // args[0] is [not] name(args[1..])
    unary,      // name ("not", "-", "+") args[0]
    binary,     // args[0] name args[1]: + - * / // % ** ~ == != < <= > >= in, "not in"
    logical,    // args[0] and/or args[1] (name)
    condition,  // args[0] if args[1] else args[2] (args[2] may be null)
  };
  Kind kind;
  size_t pos = 0;
  std::string name;
  Value value;
  bool negated = false;  // `is not`
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

struct Node;
using Body = std::vector<std::unique_ptr<Node>>;

struct Node {
  enum class Kind { text, output, if_chain, for_loop, set, set_block, loop_break, loop_continue, block };
  Kind kind;
  size_t pos = 0;
  std::string text;                                // text
  ExprPtr expr;                                    // output, for's iterable, set's value
  ExprPtr filter;                                  // for ... if filter
  std::vector<std::string> targets;                // for's names; set's name (and attribute)
  std::vector<std::pair<ExprPtr, Body>> branches;  // if / elif
  Body body, else_body;                            // for, set block, block; if's and for's else
  bool uses_loop = false;                          // for: its body or filter names `loop`
};

struct Template::Parsed {
  std::string source;
  Body body;
};

// Parses tokens into the tree; throws nf::Error naming the construct and its place.
Body parse(std::string_view source, const std::vector<Token>& tokens, size_t max_nesting);

}  // namespace nf::jinja
