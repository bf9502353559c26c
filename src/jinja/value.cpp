// Jinja values with Python's meaning (jinja/value.h): truth, str/repr, ==, float repr and tojson.
#include "nanoformer/jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "nanoformer/core/error.h"

namespace nf::jinja {

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : items)
    if (k == key) return &v;
  return nullptr;
}

void Dict::set(const std::string& key, Value value) {
  for (auto& [k, v] : items)
    if (k == key) {
      v = std::move(value);
      return;
    }
  items.emplace_back(key, std::move(value));
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::none;
  return v;
}
Value Value::boolean(bool b) {
  Value v;
  v.kind_ = Kind::boolean;
  v.b_ = b;
  v.i_ = b ? 1 : 0;
  return v;
}
Value Value::integer(int64_t i) {
  Value v;
  v.kind_ = Kind::integer;
  v.i_ = i;
  return v;
}
Value Value::real(double d) {
  Value v;
  v.kind_ = Kind::real;
  v.d_ = d;
  return v;
}
Value Value::string(std::string s) {
  Value v;
  v.kind_ = Kind::string;
  v.s_ = std::move(s);
  return v;
}
Value Value::list(List items) {
  Value v;
  v.kind_ = Kind::list;
  for (const Value& item : items) v.depth_ = std::max(v.depth_, item.depth_ + 1);
  if (items.empty()) v.depth_ = 1;
  v.list_ = std::make_shared<const List>(std::move(items));
  return v;
}
Value Value::tuple(List items) {
  Value v = list(std::move(items));
  v.tuple_ = true;
  return v;
}
Value Value::dict(Dict d) {
  Value v;
  v.kind_ = Kind::dict;
  if (!d.is_namespace) {
    v.depth_ = 1;
    for (const auto& item : d.items) v.depth_ = std::max(v.depth_, item.second.depth_ + 1);
  }
  v.dict_ = std::make_shared<Dict>(std::move(d));
  return v;
}
Value Value::function(std::string name) {
  Value v;
  v.kind_ = Kind::function;
  v.s_ = std::move(name);
  return v;
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::undefined:
    case Kind::none: return false;
    case Kind::boolean: return b_;
    case Kind::integer: return i_ != 0;
    case Kind::real: return d_ != 0;
    case Kind::string: return !s_.empty();
    case Kind::list: return !list_->empty();
    case Kind::dict: return dict_->is_namespace || !dict_->items.empty();
    case Kind::function: return true;
  }
  return false;
}

std::string_view Value::type_name() const {
  switch (kind_) {
    case Kind::undefined: return "undefined";
    case Kind::none: return "NoneType";
    case Kind::boolean: return "bool";
    case Kind::integer: return "int";
    case Kind::real: return "float";
    case Kind::string: return "str";
    case Kind::list: return "list";
    case Kind::dict: return dict_->is_namespace ? "Namespace" : "dict";
    case Kind::function: return "function";
  }
  return "?";
}

std::string python_float(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  // the shortest round-trip digits, then Python's layout: positional for 1e-4 <= |d| < 1e16
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  const size_t e = sci.find('e');
  std::string mantissa = sci.substr(0, e);
  const int exponent = std::stoi(sci.substr(e + 1));
  const bool negative = mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa)
    if (c != '.') digits += c;
  std::string out = negative ? "-" : "";
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out.append("0.");
      out.append(static_cast<size_t>(-exponent - 1), '0');
      out.append(digits);
    } else {
      const auto int_digits = static_cast<size_t>(exponent) + 1;
      if (digits.size() <= int_digits) {
        out.append(digits);
        out.append(int_digits - digits.size(), '0');
        out.append(".0");
      } else {
        out.append(digits, 0, int_digits);
        out.push_back('.');
        out.append(digits, int_digits, std::string::npos);
      }
    }
    return out;
  }
  out.push_back(digits[0]);
  if (digits.size() > 1) {
    out.push_back('.');
    out.append(digits, 1, std::string::npos);
  }
  char exp[16];
  std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  return out + exp;
}

namespace {

// Python's repr of a str: single quotes unless the text has a ' and no ".
std::string python_repr_string(const std::string& s) {
  const char quote = s.find('\'') != std::string::npos && s.find('"') == std::string::npos ? '"' : '\'';
  std::string out(1, quote);
  for (const unsigned char c : s) {
    if (c == quote || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + quote;
}

void json_string(const std::string& s, std::string& out) {
  out += '"';
  for (const unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void json_value(const Value& v, int indent, bool sort_keys, int level, std::string& out) {
  auto newline = [&](int at) {
    if (indent < 0) return;
    out += '\n';
    out.append(static_cast<size_t>(indent * at), ' ');
  };
  const char* item_sep = indent < 0 ? ", " : ",";
  switch (v.kind()) {
    case Value::Kind::none: out += "null"; return;
    case Value::Kind::boolean: out += v.as_bool() ? "true" : "false"; return;
    case Value::Kind::integer: out += std::to_string(v.as_int()); return;
    case Value::Kind::real: {
      const double d = v.as_double();
      out += std::isnan(d) ? "NaN" : std::isinf(d) ? (d > 0 ? "Infinity" : "-Infinity") : python_float(d);
      return;
    }
    case Value::Kind::string: json_string(v.as_string(), out); return;
    case Value::Kind::list: {
      const List& items = v.as_list();
      if (items.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += item_sep;
        newline(level + 1);
        json_value(items[i], indent, sort_keys, level + 1, out);
      }
      newline(level);
      out += ']';
      return;
    }
    case Value::Kind::dict: {
      NF_CHECK(!v.as_dict().is_namespace, "tojson: a Namespace is not JSON serializable");
      std::vector<const std::pair<std::string, Value>*> items;
      for (const auto& item : v.as_dict().items) items.push_back(&item);
      if (sort_keys) std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) { return a->first < b->first; });
      if (items.empty()) {
        out += "{}";
        return;
      }
      out += '{';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += item_sep;
        newline(level + 1);
        json_string(items[i]->first, out);
        out += ": ";
        json_value(items[i]->second, indent, sort_keys, level + 1, out);
      }
      newline(level);
      out += '}';
      return;
    }
    case Value::Kind::undefined:
    case Value::Kind::function: NF_FAIL("tojson: a value of type ", v.type_name(), " is not JSON serializable");
  }
}

template <class Json>
Value value_of(const Json& j) {
  if (j.is_null()) return Value::none();
  if (j.is_boolean()) return Value::boolean(j.template get<bool>());
  if (j.is_number_unsigned() && j.template get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    return Value::real(j.template get<double>());
  if (j.is_number_integer()) return Value::integer(j.template get<int64_t>());
  if (j.is_number_float()) return Value::real(j.template get<double>());
  if (j.is_string()) return Value::string(j.template get<std::string>());
  if (j.is_array()) {
    List items;
    for (const auto& item : j) items.push_back(value_of(item));
    return Value::list(std::move(items));
  }
  Dict d;
  for (const auto& [key, item] : j.items()) d.items.emplace_back(key, value_of(item));
  return Value::dict(std::move(d));
}

}  // namespace

std::string Value::repr() const { return kind_ == Kind::string ? python_repr_string(s_) : str(); }

std::string Value::str() const {
  switch (kind_) {
    case Kind::undefined: return "";
    case Kind::none: return "None";
    case Kind::boolean: return b_ ? "True" : "False";
    case Kind::integer: return std::to_string(i_);
    case Kind::real: return python_float(d_);
    case Kind::string: return s_;
    case Kind::list: {
      std::string out = tuple_ ? "(" : "[";
      for (size_t i = 0; i < list_->size(); ++i) out += (i ? ", " : "") + (*list_)[i].repr();
      if (tuple_ && list_->size() == 1) out += ",";
      return out + (tuple_ ? ")" : "]");
    }
    case Kind::dict: {
      if (dict_->is_namespace) return "<Namespace>";
      std::string out = "{";
      for (size_t i = 0; i < dict_->items.size(); ++i)
        out += (i ? ", " : "") + python_repr_string(dict_->items[i].first) + ": " + dict_->items[i].second.repr();
      return out + "}";
    }
    case Kind::function: return "<built-in function " + s_ + ">";
  }
  return "";
}

bool equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.kind() == Value::Kind::real || b.kind() == Value::Kind::real) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::undefined:
    case Value::Kind::none: return true;
    case Value::Kind::string:
    case Value::Kind::function: return a.as_string() == b.as_string();
    case Value::Kind::list:
      return a.is_tuple() == b.is_tuple() && std::equal(a.as_list().begin(), a.as_list().end(), b.as_list().begin(), b.as_list().end(), equal);
    case Value::Kind::dict: {
      if (&a.as_dict() == &b.as_dict()) return true;
      if (a.as_dict().is_namespace || b.as_dict().is_namespace) return false;
      if (a.as_dict().items.size() != b.as_dict().items.size()) return false;
      for (const auto& [key, value] : a.as_dict().items) {
        const Value* other = b.as_dict().find(key);
        if (!other || !equal(value, *other)) return false;
      }
      return true;
    }
    default: return false;
  }
}

std::string to_json(const Value& v, int indent, bool sort_keys) {
  std::string out;
  json_value(v, indent, sort_keys, 0, out);
  return out;
}

Value from_json(const nlohmann::json& j) { return value_of(j); }
Value from_json(const nlohmann::ordered_json& j) { return value_of(j); }

size_t utf8_length(std::string_view s) {
  size_t n = 0;
  for (const unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

}  // namespace nf::jinja
