// OpenAI request bodies to a CompletionRequest (serve/openai_request.h).
#include "nanoformer/serve/openai_request.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "nanoformer/core/error.h"
#include "nanoformer/grammar/matcher.h"
#include "nanoformer/grammar/json_schema.h"
#include "nanoformer/serve/api_error.h"
#include "nanoformer/serve/json_depth.h"
#include "nanoformer/serve/tool_request.h"

namespace nf::serve {
namespace {

using json = nlohmann::json;

const char* type_name(const json& v) { return v.type_name(); }

// The number at `key` in [lo, hi] (open at lo when lo_open); absent or null: nothing.
std::optional<double> number_field(const json& body, const char* key, double lo, double hi, bool lo_open,
                                   const char* range) {
  const auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_number())
    throw invalid_request(key, std::string("'") + key + "' must be a number, got " + type_name(*it));
  const double v = it->get<double>();
  if (v < lo || v > hi || (lo_open && v == lo))
    throw invalid_request(key, std::string("'") + key + "' must be in " + range + ", got " + it->dump());
  return v;
}

// The integer at `key`, at least `min`; absent or null: nothing.
std::optional<int64_t> integer_field(const json& body, const char* key, int64_t min) {
  const auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer())
    throw invalid_request(key, std::string("'") + key + "' must be an integer, got " + it->dump());
  if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    throw invalid_request(key, std::string("'") + key + "' is too large: " + it->dump());
  if (it->get<int64_t>() < min)
    throw invalid_request(key, std::string("'") + key + "' must be at least " + std::to_string(min) + ", got " + it->dump());
  return it->get<int64_t>();
}

bool bool_field(const json& body, const char* key, const std::string& param) {
  const auto it = body.find(key);
  if (it == body.end() || it->is_null()) return false;
  if (!it->is_boolean()) throw invalid_request(param, "'" + param + "' must be a boolean, got " + type_name(*it));
  return it->get<bool>();
}

std::string message_content(const json& content, size_t index) {
  const std::string param = "messages[" + std::to_string(index) + "].content";
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array() || content.empty())
    throw invalid_request(param, "'" + param + "' must be a string or a non-empty array of text parts, got " +
                                     (content.is_array() ? std::string("[]") : type_name(content)));
  std::string text;
  for (const json& part : content) {
    if (!part.is_object() || part.value("type", json()) != "text" || !part.contains("text") || !part["text"].is_string())
      throw invalid_request(param, "'" + param + "' parts must be {\"type\": \"text\", \"text\": string}, got " + part.dump());
    text += part["text"].get<std::string>();
  }
  return text;
}

// An assistant message's tool_calls ([{"id", "type": "function", "function": {"name", "arguments"}}]) as
// the template sees them: the arguments (OpenAI's JSON text) as an object, as transformers documents
// them and llama.cpp passes them.
std::string parse_tool_calls(const nlohmann::ordered_json& calls, const std::string& at) {
  const std::string param = at + ".tool_calls";
  if (!calls.is_array()) throw invalid_request(param, "'" + param + "' must be an array, got " + calls.dump().substr(0, 80));
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (size_t k = 0; k < calls.size(); ++k) {
    const std::string c = param + "[" + std::to_string(k) + "]";
    const auto& call = calls[k];
    if (!call.is_object() || call.value("type", nlohmann::ordered_json("function")) != "function" || !call.contains("function") ||
        !call["function"].is_object())
      throw invalid_request(c, "'" + c + "' must be {\"id\", \"type\": \"function\", \"function\": {\"name\", \"arguments\"}}");
    const auto& function = call["function"];
    if (!function.contains("name") || !function["name"].is_string())
      throw invalid_request(c + ".function.name", "'" + c + ".function.name' must be a string");
    nlohmann::ordered_json arguments = function.value("arguments", nlohmann::ordered_json::object());
    if (arguments.is_string()) {
      const std::string& arguments_text = arguments.get_ref<const std::string&>();
      if (json_depth(arguments_text) > kMaxJsonDepth)
        throw invalid_request(c + ".function.arguments", "'" + c + ".function.arguments' nests deeper than " +
                                                             std::to_string(kMaxJsonDepth) + " levels");
      arguments = nlohmann::ordered_json::parse(arguments_text, nullptr, false);
    }
    if (!arguments.is_object())
      throw invalid_request(c + ".function.arguments", "'" + c + ".function.arguments' must be a JSON object's text, got " +
                                                           function.value("arguments", nlohmann::ordered_json()).dump().substr(0, 80));
    nlohmann::ordered_json rendered = nlohmann::ordered_json::object();  // OpenAI's order: id, type, function
    if (call.contains("id")) {
      if (!call["id"].is_string()) throw invalid_request(c + ".id", "'" + c + ".id' must be a string");
      rendered["id"] = call["id"];
    }
    rendered["type"] = "function";
    rendered["function"] = {{"name", function["name"]}, {"arguments", arguments}};
    out.push_back(std::move(rendered));
  }
  return out.dump();
}

// Whether the chat has tools or tool calls: its body is then parsed again keeping keys' order.
bool has_tools(const json& body) {
  if (body.contains("tools") || body.contains("tool_choice") || body.contains("parallel_tool_calls")) return true;
  const auto messages = body.find("messages");
  return messages != body.end() && messages->is_array() &&
         std::any_of(messages->begin(), messages->end(), [](const json& m) { return m.is_object() && m.contains("tool_calls"); });
}

// `ordered`: the body parsed keeping keys' order (tool calls' arguments are rendered in it), when has_tools.
std::vector<tokenizer::ChatMessage> parse_messages(const json& body, const nlohmann::ordered_json& ordered) {
  const auto it = body.find("messages");
  if (it == body.end()) throw invalid_request("messages", "'messages' is required");
  if (!it->is_array() || it->empty())
    throw invalid_request("messages", "'messages' must be a non-empty array, got " + it->dump().substr(0, 80));
  std::vector<tokenizer::ChatMessage> messages;
  for (size_t i = 0; i < it->size(); ++i) {
    const json& m = (*it)[i];
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) throw invalid_request(at, "'" + at + "' must be an object, got " + type_name(m));
    const auto role = m.find("role");
    if (role == m.end() || !role->is_string())
      throw invalid_request(at + ".role", "'" + at + ".role' must be a string");
    std::string name = role->get<std::string>();
    if (name == "developer") name = "system";  // OpenAI's newer name for the system role
    if (name != "system" && name != "user" && name != "assistant" && name != "tool")
      throw invalid_request(at + ".role", "'" + at + ".role' is " + role->dump() +
                                              ": the roles are system, developer, user, assistant and tool");
    tokenizer::ChatMessage message{.role = name, .content = ""};
    const bool calls = name == "assistant" && m.contains("tool_calls") && !m["tool_calls"].is_null();
    if (calls) message.tool_calls = parse_tool_calls(ordered["messages"][i]["tool_calls"], at);
    const auto content = m.find("content");
    if (content == m.end() || (content->is_null() && !calls)) {
      if (!calls) throw invalid_request(at + ".content", "'" + at + ".content' is required");
    } else if (!content->is_null()) {
      message.content = message_content(*content, i);
    }
    if (name == "tool") {
      const auto id = m.find("tool_call_id");
      if (id == m.end() || !id->is_string())
        throw invalid_request(at + ".tool_call_id", "'" + at + ".tool_call_id' must be the string id of the call this answers");
      message.tool_call_id = id->get<std::string>();
    }
    messages.push_back(std::move(message));
  }
  return messages;
}

std::string parse_prompt(const json& body) {
  const auto it = body.find("prompt");
  if (it == body.end()) throw invalid_request("prompt", "'prompt' is required");
  if (it->is_string()) return it->get<std::string>();
  if (it->is_array() && it->size() == 1 && (*it)[0].is_string()) return (*it)[0].get<std::string>();
  throw invalid_request("prompt", "'prompt' must be a string (or an array of one string), got " + it->dump().substr(0, 80));
}

std::vector<std::string> parse_stop(const json& body) {
  const auto it = body.find("stop");
  if (it == body.end() || it->is_null()) return {};
  std::vector<std::string> stop;
  if (it->is_string()) {
    stop.push_back(it->get<std::string>());
  } else if (it->is_array() && it->size() <= 4) {
    for (const json& s : *it) {
      if (!s.is_string()) throw invalid_request("stop", "'stop' must hold strings, got " + s.dump());
      stop.push_back(s.get<std::string>());
    }
  } else {
    throw invalid_request("stop", "'stop' must be a string or an array of up to 4 strings, got " + it->dump().substr(0, 80));
  }
  for (const std::string& s : stop)
    if (s.empty()) throw invalid_request("stop", "'stop' strings must not be empty");
  return stop;
}

void refuse_unsupported(const json& body) {
  if (body.contains("suffix") && !body["suffix"].is_null())
    throw invalid_request("suffix", "'suffix' is not supported");
}

// The number of most likely tokens to report with each token's logprob, -1 for none. Chat:
// logprobs true, top_logprobs in [0, 20] (which needs logprobs); completion: logprobs in [0, 5].
int64_t parse_logprobs(const json& body, Endpoint endpoint) {
  if (endpoint == Endpoint::completion) {
    const auto n = integer_field(body, "logprobs", 0);
    if (n && *n > 5) throw invalid_request("logprobs", "'logprobs' must be at most 5, got " + std::to_string(*n));
    return n.value_or(-1);
  }
  const bool wanted = bool_field(body, "logprobs", "logprobs");
  const auto top = integer_field(body, "top_logprobs", 0);
  if (top && *top > 20) throw invalid_request("top_logprobs", "'top_logprobs' must be at most 20, got " + std::to_string(*top));
  if (top && !wanted) throw invalid_request("top_logprobs", "'top_logprobs' needs 'logprobs': true");
  return wanted ? top.value_or(0) : -1;
}

// GBNF text compiled, and its first state expanded (the step that meets a grammar's depth and
// ambiguity first); a fault, a grammar over a budget included, is a 400 naming `param` and the
// compiler's or the matcher's one line.
std::shared_ptr<const grammar::Grammar> compile(const std::string& gbnf, const std::string& param) {
  try {
    auto grammar = std::make_shared<const grammar::Grammar>(grammar::compile_gbnf(gbnf));
    grammar::GrammarMatcher{grammar};
    return grammar;
  } catch (const Error& e) {
    throw invalid_request(param, "'" + param + "': " + e.what());
  }
}

// The grammar that response_format or grammar asks for; null for free text.
std::shared_ptr<const grammar::Grammar> parse_grammar(const json& body, std::string_view text,
                                                      std::vector<std::string>& approximations) {
  const auto format = body.find("response_format");
  const auto grammar = body.find("grammar");
  const bool has_format = format != body.end() && !format->is_null();
  const bool has_grammar = grammar != body.end() && !grammar->is_null();
  if (has_grammar) {
    if (has_format) throw invalid_request("grammar", "'grammar' and 'response_format' cannot both be given");
    if (!grammar->is_string()) throw invalid_request("grammar", std::string("'grammar' must be a string of GBNF, got ") + type_name(*grammar));
    return compile(grammar->get<std::string>(), "grammar");
  }
  if (!has_format) return nullptr;
  if (!format->is_object() || !format->contains("type") || !(*format)["type"].is_string())
    throw invalid_request("response_format", "'response_format' must be an object with a string 'type', got " + format->dump().substr(0, 80));
  const std::string type = (*format)["type"].get<std::string>();
  if (type == "text") return nullptr;
  if (type == "json_object") return compile(grammar::json_object_gbnf(), "response_format");
  if (type != "json_schema")
    throw invalid_request("response_format.type", "'response_format.type' is \"" + type +
                                                      "\": the types are text, json_object and json_schema");
  const auto spec = format->find("json_schema");
  if (spec == format->end() || !spec->is_object())
    throw invalid_request("response_format.json_schema", "'response_format.json_schema' must be an object with a 'schema'");
  if (spec->contains("name") && !(*spec)["name"].is_string())
    throw invalid_request("response_format.json_schema.name", "'response_format.json_schema.name' must be a string");
  if (spec->contains("strict") && !(*spec)["strict"].is_null() && !(*spec)["strict"].is_boolean())
    throw invalid_request("response_format.json_schema.strict", "'response_format.json_schema.strict' must be a boolean");
  if (!spec->contains("schema")) throw invalid_request("response_format.json_schema.schema", "'response_format.json_schema.schema' is required");
  // strict (also when absent): a keyword no grammar expresses is refused; false: approximated, and the
  // response says where (schema_approximations)
  const grammar::SchemaOptions options{.strict = !(spec->contains("strict") && (*spec)["strict"] == false)};
  std::string gbnf;
  try {  // parsed again keeping the properties' order, which the output follows
    const auto ordered = nlohmann::ordered_json::parse(text);
    grammar::SchemaGrammar compiled = grammar::json_schema_grammar(ordered["response_format"]["json_schema"]["schema"], options);
    gbnf = std::move(compiled.gbnf);
    approximations = std::move(compiled.approximations);
  } catch (const Error& e) {
    throw invalid_request("response_format.json_schema.schema", std::string("'response_format.json_schema.schema': ") + e.what());
  }
  return compile(gbnf, "response_format.json_schema.schema");
}

}  // namespace

CompletionRequest parse_completion_request(std::string_view text, Endpoint endpoint) {
  if (json_depth(text) > kMaxJsonDepth)
    throw invalid_request("", "the request body nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  const json body = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) throw invalid_request("", "the request body is not valid JSON");
  if (!body.is_object()) throw invalid_request("", std::string("the request body must be a JSON object, got ") + type_name(body));
  CompletionRequest r;
  r.endpoint = endpoint;
  if (const auto it = body.find("model"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) throw invalid_request("model", std::string("'model' must be a string, got ") + type_name(*it));
    r.model = it->get<std::string>();
  }
  if (endpoint == Endpoint::chat) {
    const auto ordered = has_tools(body) ? nlohmann::ordered_json::parse(text) : nlohmann::ordered_json::object();
    r.messages = parse_messages(body, ordered);
    r.tool_use = parse_tool_request(ordered);
  } else if (body.contains("tools") || body.contains("tool_choice")) {
    throw invalid_request(body.contains("tools") ? "tools" : "tool_choice", "tools are for chat completions (/v1/chat/completions)");
  } else
    r.prompt = parse_prompt(body);
  refuse_unsupported(body);
  r.sampler.temperature = number_field(body, "temperature", 0, 2, false, "[0, 2]").value_or(1.0);
  r.sampler.top_p = number_field(body, "top_p", 0, 1, true, "(0, 1]").value_or(1.0);
  r.sampler.min_p = number_field(body, "min_p", 0, 1, false, "[0, 1]").value_or(0.0);
  r.sampler.repetition_penalty =
      number_field(body, "repetition_penalty", 0, 1e6, true, "(0, 1e6]").value_or(1.0);
  r.sampler.frequency_penalty = number_field(body, "frequency_penalty", -2, 2, false, "[-2, 2]").value_or(0.0);
  r.sampler.presence_penalty = number_field(body, "presence_penalty", -2, 2, false, "[-2, 2]").value_or(0.0);
  r.sampler.top_k = integer_field(body, "top_k", 0).value_or(0);
  if (const auto seed = integer_field(body, "seed", INT64_MIN)) r.seed = static_cast<uint64_t>(*seed);
  r.echo = bool_field(body, "echo", "echo");
  if (r.echo && endpoint == Endpoint::chat) throw invalid_request("echo", "'echo' is for text completions (/v1/completions)");
  // max_tokens 0 with echo: the prompt scored, nothing generated (a log-likelihood, as lm-eval asks)
  r.max_tokens = integer_field(body, "max_tokens", r.echo ? 0 : 1);
  if (const auto m = integer_field(body, "max_completion_tokens", r.echo ? 0 : 1)) r.max_tokens = m;
  r.stop = parse_stop(body);
  r.top_logprobs = parse_logprobs(body, endpoint);
  r.n = integer_field(body, "n", 1).value_or(1);
  if (r.n > 128) throw invalid_request("n", "'n' must be at most 128, got " + std::to_string(r.n));
  r.grammar = parse_grammar(body, text, r.schema_approximations);
  if (r.tool_use.forced()) {
    if (r.grammar)
      throw invalid_request("tool_choice", "'tool_choice' " + std::string(r.tool_use.choice == ToolChoice::required ? "\"required\"" : "naming a function") +
                                               " cannot be combined with 'response_format' or 'grammar'");
    r.grammar = compile(tool_call_gbnf(r.tool_use), "tools");
  } else if (!r.tool_use.tools.empty()) {
    compile(tool_call_gbnf(r.tool_use), "tools");  // the tools' parameters are checked whether or not a call is forced
  }
  r.speculative.lookup_ngram = integer_field(body, "speculative.ngram_size_n", 0).value_or(0);
  r.speculative.draft_max = integer_field(body, "speculative.n_max", 1).value_or(r.speculative.draft_max);
  r.speculative.draft_min = integer_field(body, "speculative.n_min", 0).value_or(0);
  r.speculative.draft_p_min = number_field(body, "speculative.p_min", 0, 1, false, "[0, 1]").value_or(0.0);
  using infer::SpeculativeConfig;
  if (r.speculative.lookup_ngram > SpeculativeConfig::kMaxLookupNgram)
    throw invalid_request("speculative.ngram_size_n", "'speculative.ngram_size_n' must be at most " +
                                                           std::to_string(SpeculativeConfig::kMaxLookupNgram) + ", got " +
                                                           std::to_string(r.speculative.lookup_ngram));
  if (r.speculative.draft_max > SpeculativeConfig::kMaxDraft)
    throw invalid_request("speculative.n_max", "'speculative.n_max' must be at most " +
                                                   std::to_string(SpeculativeConfig::kMaxDraft) + ", got " +
                                                   std::to_string(r.speculative.draft_max));
  if (r.speculative.draft_min > r.speculative.draft_max)
    throw invalid_request("speculative.n_min", "'speculative.n_min' (" + std::to_string(r.speculative.draft_min) +
                                                   ") must be at most 'speculative.n_max' (" +
                                                   std::to_string(r.speculative.draft_max) + ")");
  r.stream = bool_field(body, "stream", "stream");
  if (const auto it = body.find("stream_options"); it != body.end() && !it->is_null()) {
    if (!it->is_object())
      throw invalid_request("stream_options", std::string("'stream_options' must be an object, got ") + type_name(*it));
    r.include_usage = bool_field(*it, "include_usage", "stream_options.include_usage");
  }
  return r;
}

}  // namespace nf::serve
