// The Jinja evaluator (jinja/template.h): walks the syntax tree with jinja2's scoping (a for loop's body
// is a scope of its own, so `set` inside it is forgotten after it; namespace() objects carry
// values out) and Python's operators, counting steps and output bytes against Limits.
#include <cmath>

#include "jinja/ast.h"
#include "jinja/builtins.h"
#include "nanoformer/core/error.h"

namespace nf::jinja {
namespace {

class Renderer {
 public:
  Renderer(const Template::Parsed& parsed, const Limits& limits, const Value& context)
      : src_(parsed.source), limits_(limits) {
    NF_CHECK(context.is_dict(), "chat template: the context is a ", context.type_name(), ", not a dict");
    scopes_.emplace_back(context.as_dict().items);
    out_ = &output_;
  }

  ~Renderer() {
    for (const Value& ns : namespaces_) ns.namespace_dict().items.clear();  // breaks cycles such as ns.self = ns
  }

  std::string run(const Body& body) {
    exec(body);
    return std::move(output_);
  }

 private:
  enum class Flow { normal, loop_break, loop_continue };

  template <class... Args>
  [[noreturn]] void fail(size_t pos, const Args&... args) const {
    NF_FAIL("chat template ", where(src_, pos), ": ", args...);
  }

  void step(size_t pos) {
    if (++steps_ > limits_.max_steps)
      fail(pos, "rendering took more than ", limits_.max_steps, " steps (a runaway template?)");
  }

  void emit(const std::string& s, size_t pos) {
    if (out_->size() + s.size() > limits_.max_output)
      fail(pos, "the output passes the limit of ", limits_.max_output, " bytes (a runaway template?)");
    *out_ += s;
  }

  Value lookup(const std::string& name) const {
    for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope)
      for (const auto& [key, value] : *scope)
        if (key == name) return value;
    if (is_function(name)) return Value::function(name);
    return {};
  }

  void assign(const std::string& name, Value value) {
    for (auto& [key, v] : scopes_.back())
      if (key == name) {
        v = std::move(value);
        return;
      }
    scopes_.back().emplace_back(name, std::move(value));
  }

  Flow exec(const Body& body) {
    for (const auto& node : body) {
      const Flow flow = exec(*node);
      if (flow != Flow::normal) return flow;
    }
    return Flow::normal;
  }

  Flow exec(const Node& n) {
    step(n.pos);
    switch (n.kind) {
      case Node::Kind::text: emit(n.text, n.pos); return Flow::normal;
      case Node::Kind::output: emit(eval(*n.expr).str(), n.pos); return Flow::normal;
      case Node::Kind::if_chain:
        for (const auto& [cond, body] : n.branches)
          if (eval(*cond).truthy()) return exec(body);
        return exec(n.else_body);
      case Node::Kind::for_loop: return exec_for(n);
      case Node::Kind::set: {
        Value v = eval(*n.expr);
        if (n.targets.size() == 1) {
          assign(n.targets[0], std::move(v));
        } else {
          const Value target = lookup(n.targets[0]);
          if (!target.is_dict() || !target.as_dict().is_namespace)
            fail(n.pos, "{% set ", n.targets[0], ".", n.targets[1], " %} needs a namespace() object, but ",
                 n.targets[0], " is a ", target.type_name());
          target.namespace_dict().set(n.targets[1], std::move(v));
        }
        return Flow::normal;
      }
      case Node::Kind::set_block: {
        std::string captured;
        std::string* saved = out_;
        out_ = &captured;
        const Flow flow = exec(n.body);
        out_ = saved;
        assign(n.targets[0], Value::string(std::move(captured)));
        return flow;
      }
      case Node::Kind::loop_break:
        if (loops_ == 0) fail(n.pos, "{% break %} outside a loop");
        return Flow::loop_break;
      case Node::Kind::loop_continue:
        if (loops_ == 0) fail(n.pos, "{% continue %} outside a loop");
        return Flow::loop_continue;
      case Node::Kind::block: return exec(n.body);
    }
    return Flow::normal;
  }

  Flow exec_for(const Node& n) {
    const Value iterable = eval(*n.expr);
    List converted;
    switch (iterable.kind()) {
      case Value::Kind::list: break;
      case Value::Kind::undefined: break;
      case Value::Kind::dict:
        for (const auto& [key, value] : iterable.as_dict().items) converted.push_back(Value::string(key));
        break;
      case Value::Kind::string:
        check_items(utf8_length(iterable.as_string()), limits_);
        for (const auto c : characters(iterable.as_string())) converted.push_back(Value::string(std::string(c)));
        break;
      default: fail(n.expr->pos, "cannot loop over a value of type ", iterable.type_name());
    }
    const List* all = iterable.is_list() ? &iterable.as_list() : &converted;
    List kept;
    if (n.filter) {
      for (const Value& item : *all) {
        scopes_.emplace_back();
        bind(n, item);
        const bool keep = eval(*n.filter).truthy();
        scopes_.pop_back();
        if (keep) kept.push_back(item);
      }
      all = &kept;
    }
    const List& items = *all;
    if (items.empty()) return exec(n.else_body);
    ++loops_;
    const auto length = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < length; ++i) {
      step(n.pos);
      scopes_.emplace_back();
      bind(n, items[static_cast<size_t>(i)]);
      if (n.uses_loop) {
        Dict loop;
        loop.items = {{"index", Value::integer(i + 1)},
                      {"index0", Value::integer(i)},
                      {"first", Value::boolean(i == 0)},
                      {"last", Value::boolean(i == length - 1)},
                      {"length", Value::integer(length)},
                      {"revindex", Value::integer(length - i)},
                      {"revindex0", Value::integer(length - i - 1)}};
        if (i > 0) loop.items.emplace_back("previtem", items[static_cast<size_t>(i - 1)]);
        if (i + 1 < length) loop.items.emplace_back("nextitem", items[static_cast<size_t>(i + 1)]);
        assign("loop", Value::dict(std::move(loop)));
      }
      const Flow flow = exec(n.body);
      scopes_.pop_back();
      if (flow == Flow::loop_break) break;
    }
    --loops_;
    return Flow::normal;
  }

  void bind(const Node& n, const Value& item) {
    if (n.targets.size() == 1) {
      assign(n.targets[0], item);
      return;
    }
    if (!item.is_list() || item.as_list().size() != n.targets.size())
      fail(n.pos, "cannot unpack a ", item.type_name(), " into ", n.targets.size(), " loop variables");
    for (size_t k = 0; k < n.targets.size(); ++k) assign(n.targets[k], item.as_list()[k]);
  }

  CallArgs eval_args(const Expr& e, size_t first) {
    CallArgs call;
    for (size_t i = first; i < e.args.size(); ++i) call.args.push_back(eval(*e.args[i]));
    for (const auto& [key, value] : e.kwargs) call.kwargs.emplace_back(key, eval(*value));
    return call;
  }

  // A short name of an expression for "'x' is undefined".
  static std::string describe(const Expr& e) {
    if (e.kind == Expr::Kind::name) return e.name;
    if (e.kind == Expr::Kind::attr) return describe(*e.args[0]) + "." + e.name;
    if (e.kind == Expr::Kind::subscript) return describe(*e.args[0]) + "[...]";
    return "the value";
  }

  Value eval(const Expr& e) {
    step(e.pos);
    try {
      return eval_unchecked(e);
    } catch (const Error& error) {
      const std::string message = error.what();
      if (message.rfind("chat template ", 0) == 0) throw;
      fail(e.pos, message);
    }
  }

  Value eval_unchecked(const Expr& e) {
    using K = Expr::Kind;
    switch (e.kind) {
      case K::literal: return e.value;
      case K::name: return lookup(e.name);
      case K::list: {
        List items;
        for (const auto& a : e.args) items.push_back(eval(*a));
        return nested(e.name == "tuple" ? Value::tuple(std::move(items)) : Value::list(std::move(items)), e.pos);
      }
      case K::dict: {
        Dict d;
        for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
          const Value key = eval(*e.args[i]);
          if (!key.is_string()) fail(e.args[i]->pos, "unsupported construct: a dict key of type ", key.type_name());
          d.set(key.as_string(), eval(*e.args[i + 1]));
        }
        return nested(Value::dict(std::move(d)), e.pos);
      }
      case K::attr: {
        const Value object = eval(*e.args[0]);
        if (object.is_undefined()) fail(e.pos, "'", describe(*e.args[0]), "' is undefined");
        if (!object.is_dict()) return {};
        const Value* found = object.as_dict().find(e.name);
        return found ? *found : Value();
      }
      case K::subscript: return subscript(e, eval(*e.args[0]), eval(*e.args[1]));
      case K::slice: return slice(e);
      case K::call: {
        const Expr& callee = *e.args[0];
        if (callee.kind == K::attr) {
          const Value object = eval(*callee.args[0]);
          if (object.is_undefined()) fail(callee.pos, "'", describe(*callee.args[0]), "' is undefined");
          return call_method(object, callee.name, eval_args(e, 1), limits_);
        }
        const Value f = eval(callee);
        if (f.kind() != Value::Kind::function) {
          if (f.is_undefined()) fail(callee.pos, "'", describe(callee), "' is undefined");
          fail(callee.pos, "unsupported construct: calling a ", f.type_name());
        }
        Value result = call_function(f.as_string(), eval_args(e, 1), limits_);
        if (result.is_dict() && result.as_dict().is_namespace) namespaces_.push_back(result);
        return result;
      }
      case K::filter: return apply_filter(e.name, eval(*e.args[0]), eval_args(e, 1), limits_);
      case K::test: return Value::boolean(apply_test(e.name, eval(*e.args[0]), eval_args(e, 1)) != e.negated);
      case K::unary: {
        const Value v = eval(*e.args[0]);
        if (e.name == "not") return Value::boolean(!v.truthy());
        if (!v.is_number()) fail(e.pos, "bad operand type for unary ", e.name, ": ", v.type_name());
        if (e.name == "+") return v.kind() == Value::Kind::real ? v : Value::integer(v.as_int());
        return v.kind() == Value::Kind::real ? Value::real(-v.as_double()) : Value::integer(-v.as_int());
      }
      case K::logical: {
        Value a = eval(*e.args[0]);
        if (e.name == "and" ? !a.truthy() : a.truthy()) return a;
        return eval(*e.args[1]);
      }
      case K::condition: {
        if (eval(*e.args[1]).truthy()) return eval(*e.args[0]);
        return e.args[2] ? eval(*e.args[2]) : Value();
      }
      case K::binary: return binary(e, eval(*e.args[0]), eval(*e.args[1]));
    }
    return {};
  }

  // Values nest no deeper than the parser lets source nest, so printing or freeing them cannot
  // overflow the stack.
  Value nested(Value v, size_t pos) const {
    if (v.depth() > limits_.max_nesting) fail(pos, "lists and dicts nest deeper than ", limits_.max_nesting, " levels");
    return v;
  }

  // Python's index rules: negative counts from the end; out of range is undefined (as jinja2's).
  static bool resolve_index(int64_t index, size_t size, size_t& out) {
    const int64_t n = static_cast<int64_t>(size);
    if (index < 0) index += n;
    if (index < 0 || index >= n) return false;
    out = static_cast<size_t>(index);
    return true;
  }

  Value subscript(const Expr& e, const Value& object, const Value& key) {
    if (object.is_undefined()) fail(e.pos, "'", describe(*e.args[0]), "' is undefined");
    size_t at = 0;
    if (object.is_dict()) {
      if (!key.is_string()) return {};
      const Value* found = object.as_dict().find(key.as_string());
      return found ? *found : Value();
    }
    if (key.kind() != Value::Kind::integer && key.kind() != Value::Kind::boolean) return {};
    if (object.is_list()) return resolve_index(key.as_int(), object.as_list().size(), at) ? object.as_list()[at] : Value();
    if (object.is_string()) {
      const auto cs = characters(object.as_string());
      return resolve_index(key.as_int(), cs.size(), at) ? Value::string(std::string(cs[at])) : Value();
    }
    return {};
  }

  Value slice(const Expr& e) {
    const Value object = eval(*e.args[0]);
    auto part = [&](size_t i) -> std::optional<int64_t> {
      if (!e.args[i]) return std::nullopt;
      const Value v = eval(*e.args[i]);
      if (v.is_none()) return std::nullopt;
      if (v.kind() != Value::Kind::integer && v.kind() != Value::Kind::boolean)
        fail(e.args[i]->pos, "slice indices must be integers, not ", v.type_name());
      return v.as_int();
    };
    const auto start = part(1), stop = part(2), step_part = part(3);
    const int64_t step = step_part.value_or(1);
    if (step == 0) fail(e.pos, "slice step cannot be zero");
    std::vector<std::string_view> chars;
    int64_t n = 0;
    if (object.is_list()) {
      n = static_cast<int64_t>(object.as_list().size());
    } else if (object.is_string()) {
      chars = characters(object.as_string());
      n = static_cast<int64_t>(chars.size());
    } else {
      if (object.is_undefined()) fail(e.pos, "'", describe(*e.args[0]), "' is undefined");
      fail(e.pos, "cannot slice a ", object.type_name());
    }
    // Python's slice.indices
    auto clamp = [&](std::optional<int64_t> v, int64_t fallback) {
      if (!v) return fallback;
      int64_t x = *v < 0 ? *v + n : *v;
      if (step > 0) return std::clamp<int64_t>(x, 0, n);
      return std::clamp<int64_t>(x, -1, n - 1);
    };
    const int64_t lo = clamp(start, step > 0 ? 0 : n - 1), hi = clamp(stop, step > 0 ? n : -1);
    List items;
    std::string text;
    for (int64_t i = lo; step > 0 ? i < hi : i > hi; i += step) {
      if (object.is_list()) items.push_back(object.as_list()[static_cast<size_t>(i)]);
      else text += chars[static_cast<size_t>(i)];
    }
    return object.is_list() ? Value::list(std::move(items)) : Value::string(std::move(text));
  }

  bool contains(const Expr& e, const Value& needle, const Value& haystack) {
    if (haystack.is_string()) {
      if (!needle.is_string()) fail(e.pos, "'in <string>' requires a string on the left, not ", needle.type_name());
      return haystack.as_string().find(needle.as_string()) != std::string::npos;
    }
    if (haystack.is_list())
      return std::any_of(haystack.as_list().begin(), haystack.as_list().end(),
                         [&](const Value& x) { return equal(needle, x); });
    if (haystack.is_dict()) return needle.is_string() && haystack.as_dict().find(needle.as_string()) != nullptr;
    if (haystack.is_undefined()) return false;
    fail(e.pos, "argument of type ", haystack.type_name(), " is not iterable");
  }

  int compare(const Expr& e, const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) {
      if (a.kind() == Value::Kind::real || b.kind() == Value::Kind::real)
        return a.as_double() < b.as_double() ? -1 : a.as_double() > b.as_double() ? 1 : 0;
      return a.as_int() < b.as_int() ? -1 : a.as_int() > b.as_int() ? 1 : 0;
    }
    if (a.is_string() && b.is_string()) return a.as_string().compare(b.as_string()) < 0 ? -1 : a.as_string() == b.as_string() ? 0 : 1;
    if (a.is_list() && b.is_list()) {
      const List &x = a.as_list(), &y = b.as_list();
      for (size_t i = 0; i < x.size() && i < y.size(); ++i)
        if (!equal(x[i], y[i])) return compare(e, x[i], y[i]);
      return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
    }
    fail(e.pos, "'", e.name, "' is not supported between ", a.type_name(), " and ", b.type_name());
  }

  Value binary(const Expr& e, const Value& a, const Value& b) {
    const std::string& op = e.name;
    if (op == "==") return Value::boolean(equal(a, b));
    if (op == "!=") return Value::boolean(!equal(a, b));
    if (op == "<") return Value::boolean(compare(e, a, b) < 0);
    if (op == "<=") return Value::boolean(compare(e, a, b) <= 0);
    if (op == ">") return Value::boolean(compare(e, a, b) > 0);
    if (op == ">=") return Value::boolean(compare(e, a, b) >= 0);
    if (op == "in") return Value::boolean(contains(e, a, b));
    if (op == "not in") return Value::boolean(!contains(e, a, b));
    if (op == "~") {
      std::string s = a.str() + b.str();
      check_size(s.size(), limits_);
      return Value::string(std::move(s));
    }
    if (op == "+" && a.is_string() && b.is_string()) {
      check_size(a.as_string().size() + b.as_string().size(), limits_);
      return Value::string(a.as_string() + b.as_string());
    }
    if (op == "+" && a.is_list() && b.is_list()) {
      check_items(a.as_list().size() + b.as_list().size(), limits_);
      List items = a.as_list();
      items.insert(items.end(), b.as_list().begin(), b.as_list().end());
      return nested(Value::list(std::move(items)), e.pos);
    }
    if (op == "*" && (a.is_string() || a.is_list()) && b.kind() == Value::Kind::integer) return repeat(a, b.as_int());
    if (op == "*" && (b.is_string() || b.is_list()) && a.kind() == Value::Kind::integer) return repeat(b, a.as_int());
    if (!a.is_number() || !b.is_number()) {
      if (op == "%" && a.is_string()) fail(e.pos, "unsupported construct: '%' string formatting");
      fail(e.pos, "unsupported operand types for ", op, ": ", a.type_name(), " and ", b.type_name());
    }
    const bool real = a.kind() == Value::Kind::real || b.kind() == Value::Kind::real;
    const double x = a.as_double(), y = b.as_double();
    const int64_t i = a.as_int(), j = b.as_int();
    int64_t r = 0;
    if (op == "/") {
      if (y == 0) fail(e.pos, "division by zero");
      return Value::real(x / y);
    }
    if (op == "**") {
      if (real || j < 0) return Value::real(std::pow(x, y));
      int64_t p = 1, base = i;  // by squaring: log2(j) steps, whatever j is
      for (int64_t k = j; k > 0; k >>= 1) {
        if ((k & 1) && __builtin_mul_overflow(p, base, &p)) fail(e.pos, "integer overflow in **");
        if (k > 1 && __builtin_mul_overflow(base, base, &base)) fail(e.pos, "integer overflow in **");
      }
      return Value::integer(p);
    }
    if (real) {
      if (op == "+") return Value::real(x + y);
      if (op == "-") return Value::real(x - y);
      if (op == "*") return Value::real(x * y);
      if (y == 0) fail(e.pos, "division by zero");
      if (op == "//") return Value::real(std::floor(x / y));
      if (op == "%") return Value::real(x - std::floor(x / y) * y);
    } else {
      if (op == "+" && !__builtin_add_overflow(i, j, &r)) return Value::integer(r);
      if (op == "-" && !__builtin_sub_overflow(i, j, &r)) return Value::integer(r);
      if (op == "*" && !__builtin_mul_overflow(i, j, &r)) return Value::integer(r);
      if (op == "//" || op == "%") {
        if (j == 0) fail(e.pos, "division by zero");
        if (i == INT64_MIN && j == -1) fail(e.pos, "integer overflow in ", op);
        int64_t q = i / j, m = i % j;
        if (m != 0 && ((m < 0) != (j < 0))) {
          --q;
          m += j;
        }
        return Value::integer(op == "//" ? q : m);
      }
      if (op == "+" || op == "-" || op == "*") fail(e.pos, "integer overflow in ", op);
    }
    fail(e.pos, "unsupported operator ", op);
  }

  Value repeat(const Value& v, int64_t times) {
    times = std::max<int64_t>(times, 0);
    if (v.is_string()) {
      check_size(v.as_string().size() * static_cast<size_t>(std::min<int64_t>(times, INT32_MAX)), limits_);
      std::string out;
      for (int64_t k = 0; k < times; ++k) out += v.as_string();
      return Value::string(std::move(out));
    }
    check_items(v.as_list().size() * static_cast<size_t>(std::min<int64_t>(times, INT32_MAX)), limits_);
    List out;
    for (int64_t k = 0; k < times; ++k) out.insert(out.end(), v.as_list().begin(), v.as_list().end());
    return Value::list(std::move(out));
  }

  std::string_view src_;
  const Limits& limits_;
  // the variables of each scope, innermost last (a scope holds a few names: a linear search is fastest)
  std::vector<std::vector<std::pair<std::string, Value>>> scopes_;
  std::string output_;
  std::string* out_ = nullptr;
  std::vector<Value> namespaces_;
  size_t steps_ = 0;
  int loops_ = 0;
};

// jinja2's source preparation: "\r\n" and "\r" become "\n", and one trailing newline is dropped
// (keep_trailing_newline=False).
std::string normalise_newlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

Template::Template(std::string_view source, Limits limits) : parsed_(std::make_unique<Parsed>()), limits_(limits) {
  parsed_->source = normalise_newlines(source);
  parsed_->body = parse(parsed_->source, lex(parsed_->source), limits_.max_nesting);
}

Template::~Template() = default;
Template::Template(Template&&) noexcept = default;
Template& Template::operator=(Template&&) noexcept = default;

std::string Template::render(const Value& context) const { return Renderer(*parsed_, limits_, context).run(parsed_->body); }

}  // namespace nf::jinja
