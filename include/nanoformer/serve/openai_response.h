#pragma once
// The JSON bodies the server answers, in OpenAI's shapes:
//   chat:        {"id": "chatcmpl-..", "object": "chat.completion", "created", "model",
//                 "choices": [{"index": 0, "message": {"role": "assistant", "content"}, "finish_reason"}], "usage"}
//   chat stream: "chat.completion.chunk" objects whose choices carry a "delta" ({"role"} first, then
//                {"content"}), the last one a finish_reason; with include_usage one more chunk with
//                no choices and the usage
//   completion:  "text_completion" objects whose choices carry "text" (the same when streamed)
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "nanoformer/serve/openai_request.h"

namespace nf::serve {

struct ResponseHeader {
  std::string id;     // chatcmpl-N / cmpl-N
  int64_t created = 0;  // Unix seconds
  std::string model;
  Endpoint endpoint = Endpoint::chat;
};

struct Usage {
  int64_t prompt_tokens = 0, completion_tokens = 0;
  nlohmann::json json() const;  // {"prompt_tokens", "completion_tokens", "total_tokens"}
};

nlohmann::json completion_body(const ResponseHeader& header, const std::string& text, const std::string& finish_reason,
                               const Usage& usage);
// One streamed chunk: text (a chat's first chunk also gives the role) and, in the last, the finish reason.
nlohmann::json completion_chunk(const ResponseHeader& header, const std::string& text, bool first,
                                const std::string& finish_reason = "");
// The chunk after the last one when stream_options.include_usage: no choices, the usage.
nlohmann::json usage_chunk(const ResponseHeader& header, const Usage& usage);

}  // namespace nf::serve
