// The Jinja parser (jinja/ast.h): recursive descent with jinja2's precedence, lowest first:
// x if c else y; or; and; not; comparisons and in; + -; ~; * / // %; **; unary - +; then a primary
// with its postfixes (.attr [sub] [a:b:c] (call)), filters (|f) and tests (is t). Nesting deeper
// than Limits::max_nesting is an error, so no input can overflow the stack.
#include <charconv>
#include <initializer_list>

#include "jinja/ast.h"
#include "nanoformer/core/error.h"

namespace nf::jinja {
namespace {

class Parser {
 public:
  Parser(std::string_view source, const std::vector<Token>& tokens, size_t max_nesting)
      : src_(source), tokens_(tokens), max_nesting_(max_nesting) {}

  Body parse_template() {
    std::string end;
    Body body = parse_until({}, end);
    return body;
  }

 private:
  // Counts nesting for as long as it lives.
  struct Nest {
    explicit Nest(Parser& p) : p_(p) {
      if (++p_.depth_ > p_.max_nesting_) p_.fail(p_.peek().pos, "nests deeper than ", p_.max_nesting_, " levels");
    }
    ~Nest() { --p_.depth_; }
    Parser& p_;
  };

  template <class... Args>
  [[noreturn]] void fail(size_t pos, const Args&... args) const {
    NF_FAIL("chat template ", where(src_, pos), ": ", args...);
  }

  const Token& peek(size_t ahead = 0) const { return tokens_[std::min(at_ + ahead, tokens_.size() - 1)]; }
  const Token& next() {
    const Token& t = peek();
    if (at_ < tokens_.size() - 1) ++at_;
    return t;
  }
  bool is_op(std::string_view op, size_t ahead = 0) const {
    return peek(ahead).kind == Token::Kind::op && peek(ahead).text == op;
  }
  bool is_name(std::string_view name, size_t ahead = 0) const {
    return peek(ahead).kind == Token::Kind::name && peek(ahead).text == name;
  }
  static std::string describe(const Token& t) {
    switch (t.kind) {
      case Token::Kind::end: return "the end of the template";
      case Token::Kind::text: return "text";
      case Token::Kind::expr_close: return "'}}'";
      case Token::Kind::stmt_close: return "'%}'";
      case Token::Kind::expr_open: return "'{{'";
      case Token::Kind::stmt_open: return "'{%'";
      case Token::Kind::string: return "a string";
      default: return "'" + t.text + "'";
    }
  }
  void expect_op(std::string_view op) {
    if (!is_op(op)) fail(peek().pos, "expected '", op, "' but found ", describe(peek()));
    next();
  }
  std::string expect_name(std::string_view what) {
    if (peek().kind != Token::Kind::name) fail(peek().pos, "expected ", what, " but found ", describe(peek()));
    return next().text;
  }
  void expect_close(std::string_view tag) {
    if (peek().kind != Token::Kind::stmt_close)
      fail(peek().pos, "expected '%}' to end {% ", tag, " %} but found ", describe(peek()));
    next();
  }

  // Statements and text up to a {% word %} with word in `ends` (consumed up to the word, which is
  // returned in `end`); with no `ends`, up to the end of the template.
  Body parse_until(std::initializer_list<std::string_view> ends, std::string& end) {
    Nest nest(*this);
    Body body;
    const size_t start = peek().pos;
    while (true) {
      const Token& t = peek();
      if (t.kind == Token::Kind::end) {
        if (ends.size() == 0) return body;
        std::string expected;
        for (const auto e : ends) expected += (expected.empty() ? "" : " or ") + std::string("{% ") + std::string(e) + " %}";
        fail(start, "a block is not closed: expected ", expected, " before the end of the template");
      }
      if (t.kind == Token::Kind::text) {
        auto node = make(Node::Kind::text, t.pos);
        node->text = t.text;
        body.push_back(std::move(node));
        next();
      } else if (t.kind == Token::Kind::expr_open) {
        next();
        auto node = make(Node::Kind::output, t.pos);
        node->expr = parse_expr();
        if (peek().kind != Token::Kind::expr_close) fail(peek().pos, "expected '}}' but found ", describe(peek()));
        next();
        body.push_back(std::move(node));
      } else if (t.kind == Token::Kind::stmt_open) {
        if (peek(1).kind == Token::Kind::name)
          for (const auto e : ends)
            if (peek(1).text == e) {
              next();
              end = next().text;
              return body;
            }
        next();
        body.push_back(parse_statement());
      } else {
        fail(t.pos, "unexpected ", describe(t));
      }
    }
  }

  std::unique_ptr<Node> make(Node::Kind kind, size_t pos) {
    auto node = std::make_unique<Node>();
    node->kind = kind;
    node->pos = pos;
    return node;
  }

  std::unique_ptr<Node> parse_statement() {
    const Token& t = peek();
    if (t.kind != Token::Kind::name) fail(t.pos, "expected a statement name after '{%' but found ", describe(t));
    const std::string word = next().text;
    std::string end;
    if (word == "if") {
      auto node = make(Node::Kind::if_chain, t.pos);
      std::string branch = "if";
      while (branch == "if" || branch == "elif") {
        auto cond = parse_expr();
        expect_close(branch);
        Body body = parse_until({"elif", "else", "endif"}, branch);
        node->branches.emplace_back(std::move(cond), std::move(body));
      }
      if (branch == "else") {
        expect_close("else");
        node->else_body = parse_until({"endif"}, end);
      }
      expect_close("endif");
      return node;
    }
    if (word == "for") {
      auto node = make(Node::Kind::for_loop, t.pos);
      node->targets.push_back(expect_name("a loop variable"));
      while (is_op(",")) {
        next();
        node->targets.push_back(expect_name("a loop variable"));
      }
      if (!is_name("in")) fail(peek().pos, "expected 'in' in {% for %} but found ", describe(peek()));
      next();
      node->expr = parse_expr(/*allow_condition=*/false);
      if (is_name("if")) {
        next();
        node->filter = parse_expr(false);
      }
      if (is_name("recursive")) fail(peek().pos, "unsupported construct: recursive loops");
      expect_close("for");
      std::string branch;
      node->body = parse_until({"else", "endfor"}, branch);
      if (branch == "else") {
        expect_close("else");
        node->else_body = parse_until({"endfor"}, end);
      }
      expect_close("endfor");
      node->uses_loop = mentions_loop(node->filter.get()) || mentions_loop(node->body);
      return node;
    }
    if (word == "set") {
      auto node = make(Node::Kind::set, t.pos);
      node->targets.push_back(expect_name("a variable name"));
      if (is_op(".")) {
        next();
        node->targets.push_back(expect_name("an attribute name"));
      }
      if (is_op(",")) fail(peek().pos, "unsupported construct: {% set %} of several names");
      if (peek().kind == Token::Kind::stmt_close && node->targets.size() == 1) {
        next();
        node->kind = Node::Kind::set_block;
        node->body = parse_until({"endset"}, end);
        expect_close("endset");
        return node;
      }
      expect_op("=");
      node->expr = parse_expr();
      expect_close("set");
      return node;
    }
    if (word == "break" || word == "continue") {
      expect_close(word);
      return make(word == "break" ? Node::Kind::loop_break : Node::Kind::loop_continue, t.pos);
    }
    if (word == "generation") {  // transformers' assistant-mask marker: rendered as its content
      auto node = make(Node::Kind::block, t.pos);
      expect_close(word);
      node->body = parse_until({"endgeneration"}, end);
      expect_close("endgeneration");
      return node;
    }
    fail(t.pos, "unsupported construct: {% ", word, " %}");
  }

  // Whether an expression or statements name the variable `loop` (a loop builds its loop object
  // only then). Recursion is bounded by the nesting limit the tree was parsed under.
  static bool mentions_loop(const Expr* e) {
    if (!e) return false;
    if (e->kind == Expr::Kind::name && e->name == "loop") return true;
    for (const auto& a : e->args)
      if (mentions_loop(a.get())) return true;
    for (const auto& [key, value] : e->kwargs)
      if (mentions_loop(value.get())) return true;
    return false;
  }
  static bool mentions_loop(const Body& body) {
    for (const auto& n : body) {
      if (mentions_loop(n->expr.get()) || mentions_loop(n->filter.get()) || mentions_loop(n->body) ||
          mentions_loop(n->else_body))
        return true;
      for (const auto& [cond, branch] : n->branches)
        if (mentions_loop(cond.get()) || mentions_loop(branch)) return true;
    }
    return false;
  }

  ExprPtr make_expr(Expr::Kind kind, size_t pos, std::string name = {}) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->pos = pos;
    e->name = std::move(name);
    return e;
  }
  ExprPtr binary(Expr::Kind kind, size_t pos, std::string op, ExprPtr a, ExprPtr b) {
    auto e = make_expr(kind, pos, std::move(op));
    e->args.push_back(std::move(a));
    e->args.push_back(std::move(b));
    return e;
  }

  ExprPtr parse_expr(bool allow_condition = true) {
    Nest nest(*this);
    auto e = parse_or();
    if (allow_condition && is_name("if")) {
      const size_t pos = next().pos;
      auto c = make_expr(Expr::Kind::condition, pos);
      c->args.push_back(std::move(e));
      c->args.push_back(parse_or());
      if (is_name("else")) {
        next();
        c->args.push_back(parse_expr());
      } else {
        c->args.push_back(nullptr);
      }
      return c;
    }
    return e;
  }

  ExprPtr parse_or() {
    auto e = parse_and();
    while (is_name("or")) {
      const size_t pos = next().pos;
      e = binary(Expr::Kind::logical, pos, "or", std::move(e), parse_and());
    }
    return e;
  }
  ExprPtr parse_and() {
    auto e = parse_not();
    while (is_name("and")) {
      const size_t pos = next().pos;
      e = binary(Expr::Kind::logical, pos, "and", std::move(e), parse_not());
    }
    return e;
  }
  ExprPtr parse_not() {
    Nest nest(*this);
    if (is_name("not")) {
      const size_t pos = next().pos;
      auto e = make_expr(Expr::Kind::unary, pos, "not");
      e->args.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }
  ExprPtr parse_compare() {
    auto e = parse_math1();
    while (true) {
      const size_t pos = peek().pos;
      std::string op;
      if (peek().kind == Token::Kind::op &&
          (peek().text == "==" || peek().text == "!=" || peek().text == "<" || peek().text == "<=" ||
           peek().text == ">" || peek().text == ">=")) {
        op = next().text;
      } else if (is_name("in")) {
        next();
        op = "in";
      } else if (is_name("not") && is_name("in", 1)) {
        next();
        next();
        op = "not in";
      } else {
        return e;
      }
      e = binary(Expr::Kind::binary, pos, op, std::move(e), parse_math1());
    }
  }
  ExprPtr parse_math1() {
    auto e = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token& t = next();
      e = binary(Expr::Kind::binary, t.pos, t.text, std::move(e), parse_concat());
    }
    return e;
  }
  ExprPtr parse_concat() {
    auto e = parse_math2();
    while (is_op("~")) {
      const size_t pos = next().pos;
      e = binary(Expr::Kind::binary, pos, "~", std::move(e), parse_math2());
    }
    return e;
  }
  ExprPtr parse_math2() {
    auto e = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token& t = next();
      e = binary(Expr::Kind::binary, t.pos, t.text, std::move(e), parse_pow());
    }
    return e;
  }
  ExprPtr parse_pow() {
    auto e = parse_unary(true);
    while (is_op("**")) {
      const size_t pos = next().pos;
      e = binary(Expr::Kind::binary, pos, "**", std::move(e), parse_unary(true));
    }
    return e;
  }
  ExprPtr parse_unary(bool with_filter) {
    Nest nest(*this);
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      const Token& t = next();
      e = make_expr(Expr::Kind::unary, t.pos, t.text);
      e->args.push_back(parse_unary(false));
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    if (with_filter) e = parse_filters(std::move(e));
    return e;
  }

  ExprPtr parse_primary() {
    const Token& t = peek();
    switch (t.kind) {
      case Token::Kind::name: {
        next();
        auto e = make_expr(Expr::Kind::literal, t.pos);
        if (t.text == "true" || t.text == "True") e->value = Value::boolean(true);
        else if (t.text == "false" || t.text == "False") e->value = Value::boolean(false);
        else if (t.text == "none" || t.text == "None") e->value = Value::none();
        else e = make_expr(Expr::Kind::name, t.pos, t.text);
        return e;
      }
      case Token::Kind::string: {
        std::string s;
        while (peek().kind == Token::Kind::string) s += next().text;  // "a" "b" is "ab"
        auto e = make_expr(Expr::Kind::literal, t.pos);
        e->value = Value::string(std::move(s));
        return e;
      }
      case Token::Kind::integer:
      case Token::Kind::real: {
        next();
        auto e = make_expr(Expr::Kind::literal, t.pos);
        if (t.kind == Token::Kind::integer) {
          e->value = Value::integer(integer(t));
        } else {
          double d = 0;
          const auto [end, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), d);
          if (ec != std::errc() || end != t.text.data() + t.text.size()) fail(t.pos, "the number ", t.text, " is out of range");
          e->value = Value::real(d);
        }
        return e;
      }
      case Token::Kind::op:
        if (t.text == "(") {
          next();
          auto first = parse_expr();
          if (!is_op(",")) {
            expect_op(")");
            return first;
          }
          auto tuple = make_expr(Expr::Kind::list, t.pos, "tuple");
          tuple->args.push_back(std::move(first));
          while (is_op(",")) {
            next();
            if (is_op(")")) break;
            tuple->args.push_back(parse_expr());
          }
          expect_op(")");
          return tuple;
        }
        if (t.text == "[") {
          next();
          auto list = make_expr(Expr::Kind::list, t.pos);
          while (!is_op("]")) {
            list->args.push_back(parse_expr());
            if (!is_op(",")) break;
            next();
          }
          expect_op("]");
          return list;
        }
        if (t.text == "{") {
          next();
          auto dict = make_expr(Expr::Kind::dict, t.pos);
          while (!is_op("}")) {
            auto key = parse_expr();
            expect_op(":");
            dict->args.push_back(std::move(key));
            dict->args.push_back(parse_expr());
            if (!is_op(",")) break;
            next();
          }
          expect_op("}");
          return dict;
        }
        break;
      default: break;
    }
    fail(t.pos, "expected an expression but found ", describe(t));
  }

  // An integer literal's value; one past int64 is an error naming it.
  int64_t integer(const Token& t) const {
    int64_t i = 0;
    const auto [end, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), i);
    if (ec != std::errc() || end != t.text.data() + t.text.size()) fail(t.pos, "the number ", t.text, " is out of range");
    return i;
  }

  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      if (is_op(".")) {
        const size_t pos = next().pos;
        if (peek().kind == Token::Kind::integer) {  // x.0 is x[0]
          auto index = make_expr(Expr::Kind::literal, peek().pos);
          index->value = Value::integer(integer(next()));
          e = binary(Expr::Kind::subscript, pos, "", std::move(e), std::move(index));
          continue;
        }
        auto attr = make_expr(Expr::Kind::attr, pos, expect_name("an attribute name"));
        attr->args.push_back(std::move(e));
        e = std::move(attr);
      } else if (is_op("[")) {
        e = parse_subscript(std::move(e));
      } else if (is_op("(")) {
        e = parse_call(std::move(e), Expr::Kind::call, "");
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr e) {
    const size_t pos = next().pos;
    ExprPtr start = is_op(":") ? nullptr : parse_expr();
    if (!is_op(":")) {
      expect_op("]");
      return binary(Expr::Kind::subscript, pos, "", std::move(e), std::move(start));
    }
    next();
    auto slice = make_expr(Expr::Kind::slice, pos);
    slice->args.push_back(std::move(e));
    slice->args.push_back(std::move(start));
    slice->args.push_back(is_op(":") || is_op("]") ? nullptr : parse_expr());
    ExprPtr step;
    if (is_op(":")) {
      next();
      if (!is_op("]")) step = parse_expr();
    }
    slice->args.push_back(std::move(step));
    expect_op("]");
    return slice;
  }

  // `(args, name=value)` after a callee, filter or test; the callee becomes args[0].
  ExprPtr parse_call(ExprPtr callee, Expr::Kind kind, std::string name) {
    auto call = make_expr(kind, peek().pos, std::move(name));
    call->args.push_back(std::move(callee));
    expect_op("(");
    while (!is_op(")")) {
      if (is_op("*") || is_op("**")) fail(peek().pos, "unsupported construct: *args and **kwargs");
      if (peek().kind == Token::Kind::name && is_op("=", 1)) {
        std::string key = next().text;
        next();
        call->kwargs.emplace_back(std::move(key), parse_expr());
      } else {
        if (!call->kwargs.empty()) fail(peek().pos, "a positional argument after a keyword argument");
        call->args.push_back(parse_expr());
      }
      if (!is_op(",")) break;
      next();
    }
    expect_op(")");
    return call;
  }

  ExprPtr parse_filters(ExprPtr e) {
    while (true) {
      if (is_op("|")) {
        next();
        const size_t pos = peek().pos;
        std::string name = expect_name("a filter name");
        if (is_op("(")) {
          e = parse_call(std::move(e), Expr::Kind::filter, std::move(name));
        } else {
          auto f = make_expr(Expr::Kind::filter, pos, std::move(name));
          f->args.push_back(std::move(e));
          e = std::move(f);
        }
        e->pos = pos;
      } else if (is_name("is")) {
        next();
        const bool negated = is_name("not") && (next(), true);
        const size_t pos = peek().pos;
        std::string name = peek().kind == Token::Kind::op && (peek().text == "==" || peek().text == "!=" ||
                                                              peek().text == "<" || peek().text == ">")
                               ? next().text
                               : expect_name("a test name");
        ExprPtr test;
        if (is_op("(")) {
          test = parse_call(std::move(e), Expr::Kind::test, std::move(name));
        } else {
          test = make_expr(Expr::Kind::test, pos, std::move(name));
          test->args.push_back(std::move(e));
          const Token& t = peek();
          const bool argument = t.kind == Token::Kind::string || t.kind == Token::Kind::integer ||
                                t.kind == Token::Kind::real || is_op("[") || is_op("{") ||
                                (t.kind == Token::Kind::name && t.text != "else" && t.text != "or" &&
                                 t.text != "and" && t.text != "if" && t.text != "is" && t.text != "in" &&
                                 t.text != "not");
          if (argument) test->args.push_back(parse_postfix(parse_primary()));
        }
        test->pos = pos;
        test->negated = negated;
        e = std::move(test);
      } else if (is_op("(")) {
        e = parse_call(std::move(e), Expr::Kind::call, "");
      } else {
        return e;
      }
    }
  }

  std::string_view src_;
  const std::vector<Token>& tokens_;
  size_t max_nesting_;
  size_t at_ = 0;
  size_t depth_ = 0;
};

}  // namespace

Body parse(std::string_view source, const std::vector<Token>& tokens, size_t max_nesting) {
  return Parser(source, tokens, max_nesting).parse_template();
}

}  // namespace nf::jinja
