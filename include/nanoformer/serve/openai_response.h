#pragma once
// The JSON bodies the server answers, in OpenAI's shapes:
//   chat:        {"id": "chatcmpl-..", "object": "chat.completion", "created", "model",
//                 "choices": [{"index": 0, "message": {"role": "assistant", "content"[, "reasoning_content"]
//                              [, "tool_calls": [{"id", "type": "function", "function": {"name", "arguments"}}]]},
//                              "finish_reason"}], "usage"}; content null when there are calls and no text
//   chat stream: "chat.completion.chunk" objects whose choices carry a "delta" ({"role"} first, then
//                {"content"}; a tool call as {"tool_calls": [{"index", "id", "type", "function": {"name",
//                "arguments": ""}}]} then {"tool_calls": [{"index", "function": {"arguments"}}]}), the
//                last one a finish_reason; with include_usage one more chunk with no choices and the usage
//   server tools (serve --tools): the calls the server ran itself, with their answers, as
//                "server_tool_calls": [{"id", "type": "function", "function": {"name", "arguments"},
//                "output": the answer (null: not run, past --max-tool-turns)}] on the message, and
//                streamed one call a chunk, {"server_tool_calls": [{"index", "id", ..., "output"}]}
//                in the delta, when the tool has answered (docs/serving.md: why not tool_calls)
//   completion:  "text_completion" objects whose choices carry "text" (the same when streamed)
// With logprobs, each choice's "logprobs" (else null) holds the tokens of its text (of a chunk's, when
// streamed): chat {"content": [{"token", "logprob", "bytes", "top_logprobs": [{"token", "logprob",
// "bytes"}]}]}; completion {"tokens", "token_logprobs", "top_logprobs": [{token: logprob}],
// "text_offset"} (the legacy shape).
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "nanoformer/serve/openai_request.h"
#include "nanoformer/infer/tool_call_parser.h"

namespace nf::serve {

struct ResponseHeader {
  std::string id;     // chatcmpl-N / cmpl-N
  int64_t created = 0;  // Unix seconds
  std::string model;
  Endpoint endpoint = Endpoint::chat;
  int64_t index = 0;  // the choice (of n) this header's chunks belong to
  std::vector<std::string> schema_approximations = {};  // non-empty: every body and chunk lists them
};

// One generated token with its log-probability (infer/logprobs.h), its bytes as the tokenizer
// holds them, and where its text starts in the answer (in bytes).
struct LogprobEntry {
  std::string token;
  std::optional<float> logprob = 0.0f;  // none for an echoed prompt's first token (null, as OpenAI's)
  std::vector<std::pair<std::string, float>> top;
  int64_t text_offset = 0;
};

struct Usage {
  int64_t prompt_tokens = 0, completion_tokens = 0;
  nlohmann::json json() const;  // {"prompt_tokens", "completion_tokens", "total_tokens"}
};

// A call the server ran itself while the model decoded (serve --tools): the call and its answer
// (none: not run, past --max-tool-turns).
struct ServerToolCall {
  infer::ToolCall call;
  std::optional<std::string> output;
};

// One choice of an answer; `logprobs` null: none were asked for.
struct ChoiceOutput {
  std::string text;
  std::string finish_reason;
  const std::vector<LogprobEntry>* logprobs = nullptr;
  std::string reasoning = {};  // chat: its reasoning_content when not empty
  std::vector<infer::ToolCall> tool_calls = {};  // chat: its tool calls
  std::vector<ServerToolCall> server_tool_calls = {};  // chat: the calls the server ran
};
// The answer with its choices (index i = choices[i]); usage sums them.
nlohmann::json completion_body(const ResponseHeader& header, const std::vector<ChoiceOutput>& choices, const Usage& usage);
// One streamed chunk of choice header.index: text (a chat's first chunk also gives the role) and,
// in the last, the finish reason.
// `reasoning`: chat, the delta's reasoning_content when not empty.
nlohmann::json completion_chunk(const ResponseHeader& header, const std::string& text, bool first,
                                const std::string& finish_reason = "",
                                const std::vector<LogprobEntry>* logprobs = nullptr, const std::string& reasoning = "");
// The two chunks of choice header.index's tool call number `index` (of its answer): its id and name, then its arguments.
std::vector<nlohmann::json> tool_call_chunks(const ResponseHeader& header, const infer::ToolCall& call, int64_t index);
// The chunk of choice header.index's server-run call number `index`, with its answer.
nlohmann::json server_tool_call_chunk(const ResponseHeader& header, const ServerToolCall& call, int64_t index);
// The chunk after the last one when stream_options.include_usage: no choices, the usage.
nlohmann::json usage_chunk(const ResponseHeader& header, const Usage& usage);

}  // namespace nf::serve
