// tools and tool_choice of a chat request, and the grammar of a forced call (serve/tool_request.h).
#include "nanoformer/serve/tool_request.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "nanoformer/core/error.h"
#include "nanoformer/grammar/grammar.h"
#include "nanoformer/grammar/json_schema.h"
#include "nanoformer/serve/api_error.h"

namespace nf::serve {
namespace {

using json = nlohmann::ordered_json;

bool valid_name(const json& name) {
  if (!name.is_string()) return false;
  const std::string& s = name.get_ref<const std::string&>();
  return !s.empty() && s.size() <= 64 &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; });
}

// The function object of tools[i], checked.
const json& check_tool(const json& tool, size_t i) {
  const std::string at = "tools[" + std::to_string(i) + "]";
  if (!tool.is_object()) throw invalid_request(at, "'" + at + "' must be an object, got " + tool.dump().substr(0, 80));
  if (tool.value("type", json()) != "function")
    throw invalid_request(at + ".type", "'" + at + ".type' must be \"function\", got " + tool.value("type", json()).dump());
  const auto function = tool.find("function");
  if (function == tool.end() || !function->is_object())
    throw invalid_request(at + ".function", "'" + at + ".function' must be an object with a 'name'");
  const auto name = function->find("name");
  if (name == function->end() || !valid_name(*name))
    throw invalid_request(at + ".function.name", "'" + at + ".function.name' must be a string of 1 to 64 letters, digits, _ or -, got " +
                                                     (name == function->end() ? std::string("nothing") : name->dump().substr(0, 80)));
  if (const auto d = function->find("description"); d != function->end() && !d->is_null() && !d->is_string())
    throw invalid_request(at + ".function.description", "'" + at + ".function.description' must be a string");
  if (const auto p = function->find("parameters"); p != function->end() && !p->is_object())
    throw invalid_request(at + ".function.parameters", "'" + at + ".function.parameters' must be a JSON schema object, got " +
                                                           p->dump().substr(0, 80));
  if (const auto s = function->find("strict"); s != function->end() && !s->is_null() && !s->is_boolean())
    throw invalid_request(at + ".function.strict", "'" + at + ".function.strict' must be a boolean");
  return *function;
}

// A GBNF literal of `text` (no control bytes but \n).

}  // namespace

ToolRequest parse_tool_request(const json& body) {
  ToolRequest r;
  std::set<std::string> names;
  if (const auto tools = body.find("tools"); tools != body.end() && !tools->is_null()) {
    if (!tools->is_array() || tools->empty())
      throw invalid_request("tools", "'tools' must be a non-empty array of functions, got " + tools->dump().substr(0, 80));
    for (size_t i = 0; i < tools->size(); ++i) {
      const std::string name = check_tool((*tools)[i], i)["name"].get<std::string>();
      if (!names.insert(name).second)
        throw invalid_request("tools[" + std::to_string(i) + "].function.name",
                              "'tools[" + std::to_string(i) + "].function.name' \"" + name + "\" names an earlier tool too");
    }
    r.tools = tools->dump();
  }
  if (const auto p = body.find("parallel_tool_calls"); p != body.end() && !p->is_null()) {
    if (!p->is_boolean()) throw invalid_request("parallel_tool_calls", "'parallel_tool_calls' must be a boolean, got " + p->dump());
    r.parallel = p->get<bool>();
  }
  const auto choice = body.find("tool_choice");
  if (choice == body.end() || choice->is_null()) return r;
  if (choice->is_string()) {
    const std::string c = choice->get<std::string>();
    if (c == "auto") r.choice = ToolChoice::automatic;
    else if (c == "none") r.choice = ToolChoice::none;
    else if (c == "required") r.choice = ToolChoice::required;
    else throw invalid_request("tool_choice", "'tool_choice' is \"" + c + "\": the choices are auto, none, required or {\"type\": \"function\", \"function\": {\"name\": ...}}");
  } else if (choice->is_object() && choice->value("type", json()) == "function" && choice->contains("function") &&
             (*choice)["function"].is_object() && (*choice)["function"].contains("name") && (*choice)["function"]["name"].is_string()) {
    r.choice = ToolChoice::function;
    r.function = (*choice)["function"]["name"].get<std::string>();
    if (!r.tools.empty() && !names.contains(r.function))
      throw invalid_request("tool_choice.function.name", "'tool_choice.function.name' \"" + r.function + "\" is not one of the tools");
  } else {
    throw invalid_request("tool_choice", "'tool_choice' must be auto, none, required or {\"type\": \"function\", \"function\": {\"name\": ...}}, got " +
                                             choice->dump().substr(0, 80));
  }
  if (r.tools.empty() && (r.choice == ToolChoice::required || r.choice == ToolChoice::function))
    throw invalid_request("tool_choice", "'tool_choice' requires a call, but there are no 'tools'");
  return r;
}

std::string tool_call_gbnf(const ToolRequest& r) {
  const json tools = json::parse(r.tools);
  std::string calls, rules;
  for (size_t i = 0; i < tools.size(); ++i) {
    const json& function = tools[i]["function"];
    const std::string name = function["name"].get<std::string>();
    if (r.choice == ToolChoice::function && name != r.function) continue;
    const std::string rule = "tool-" + std::to_string(i) + "-arguments";
    try {  // no parameters: any object
      rules += grammar::json_schema_rules(function.contains("parameters") ? function["parameters"] : json{{"type", "object"}}, rule);
    } catch (const Error& e) {
      const std::string param = "tools[" + std::to_string(i) + "].function.parameters";
      throw invalid_request(param, "'" + param + "': " + e.what());
    }
    calls += (calls.empty() ? "" : " | ") + grammar::gbnf_literal("<tool_call>\n{\"name\": \"" + name + "\", \"arguments\": ") + " " + rule + " " +
             grammar::gbnf_literal("}\n</tool_call>");
  }
  return std::string("root ::= tool-call") + (r.parallel ? " ( \"\\n\" tool-call )*" : "") + "\ntool-call ::= " + calls + "\n" +
         rules + grammar::json_shared_rules();
}

}  // namespace nf::serve
