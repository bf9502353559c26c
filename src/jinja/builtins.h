#pragma once
// The filters, tests, methods and functions of the Jinja subset (jinja/template.h), with Python's and
// jinja2's meaning. Each throws nf::Error naming itself (the evaluator adds the place); a name
// outside the subset is "unsupported construct: ...".
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "nanoformer/jinja/template.h"

namespace nf::jinja {

struct CallArgs {
  std::vector<Value> args;
  std::vector<std::pair<std::string, Value>> kwargs;
};

Value apply_filter(std::string_view name, const Value& in, const CallArgs& call, const Limits& limits);
bool apply_test(std::string_view name, const Value& in, const CallArgs& call);
Value call_method(const Value& object, std::string_view name, const CallArgs& call, const Limits& limits);
Value call_function(std::string_view name, const CallArgs& call, const Limits& limits);
bool is_function(std::string_view name);  // namespace, raise_exception, range, strftime_now

// The Unicode characters of a UTF-8 string, each as its bytes (an invalid byte on its own).
std::vector<std::string_view> characters(std::string_view s);

// Throw nf::Error when a string (bytes) or list (items) built by the template would pass its limit.
void check_size(size_t size, const Limits& limits);
void check_items(size_t items, const Limits& limits);

}  // namespace nf::jinja
