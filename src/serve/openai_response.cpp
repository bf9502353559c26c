// OpenAI response bodies (serve/openai_response.h).
#include "nanoformer/serve/openai_response.h"

namespace nf::serve {
namespace {

using json = nlohmann::json;

json base(const ResponseHeader& h, bool chunk) {
  const char* object = h.endpoint == Endpoint::completion ? "text_completion"
                       : chunk                            ? "chat.completion.chunk"
                                                          : "chat.completion";
  json body = {{"id", h.id}, {"object", object}, {"created", h.created}, {"model", h.model}};
  if (!h.schema_approximations.empty()) body["schema_approximations"] = h.schema_approximations;
  return body;
}

json finish(const std::string& reason) { return reason.empty() ? json(nullptr) : json(reason); }

json byte_values(const std::string& token) {
  json bytes = json::array();
  for (const char c : token) bytes.push_back(static_cast<unsigned char>(c));
  return bytes;
}

json logprobs_json(const std::vector<LogprobEntry>* entries, Endpoint endpoint) {
  if (entries == nullptr) return nullptr;
  if (endpoint == Endpoint::chat) {
    json content = json::array();
    for (const LogprobEntry& e : *entries) {
      json top = json::array();
      for (const auto& [token, logprob] : e.top)
        top.push_back({{"token", token}, {"logprob", logprob}, {"bytes", byte_values(token)}});
      content.push_back({{"token", e.token}, {"logprob", e.logprob.value_or(0.0f)}, {"bytes", byte_values(e.token)},
                         {"top_logprobs", top}});
    }
    return {{"content", content}};
  }
  json tokens = json::array(), token_logprobs = json::array(), top_logprobs = json::array(), offsets = json::array();
  for (const LogprobEntry& e : *entries) {
    tokens.push_back(e.token);
    token_logprobs.push_back(e.logprob ? json(*e.logprob) : json(nullptr));
    json top = json::object();
    for (const auto& [token, logprob] : e.top) top[token] = logprob;
    top_logprobs.push_back(e.logprob ? top : json(nullptr));
    offsets.push_back(e.text_offset);
  }
  return {{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top_logprobs}, {"text_offset", offsets}};
}

// A server-run call as the message and the delta give it.
json server_call_json(const ServerToolCall& c) {
  return {{"id", c.call.id},
          {"type", "function"},
          {"function", {{"name", c.call.name}, {"arguments", c.call.arguments}}},
          {"output", c.output ? json(*c.output) : json(nullptr)}};
}

}  // namespace

json Usage::json() const {
  return {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens}};
}

json completion_body(const ResponseHeader& h, const std::vector<ChoiceOutput>& choices, const Usage& usage) {
  json body = base(h, false);
  body["choices"] = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceOutput& c = choices[i];
    json choice = {{"index", i}, {"finish_reason", finish(c.finish_reason)}, {"logprobs", logprobs_json(c.logprobs, h.endpoint)}};
    if (h.endpoint == Endpoint::chat) {
      choice["message"] = {{"role", "assistant"}, {"content", c.text.empty() && !c.tool_calls.empty() ? json(nullptr) : json(c.text)}};
      if (!c.reasoning.empty()) choice["message"]["reasoning_content"] = c.reasoning;
      if (!c.tool_calls.empty()) {
        json calls = json::array();
        for (const infer::ToolCall& call : c.tool_calls)
          calls.push_back({{"id", call.id}, {"type", "function"}, {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
        choice["message"]["tool_calls"] = std::move(calls);
      }
      if (!c.server_tool_calls.empty()) {
        json calls = json::array();
        for (const ServerToolCall& call : c.server_tool_calls) calls.push_back(server_call_json(call));
        choice["message"]["server_tool_calls"] = std::move(calls);
      }
    } else
      choice["text"] = c.text;
    body["choices"].push_back(std::move(choice));
  }
  body["usage"] = usage.json();
  return body;
}

json completion_chunk(const ResponseHeader& h, const std::string& text, bool first, const std::string& finish_reason,
                      const std::vector<LogprobEntry>* logprobs, const std::string& reasoning) {
  json body = base(h, true);
  json choice = {{"index", h.index}, {"finish_reason", finish(finish_reason)}, {"logprobs", logprobs_json(logprobs, h.endpoint)}};
  if (h.endpoint == Endpoint::chat) {
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (!reasoning.empty()) delta["reasoning_content"] = reasoning;
    if (!text.empty() || (first && finish_reason.empty() && reasoning.empty())) delta["content"] = text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
  }
  body["choices"] = json::array({choice});
  return body;
}

std::vector<json> tool_call_chunks(const ResponseHeader& h, const infer::ToolCall& call, int64_t index) {
  std::vector<json> chunks;
  const json deltas[] = {
      {{"index", index}, {"id", call.id}, {"type", "function"}, {"function", {{"name", call.name}, {"arguments", ""}}}},
      {{"index", index}, {"function", {{"arguments", call.arguments}}}}};
  for (const json& delta : deltas) {
    json body = base(h, true);
    body["choices"] = json::array({{{"index", h.index}, {"finish_reason", nullptr}, {"logprobs", nullptr},
                                    {"delta", {{"tool_calls", json::array({delta})}}}}});
    chunks.push_back(std::move(body));
  }
  return chunks;
}

json server_tool_call_chunk(const ResponseHeader& h, const ServerToolCall& call, int64_t index) {
  json delta = server_call_json(call);
  delta["index"] = index;
  json body = base(h, true);
  body["choices"] = json::array({{{"index", h.index}, {"finish_reason", nullptr}, {"logprobs", nullptr},
                                  {"delta", {{"server_tool_calls", json::array({delta})}}}}});
  return body;
}

json usage_chunk(const ResponseHeader& h, const Usage& usage) {
  json body = base(h, true);
  body["choices"] = json::array();
  body["usage"] = usage.json();
  return body;
}

}  // namespace nf::serve
