// Filters, tests, methods and functions of the Jinja subset (jinja/builtins.h), as jinja2's and
// Python's, and transformers' tojson (json.dumps with ensure_ascii=False) and raise_exception.
#include "jinja/builtins.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <ctime>

#include "nanoformer/core/error.h"
#include "nanoformer/tokenizer/unicode.h"

namespace nf::jinja {
namespace {

bool python_space(uint32_t cp) {
  return (cp >= 0x1C && cp <= 0x1F) || (tokenizer::unicode::classify(cp) & tokenizer::unicode::kSpace) != 0;
}

uint32_t code_point(std::string_view c) {
  return tokenizer::unicode::decode_utf8(reinterpret_cast<const unsigned char*>(c.data()), c.size()).value;
}

// The argument at position `index` or keyword `name`, else `fallback`.
const Value& arg(const CallArgs& call, size_t index, std::string_view name, const Value& fallback) {
  for (const auto& [key, value] : call.kwargs)
    if (key == name) return value;
  return index < call.args.size() ? call.args[index] : fallback;
}

void check_arity(std::string_view what, const CallArgs& call, size_t max_args,
                 std::initializer_list<std::string_view> keywords = {}) {
  NF_CHECK(call.args.size() <= max_args, what, " takes at most ", max_args, " arguments, not ", call.args.size());
  for (const auto& [key, value] : call.kwargs)
    NF_CHECK(std::find(keywords.begin(), keywords.end(), key) != keywords.end(),
             "unsupported construct: ", what, "'s argument ", key, "=");
}

const std::string& need_string(const Value& v, std::string_view what) {
  NF_CHECK(v.is_string(), what, " needs a string, not ", v.type_name());
  return v.as_string();
}

int64_t need_int(const Value& v, std::string_view what) {
  NF_CHECK(v.kind() == Value::Kind::integer || v.kind() == Value::Kind::boolean, what, " needs an integer, not ",
           v.type_name());
  return v.as_int();
}

// Python's str.strip/lstrip/rstrip: whitespace, or any character of `chars`.
std::string strip(const std::string& s, const Value& chars, bool left, bool right) {
  const auto cs = characters(s);
  std::vector<std::string_view> set;
  if (!chars.is_none() && !chars.is_undefined()) set = characters(need_string(chars, "strip"));
  auto strippable = [&](std::string_view c) {
    return chars.is_none() || chars.is_undefined() ? python_space(code_point(c))
                                                   : std::find(set.begin(), set.end(), c) != set.end();
  };
  size_t begin = 0, end = cs.size();
  while (left && begin < end && strippable(cs[begin])) ++begin;
  while (right && end > begin && strippable(cs[end - 1])) --end;
  if (begin == end) return {};
  return std::string(cs[begin].data(), static_cast<size_t>(cs[end - 1].data() + cs[end - 1].size() - cs[begin].data()));
}

// Python's str.split(sep=None, maxsplit=-1).
Value split(const std::string& s, const Value& sep, int64_t maxsplit) {
  List parts;
  if (sep.is_none() || sep.is_undefined()) {
    const auto cs = characters(s);
    size_t i = 0;
    while (i < cs.size()) {
      while (i < cs.size() && python_space(code_point(cs[i]))) ++i;
      if (i == cs.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
        const char* begin = cs[i].data();
        std::string rest(begin, static_cast<size_t>(s.data() + s.size() - begin));
        parts.push_back(Value::string(strip(rest, Value::none(), false, true)));
        break;
      }
      const char* begin = cs[i].data();
      while (i < cs.size() && !python_space(code_point(cs[i]))) ++i;
      const char* end = i < cs.size() ? cs[i].data() : s.data() + s.size();
      parts.push_back(Value::string(std::string(begin, static_cast<size_t>(end - begin))));
    }
    return Value::list(std::move(parts));
  }
  const std::string& separator = need_string(sep, "split");
  NF_CHECK(!separator.empty(), "split: empty separator");
  size_t pos = 0;
  while (true) {
    const size_t at = maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit ? std::string::npos
                                                                                       : s.find(separator, pos);
    if (at == std::string::npos) {
      parts.push_back(Value::string(s.substr(pos)));
      break;
    }
    parts.push_back(Value::string(s.substr(pos, at - pos)));
    pos = at + separator.size();
  }
  return Value::list(std::move(parts));
}

std::string replace(const std::string& s, const std::string& old, const std::string& with, int64_t count,
                    const Limits& limits) {
  const auto limit = count < 0 ? SIZE_MAX : static_cast<size_t>(count);
  std::string out;
  if (old.empty()) {  // Python inserts `with` before every character and at the end (up to count times)
    size_t inserted = 0;
    for (const auto c : characters(s)) {
      if (inserted < limit) {
        out += with;
        ++inserted;
      }
      out += c;
      check_size(out.size(), limits);
    }
    if (inserted < limit) out += with;
    return out;
  }
  size_t pos = 0;
  for (size_t n = 0; n < limit; ++n) {
    const size_t at = s.find(old, pos);
    if (at == std::string::npos) break;
    out += s.substr(pos, at - pos) + with;
    check_size(out.size(), limits);
    pos = at + old.size();
  }
  return out + s.substr(pos);
}

std::string ascii_case(std::string s, int mode) {  // 0 lower, 1 upper, 2 capitalize, 3 title
  bool word_start = true;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    const bool alpha = std::isalpha(c) != 0;
    bool upper = mode == 1 || (mode == 2 && i == 0) || (mode == 3 && word_start);
    s[i] = static_cast<char>(upper ? std::toupper(c) : std::tolower(c));
    word_start = !alpha;
  }
  return s;
}

// The items a filter iterates over, by value: a list's items, a string's characters, a dict's
// keys, nothing for undefined. (By value, so a loop over the result never outlives it.)
List as_list(const Value& v, std::string_view what, const Limits& limits) {
  switch (v.kind()) {
    case Value::Kind::list: return v.as_list();
    case Value::Kind::undefined: return {};
    case Value::Kind::string: {
      check_items(utf8_length(v.as_string()), limits);
      List items;
      for (const auto c : characters(v.as_string())) items.push_back(Value::string(std::string(c)));
      return items;
    }
    case Value::Kind::dict: {
      List keys;
      for (const auto& [key, value] : v.as_dict().items) keys.push_back(Value::string(key));
      return keys;
    }
    default: NF_FAIL(what, ": a value of type ", v.type_name(), " is not iterable");
  }
}

// jinja2's environment.getattr for selectattr/map: a dict's key, else undefined.
Value attribute(const Value& v, const std::string& name) {
  if (!v.is_dict()) return {};
  const Value* found = v.as_dict().find(name);
  return found ? *found : Value();
}

}  // namespace

std::vector<std::string_view> characters(std::string_view s) {
  std::vector<std::string_view> out;
  for (size_t i = 0; i < s.size();) {
    const auto cp = tokenizer::unicode::decode_utf8(reinterpret_cast<const unsigned char*>(s.data() + i), s.size() - i);
    out.push_back(s.substr(i, cp.length));
    i += cp.length;
  }
  return out;
}

void check_size(size_t size, const Limits& limits) {
  NF_CHECK(size <= limits.max_output, "a string or list of ", size, " would pass the limit of ", limits.max_output,
           " (a runaway template?)");
}

void check_items(size_t items, const Limits& limits) {
  NF_CHECK(items <= limits.max_list, "a list of ", items, " items would pass the limit of ", limits.max_list,
           " (a runaway template?)");
}

bool is_function(std::string_view name) {
  return name == "namespace" || name == "raise_exception" || name == "range" || name == "strftime_now";
}

Value call_function(std::string_view name, const CallArgs& call, const Limits& limits) {
  if (name == "namespace") {
    Dict d;
    d.is_namespace = true;
    NF_CHECK(call.args.size() <= 1, "namespace() takes at most one positional argument (a dict)");
    if (!call.args.empty()) {
      NF_CHECK(call.args[0].is_dict(), "namespace() takes a dict, not ", call.args[0].type_name());
      d.items = call.args[0].as_dict().items;
    }
    for (const auto& [key, value] : call.kwargs) d.set(key, value);
    return Value::dict(std::move(d));
  }
  if (name == "raise_exception") {
    NF_CHECK(call.args.size() == 1, "raise_exception takes one argument");
    NF_FAIL("raise_exception: ", call.args[0].str());
  }
  if (name == "range") {
    check_arity("range", call, 3);
    NF_CHECK(!call.args.empty(), "range takes 1 to 3 arguments");
    int64_t start = 0, stop = 0, step = 1;
    if (call.args.size() == 1) {
      stop = need_int(call.args[0], "range");
    } else {
      start = need_int(call.args[0], "range");
      stop = need_int(call.args[1], "range");
      if (call.args.size() == 3) step = need_int(call.args[2], "range");
    }
    NF_CHECK(step != 0, "range: the step is 0");
    const double count = std::max(0.0, std::ceil((static_cast<double>(stop) - static_cast<double>(start)) /
                                                 static_cast<double>(step)));
    NF_CHECK(count <= static_cast<double>(limits.max_list), "range of ", count, " items passes the limit of ",
             limits.max_list);
    List items;
    for (int64_t i = 0; i < static_cast<int64_t>(count); ++i) items.push_back(Value::integer(start + i * step));
    return Value::list(std::move(items));
  }
  if (name == "strftime_now") {
    NF_CHECK(call.args.size() == 1, "strftime_now takes one argument (the format)");
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    char buf[256];
    const size_t n = std::strftime(buf, sizeof buf, need_string(call.args[0], "strftime_now").c_str(), &local);
    return Value::string(std::string(buf, n));
  }
  NF_FAIL("unsupported construct: the function ", name, "()");
}

Value call_method(const Value& object, std::string_view name, const CallArgs& call, const Limits& limits) {
  const std::string what = std::string(object.type_name()) + "." + std::string(name) + "()";
  const Value none = Value::none();
  if (object.is_string()) {
    const std::string& s = object.as_string();
    if (name == "startswith" || name == "endswith") {
      check_arity(what, call, 1);
      NF_CHECK(call.args.size() == 1, what, " takes one argument");
      const List candidates = call.args[0].is_list() ? call.args[0].as_list() : List{call.args[0]};
      for (const Value& c : candidates) {
        const std::string& x = need_string(c, what);
        const bool hit = name == "startswith" ? s.compare(0, x.size(), x) == 0 && s.size() >= x.size()
                                              : s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
        if (hit) return Value::boolean(true);
      }
      return Value::boolean(false);
    }
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
      check_arity(what, call, 1);
      return Value::string(strip(s, arg(call, 0, "chars", none), name != "rstrip", name != "lstrip"));
    }
    if (name == "split") {
      check_arity(what, call, 2, {"sep", "maxsplit"});
      const Value minus_one = Value::integer(-1);
      return split(s, arg(call, 0, "sep", none), need_int(arg(call, 1, "maxsplit", minus_one), what));
    }
    if (name == "replace") {
      check_arity(what, call, 3, {"count"});
      NF_CHECK(call.args.size() >= 2, what, " takes two or three arguments");
      const Value minus_one = Value::integer(-1);
      return Value::string(replace(s, need_string(call.args[0], what), need_string(call.args[1], what),
                                   need_int(arg(call, 2, "count", minus_one), what), limits));
    }
    if (name == "upper" || name == "lower" || name == "capitalize" || name == "title") {
      check_arity(what, call, 0);
      return Value::string(ascii_case(s, name == "lower" ? 0 : name == "upper" ? 1 : name == "capitalize" ? 2 : 3));
    }
    if (name == "find" || name == "count") {
      check_arity(what, call, 1);
      NF_CHECK(call.args.size() == 1, what, " takes one argument");
      const std::string& x = need_string(call.args[0], what);
      if (name == "find") {
        const size_t at = s.find(x);
        return Value::integer(at == std::string::npos ? -1 : static_cast<int64_t>(utf8_length(s.substr(0, at))));
      }
      if (x.empty()) return Value::integer(static_cast<int64_t>(utf8_length(s) + 1));
      int64_t n = 0;
      for (size_t at = s.find(x); at != std::string::npos; at = s.find(x, at + x.size())) ++n;
      return Value::integer(n);
    }
    if (name == "join") {
      check_arity(what, call, 1);
      NF_CHECK(call.args.size() == 1, what, " takes one argument");
      std::string out;
      const List items = as_list(call.args[0], what, limits);
      for (size_t i = 0; i < items.size(); ++i) {
        out += (i ? s : "") + need_string(items[i], what);
        check_size(out.size(), limits);
      }
      return Value::string(std::move(out));
    }
  }
  if (object.is_dict() && !object.as_dict().is_namespace) {
    const Dict& d = object.as_dict();
    if (name == "get") {
      check_arity(what, call, 2);
      NF_CHECK(!call.args.empty(), what, " takes one or two arguments");
      const Value* found = call.args[0].is_string() ? d.find(call.args[0].as_string()) : nullptr;
      return found ? *found : call.args.size() > 1 ? call.args[1] : none;
    }
    if (name == "items" || name == "keys" || name == "values") {
      check_arity(what, call, 0);
      List out;
      for (const auto& [key, value] : d.items) {
        if (name == "items") out.push_back(Value::tuple({Value::string(key), value}));
        else out.push_back(name == "keys" ? Value::string(key) : value);
      }
      return Value::list(std::move(out));
    }
  }
  NF_FAIL("unsupported construct: the method ", what);
}

bool apply_test(std::string_view name, const Value& in, const CallArgs& call) {
  using K = Value::Kind;
  auto one = [&]() -> const Value& {
    NF_CHECK(call.args.size() == 1, "the test '", name, "' takes one argument");
    return call.args[0];
  };
  if (name == "defined") return !in.is_undefined();
  if (name == "undefined") return in.is_undefined();
  if (name == "none") return in.is_none();
  if (name == "string") return in.is_string();
  if (name == "number") return in.is_number();
  if (name == "integer") return in.kind() == K::integer;
  if (name == "float") return in.kind() == K::real;
  if (name == "boolean") return in.kind() == K::boolean;
  if (name == "true") return in.kind() == K::boolean && in.as_bool();
  if (name == "false") return in.kind() == K::boolean && !in.as_bool();
  if (name == "mapping") return in.is_dict() && !in.as_dict().is_namespace;
  if (name == "iterable") return in.is_list() || in.is_dict() || in.is_string() || in.is_undefined();
  if (name == "sequence") return in.is_list() || in.is_dict() || in.is_string();
  if (name == "callable") return in.kind() == K::function;
  if (name == "odd" || name == "even") return need_int(in, name) % 2 == (name == "odd" ? 1 : 0) || (name == "odd" && need_int(in, name) % 2 == -1);
  if (name == "divisibleby") {
    const int64_t d = need_int(one(), name);
    NF_CHECK(d != 0, "divisibleby 0");
    return need_int(in, name) % d == 0;
  }
  if (name == "eq" || name == "equalto" || name == "==") return equal(in, one());
  if (name == "ne" || name == "!=") return !equal(in, one());
  if (name == "sameas") return in.kind() == one().kind() && equal(in, one());
  if (name == "in") {
    const Value& seq = one();
    if (seq.is_string()) return in.is_string() && seq.as_string().find(in.as_string()) != std::string::npos;
    if (seq.is_dict()) return in.is_string() && seq.as_dict().find(in.as_string()) != nullptr;
    if (seq.is_list())
      return std::any_of(seq.as_list().begin(), seq.as_list().end(), [&](const Value& x) { return equal(in, x); });
    return false;
  }
  NF_FAIL("unsupported construct: the test '", name, "'");
}

Value apply_filter(std::string_view name, const Value& in, const CallArgs& call, const Limits& limits) {
  const Value none = Value::none();
  const std::string what = "the filter " + std::string(name);
  if (name == "trim") {
    check_arity(what, call, 1, {"chars"});
    return Value::string(strip(in.str(), arg(call, 0, "chars", none), true, true));
  }
  if (name == "tojson") {
    check_arity(what, call, 1, {"ensure_ascii", "indent", "sort_keys"});
    NF_CHECK(!arg(call, 0, "ensure_ascii", none).truthy(), "unsupported construct: tojson(ensure_ascii=true)");
    const Value& indent = arg(call, 99, "indent", none);
    return Value::string(to_json(in, indent.is_none() ? -1 : static_cast<int>(std::clamp<int64_t>(need_int(indent, what), 0, 64)),
                                 arg(call, 99, "sort_keys", none).truthy()));
  }
  if (name == "length" || name == "count") {
    check_arity(what, call, 0);
    if (in.is_string()) return Value::integer(static_cast<int64_t>(utf8_length(in.as_string())));
    if (in.is_list()) return Value::integer(static_cast<int64_t>(in.as_list().size()));
    if (in.is_dict()) return Value::integer(static_cast<int64_t>(in.as_dict().items.size()));
    if (in.is_undefined()) return Value::integer(0);
    NF_FAIL(what, ": a value of type ", in.type_name(), " has no length");
  }
  if (name == "default" || name == "d") {
    check_arity(what, call, 2, {"default_value", "boolean"});
    const Value empty = Value::string("");
    const bool use_default = in.is_undefined() || (arg(call, 1, "boolean", none).truthy() && !in.truthy());
    return use_default ? arg(call, 0, "default_value", empty) : in;
  }
  if (name == "upper" || name == "lower" || name == "capitalize" || name == "title") {
    check_arity(what, call, 0);
    return Value::string(ascii_case(in.str(), name == "lower" ? 0 : name == "upper" ? 1 : name == "capitalize" ? 2 : 3));
  }
  if (name == "string") return Value::string(in.str());
  if (name == "safe") return in;
  if (name == "int" || name == "float") {
    if (in.is_number()) return name == "int" ? Value::integer(in.as_int()) : Value::real(in.as_double());
    const Value fallback = name == "int" ? Value::integer(0) : Value::real(0);
    if (!in.is_string()) return arg(call, 0, "default", fallback);
    try {
      size_t used = 0;
      const std::string s = strip(in.as_string(), none, true, true);
      if (name == "int") {
        const int64_t i = std::stoll(s, &used);
        if (used == s.size()) return Value::integer(i);
        const double d = std::stod(s, &used);
        if (used == s.size()) return Value::integer(static_cast<int64_t>(d));
      } else {
        const double d = std::stod(s, &used);
        if (used == s.size()) return Value::real(d);
      }
    } catch (const std::exception&) {
    }
    return arg(call, 0, "default", fallback);
  }
  if (name == "list") return Value::list(as_list(in, what, limits));
  if (name == "join") {
    check_arity(what, call, 2, {"d", "attribute"});
    const Value empty = Value::string("");
    const std::string sep = arg(call, 0, "d", empty).str();
    const Value& attr = arg(call, 1, "attribute", none);
    std::string out;
    const List items = as_list(in, what, limits);
    for (size_t i = 0; i < items.size(); ++i) {
      const Value& item = items[i];
      out += (i ? sep : "") + (attr.is_none() ? item : attribute(item, attr.str())).str();
      check_size(out.size(), limits);
    }
    return Value::string(std::move(out));
  }
  if (name == "first" || name == "last") {
    const List items = as_list(in, what, limits);
    if (items.empty()) return {};
    return name == "first" ? items.front() : items.back();
  }
  if (name == "reverse") {
    if (in.is_string()) {
      auto cs = characters(in.as_string());
      std::string out;
      for (auto it = cs.rbegin(); it != cs.rend(); ++it) out += *it;
      return Value::string(std::move(out));
    }
    List items = as_list(in, what, limits);
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items));
  }
  if (name == "unique") {
    List out;
    const List items = as_list(in, what, limits);
    for (const Value& v : items)
      if (std::none_of(out.begin(), out.end(), [&](const Value& x) { return equal(x, v); })) out.push_back(v);
    return Value::list(std::move(out));
  }
  if (name == "items") {
    NF_CHECK(in.is_dict() || in.is_undefined(), what, ": needs a dict, not ", in.type_name());
    return in.is_undefined() ? Value::list({}) : call_method(in, "items", {}, limits);
  }
  if (name == "replace") {
    NF_CHECK(call.args.size() >= 2 && call.args.size() <= 3, what, " takes two or three arguments");
    const Value minus_one = Value::integer(-1);
    return Value::string(replace(in.str(), call.args[0].str(), call.args[1].str(),
                                 need_int(arg(call, 2, "count", minus_one), what), limits));
  }
  if (name == "abs") {
    NF_CHECK(in.is_number(), what, " needs a number, not ", in.type_name());
    return in.kind() == Value::Kind::real ? Value::real(std::fabs(in.as_double())) : Value::integer(std::llabs(in.as_int()));
  }
  if (name == "indent") {
    check_arity(what, call, 3, {"width", "first", "blank"});
    const Value four = Value::integer(4);
    const Value& width_arg = arg(call, 0, "width", four);
    const std::string pad = width_arg.is_string() ? width_arg.as_string()
                                                  : std::string(static_cast<size_t>(std::clamp<int64_t>(need_int(width_arg, what), 0, 256)), ' ');
    const bool first = arg(call, 1, "first", none).truthy(), blank = arg(call, 2, "blank", none).truthy();
    const std::string s = in.str();
    std::string out;
    size_t pos = 0;
    for (bool first_line = true;; first_line = false) {
      const size_t nl = s.find('\n', pos);
      const std::string line = s.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
      if ((first_line ? first : true) && (blank || !line.empty())) out += pad;
      out += line;
      check_size(out.size(), limits);
      if (nl == std::string::npos) break;
      out += '\n';
      pos = nl + 1;
    }
    return Value::string(std::move(out));
  }
  if (name == "selectattr" || name == "rejectattr" || name == "select" || name == "reject") {
    const bool by_attr = name == "selectattr" || name == "rejectattr";
    const bool keep = name == "selectattr" || name == "select";
    NF_CHECK(call.kwargs.empty(), "unsupported construct: ", what, " with keyword arguments");
    NF_CHECK(!by_attr || !call.args.empty(), what, " needs an attribute name");
    const size_t test_at = by_attr ? 1 : 0;
    CallArgs test_args;
    test_args.args.assign(call.args.begin() + static_cast<std::ptrdiff_t>(std::min(call.args.size(), test_at + 1)), call.args.end());
    List out;
    const List items = as_list(in, what, limits);
    for (const Value& item : items) {
      const Value subject = by_attr ? attribute(item, call.args[0].str()) : item;
      const bool pass = call.args.size() > test_at ? apply_test(need_string(call.args[test_at], what), subject, test_args)
                                                   : subject.truthy();
      if (pass == keep) out.push_back(item);
    }
    return Value::list(std::move(out));
  }
  if (name == "map") {
    List out;
    const Value& attr = arg(call, 99, "attribute", none);
    NF_CHECK(!attr.is_none() || !call.args.empty(), what, " needs a filter name or attribute=");
    CallArgs rest;
    if (attr.is_none()) rest.args.assign(call.args.begin() + 1, call.args.end());
    const List items = as_list(in, what, limits);
    for (const Value& item : items)
      out.push_back(attr.is_none() ? apply_filter(need_string(call.args[0], what), item, rest, limits)
                                   : attribute(item, attr.str()));
    return Value::list(std::move(out));
  }
  NF_FAIL("unsupported construct: the filter '", name, "'");
}

}  // namespace nf::jinja
