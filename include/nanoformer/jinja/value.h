#pragma once
// The values a Jinja chat template computes with (jinja/template.h), with Python's meaning, since Hugging
// Face renders templates with Python's jinja2: undefined, None, bool, int, float, str, list and
// dict (string keys, insertion order kept), plus namespace() objects and built-in functions.
// Lists and dicts are shared, never changed once built (HF's sandbox is immutable), but a
// namespace's attributes, which `{% set ns.x = ... %}` assigns.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace nf::jinja {

class Value;
using List = std::vector<Value>;
struct Dict {
  std::vector<std::pair<std::string, Value>> items;  // in insertion order
  bool is_namespace = false;
  const Value* find(std::string_view key) const;
  void set(const std::string& key, Value value);  // replaces the key's value or appends it
};

class Value {
 public:
  enum class Kind { undefined, none, boolean, integer, real, string, list, dict, function };

  Value() = default;  // undefined
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value real(double d);
  static Value string(std::string s);
  static Value list(List items);
  static Value tuple(List items);  // a list that prints as Python's tuple: (1, 2)
  static Value dict(Dict d);
  static Value function(std::string name);  // a built-in function, by name

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::undefined; }
  bool is_none() const { return kind_ == Kind::none; }
  bool is_string() const { return kind_ == Kind::string; }
  bool is_list() const { return kind_ == Kind::list; }
  bool is_dict() const { return kind_ == Kind::dict; }
  bool is_tuple() const { return tuple_; }
  bool is_number() const { return kind_ == Kind::integer || kind_ == Kind::real || kind_ == Kind::boolean; }

  bool as_bool() const { return b_; }
  // bool as 0/1; a real truncated, clamped to int64's range (NaN as 0)
  int64_t as_int() const { return kind_ == Kind::real ? real_to_int(d_) : i_; }
  double as_double() const { return kind_ == Kind::real ? d_ : static_cast<double>(i_); }
  const std::string& as_string() const { return s_; }  // the string, or a function's name
  const List& as_list() const { return *list_; }
  const Dict& as_dict() const { return *dict_; }
  Dict& namespace_dict() const { return *dict_; }  // a namespace's attributes (shared)

  // Python's bool(x): undefined, None, False, 0, 0.0, "", [] and {} are false.
  bool truthy() const;
  // Python's str(x) as Jinja prints it: undefined is "", None "None", True "True", 1.5 "1.5",
  // lists and dicts as Python's repr writes them.
  std::string str() const;
  // Python's repr(x) (strings quoted).
  std::string repr() const;
  // How deeply lists and dicts nest in the value (0 for a scalar or a namespace).
  size_t depth() const { return depth_; }
  // The name Python gives the type, for error messages: "str", "int", "list", "undefined", ...
  std::string_view type_name() const;

 private:
  static int64_t real_to_int(double d) {
    if (!(d == d)) return 0;
    if (d >= 9223372036854775807.0) return INT64_MAX;
    if (d <= -9223372036854775808.0) return INT64_MIN;
    return static_cast<int64_t>(d);
  }

  Kind kind_ = Kind::undefined;
  bool b_ = false;
  int64_t i_ = 0;
  double d_ = 0;
  size_t depth_ = 0;
  bool tuple_ = false;
  std::string s_;
  std::shared_ptr<const List> list_;
  std::shared_ptr<Dict> dict_;
};

// Python's ==: numbers by value (True == 1), strings, lists and dicts element by element;
// undefined equals only undefined.
bool equal(const Value& a, const Value& b);

// Python's float repr: the shortest digits that read back, "1.0", "1e-05", "1e+16", "inf", "nan".
std::string python_float(double d);

// json.dumps(x, ensure_ascii=False, indent=indent, sort_keys=sort_keys) as transformers' tojson
// filter calls it (indent < 0: on one line with ", " and ": "). Throws nf::Error on a value JSON
// cannot hold (undefined, a function).
std::string to_json(const Value& v, int indent = -1, bool sort_keys = false);

// A JSON document as a value (objects keep their order with ordered_json, are sorted with json).
Value from_json(const nlohmann::json& j);
Value from_json(const nlohmann::ordered_json& j);

// The number of Unicode characters of a UTF-8 string (Python's len); invalid bytes count one each.
size_t utf8_length(std::string_view s);

}  // namespace nf::jinja
