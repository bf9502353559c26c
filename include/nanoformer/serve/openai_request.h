#pragma once
// The body of an OpenAI chat completion (POST /v1/chat/completions) or text completion
// (POST /v1/completions) request, parsed and validated into what generation needs. Every error is
// an ApiError 400 naming the field (`param`) and the value at fault; unknown fields are ignored, as
// llama.cpp's server does. Fields (OpenAI's, plus top_k, min_p, repetition_penalty):
//   model               string, optional; another name than the served model's: 404 model_not_found
//   messages            chat: non-empty array of {"role": system|developer|user|assistant|tool,
//                       "content": string or [{"type": "text", "text": ...}]}; an assistant's may
//                       carry "tool_calls" (its content then null or absent), a tool's needs "tool_call_id"
//   tools, tool_choice, parallel_tool_calls   chat: serve/tool_request.h
//   prompt              completion: a string (or an array of one string)
//   temperature [0, 2], top_p (0, 1], top_k >= 0, min_p [0, 1], repetition_penalty > 0,
//   frequency_penalty and presence_penalty [-2, 2] (over the tokens generated, infer/sampler.h)
//   max_tokens (or max_completion_tokens) >= 1 (>= 0 with echo); absent: up to the end of the context
//   stop                a non-empty string or an array of up to 4 of them
//   seed                an integer; absent: a seed drawn per request
//   stream, stream_options.include_usage   booleans
//   logprobs            chat: a boolean, with top_logprobs in [0, 20]; completion: an integer in [0, 5]
//   n                   choices, in [1, 128]; with a seed s, choice i samples with seed s + i
//   echo                completion: the answer's text (and logprobs) begin with the prompt's, the first
//                       token's logprob null; max_tokens may then be 0 (the prompt scored only)
//   suffix              refused when set
//   response_format     {"type": "text"}, {"type": "json_object"} (any JSON object) or {"type":
//                       "json_schema", "json_schema": {"name", "schema", "strict"}}: constrained
//                       decoding (grammar/json_schema.h); an assertion no grammar expresses: 400
//                       naming it, unless strict is false: then approximated, and the response's
//                       "schema_approximations" lists where
//   grammar             llama.cpp's extension: GBNF text (grammar/grammar.h); not with response_format
//   speculative.ngram_size_n >= 0, speculative.n_max >= 1, speculative.n_min in [0, n_max]
//                       llama-server's per-request speculative fields (tools/server/server-schema.cpp,
//                       llama.cpp 0c1e570): prompt lookup of the last N..1 tokens, drafts of at most
//                       n_max tokens, shorter than n_min not verified (infer/prompt_lookup.h); 0 = off
//   speculative.p_min   in [0, 1]: a draft model's draft ends before a token it is less sure of (0 = off)
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nanoformer/grammar/grammar.h"
#include "nanoformer/infer/prompt_lookup.h"
#include "nanoformer/infer/sampler.h"
#include "nanoformer/serve/tool_request.h"
#include "nanoformer/tokenizer/chat_template.h"

namespace nf::serve {

enum class Endpoint { chat, completion };

struct CompletionRequest {
  Endpoint endpoint = Endpoint::chat;
  std::string model;
  std::vector<tokenizer::ChatMessage> messages;  // chat
  std::string prompt;                            // completion
  infer::SamplerConfig sampler{.temperature = 1.0};
  std::optional<uint64_t> seed;
  std::optional<int64_t> max_tokens;
  std::vector<std::string> stop;
  bool stream = false, include_usage = false;
  int64_t top_logprobs = -1;  // logprobs: -1 none; else each token's and this many most likely ones'
  int64_t n = 1;              // choices
  bool echo = false;          // completion: the prompt first in the answer
  std::shared_ptr<const grammar::Grammar> grammar;  // response_format, grammar or a forced tool call, compiled; null: free text
  std::vector<std::string> schema_approximations;  // response_format with strict false: where the grammar approximates
  ToolRequest tool_use;                           // chat: the tools offered and tool_choice
  infer::SpeculativeConfig speculative;           // speculative.*: prompt lookup (off unless ngram_size_n > 0)
};

// Throws ApiError (400) for malformed JSON, a wrong type, a value out of range or a missing field.
CompletionRequest parse_completion_request(std::string_view body, Endpoint endpoint);

}  // namespace nf::serve
