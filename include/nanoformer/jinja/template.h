#pragma once
// A small, safe interpreter of the Jinja subset Hugging Face chat templates use, rendering as
// transformers does (jinja2 with trim_blocks, lstrip_blocks and loop controls, an immutable
// sandbox, transformers' tojson and raise_exception). Supported:
//   {{ expr }}, {% if/elif/else/endif %}, {% for x[, y] in expr [if cond] %}...{% else %}{% endfor %}
//   with loop.index/index0/first/last/length/revindex/revindex0/previtem/nextitem, {% break %},
//   {% continue %}, {% set x = expr %}, {% set ns.attr = expr %}, {% set x %}...{% endset %},
//   {% generation %}...{% endgeneration %} (rendered as is), {# comments #}, whitespace control
//   {%- -%} {{- -}} and {%+ %};
//   literals (strings, numbers, true/false/none, lists, dicts), + - * / // % ** ~, comparisons,
//   and/or/not, in/not in, x if c else y, subscripts, slices [a:b:c], attributes;
//   tests: defined, undefined, none, string, number, integer, float, boolean, mapping, iterable,
//   sequence, true, false, odd, even, divisibleby, eq/equalto/==, ne, in;
//   filters: trim, tojson, length/count, default/d, upper, lower, capitalize, title, string, int,
//   float, list, join, first, last, reverse, items, replace, safe, abs, indent, unique, map,
//   select, reject, selectattr, rejectattr;
//   methods: str.startswith/endswith/strip/lstrip/rstrip/split/replace/upper/lower/title/
//   capitalize/find/count/join, dict.get/items/keys/values;
//   functions: namespace(...), raise_exception(msg), range(...), strftime_now(fmt).
// Anything else (macros, include, filters or tests not listed, ...) is an nf::Error naming the
// construct and its line and column. Rendering is bounded (Limits): a runaway template is an
// error, not a hang or an exhausted memory.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "nanoformer/jinja/value.h"

namespace nf::jinja {

struct Limits {
  size_t max_steps = 1'000'000;      // expressions evaluated and loop iterations, together
  size_t max_output = 16u << 20;     // bytes of output, and of any one string built
  size_t max_list = 1'000'000;       // items of any one list built (range(), +, *, a string's characters)
  size_t max_nesting = 200;          // depth of nested blocks and expressions when parsing
};

class Template {
 public:
  // Parses a template; throws nf::Error "chat template line L col C: ..." on a syntax error or a
  // construct outside the subset.
  explicit Template(std::string_view source, Limits limits = {});
  ~Template();
  Template(Template&&) noexcept;
  Template& operator=(Template&&) noexcept;

  // Renders with the variables of `context` (a dict). Throws nf::Error naming the fault and where
  // it is, with "raise_exception: MESSAGE" for the template's own raise_exception(MESSAGE).
  std::string render(const Value& context) const;

  struct Parsed;  // the syntax tree (jinja/ast.h)

 private:
  std::unique_ptr<Parsed> parsed_;
  Limits limits_;
};

}  // namespace nf::jinja
