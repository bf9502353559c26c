// OpenAI response bodies (serve/openai_response.h).
#include "nanoformer/serve/openai_response.h"

namespace nf::serve {
namespace {

using json = nlohmann::json;

json base(const ResponseHeader& h, bool chunk) {
  const char* object = h.endpoint == Endpoint::completion ? "text_completion"
                       : chunk                            ? "chat.completion.chunk"
                                                          : "chat.completion";
  return {{"id", h.id}, {"object", object}, {"created", h.created}, {"model", h.model}};
}

json finish(const std::string& reason) { return reason.empty() ? json(nullptr) : json(reason); }

}  // namespace

json Usage::json() const {
  return {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens}};
}

json completion_body(const ResponseHeader& h, const std::string& text, const std::string& finish_reason, const Usage& usage) {
  json body = base(h, false);
  json choice = {{"index", 0}, {"finish_reason", finish(finish_reason)}, {"logprobs", nullptr}};
  if (h.endpoint == Endpoint::chat)
    choice["message"] = {{"role", "assistant"}, {"content", text}};
  else
    choice["text"] = text;
  body["choices"] = json::array({choice});
  body["usage"] = usage.json();
  return body;
}

json completion_chunk(const ResponseHeader& h, const std::string& text, bool first, const std::string& finish_reason) {
  json body = base(h, true);
  json choice = {{"index", 0}, {"finish_reason", finish(finish_reason)}, {"logprobs", nullptr}};
  if (h.endpoint == Endpoint::chat) {
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (!text.empty() || (first && finish_reason.empty())) delta["content"] = text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
  }
  body["choices"] = json::array({choice});
  return body;
}

json usage_chunk(const ResponseHeader& h, const Usage& usage) {
  json body = base(h, true);
  body["choices"] = json::array();
  body["usage"] = usage.json();
  return body;
}

}  // namespace nf::serve
