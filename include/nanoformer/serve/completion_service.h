#pragma once
// Between a parsed OpenAI request and the scheduler: renders the chat (the model's chat template)
// or encodes the prompt, bounds it by the context (400 context_length_exceeded), submits it (503
// when the queue is full), and turns the tokens the scheduler hands over into text on its thread
// (TextStreamer: whole UTF-8 characters, stop strings never shown). The HTTP side waits on a
// Completion for the text and the end; cancelling it frees the sequence before the next step.
// No sockets here: tests drive it directly.
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "nanoformer/infer/text_streamer.h"
#include "nanoformer/serve/reasoning_split.h"
#include "nanoformer/serve/openai_response.h"
#include "nanoformer/serve/scheduler.h"
#include "nanoformer/infer/tool_call_parser.h"
#include "nanoformer/tokenizer/chat_template.h"

namespace nf::serve {

// What a Completion has produced since the last wait().
struct CompletionUpdate {
  std::string text;
  std::string reasoning;  // with a reasoning split: the reasoning's text since the last wait (text is the reply's)
  std::vector<LogprobEntry> logprobs;  // with logprobs: those of the tokens whose text starts in `text`
  std::vector<infer::ToolCall> tool_calls;    // with tools: the calls parsed out of the reply since the last wait
  std::vector<ServerToolCall> server_tool_calls;  // with server tools: the calls run (and answered) since the last wait
  bool done = false;
  std::string finish_reason;  // when done: "stop" (end of sequence, stop string), "length", or "tool_calls" (stopped after calls)
  std::string error;          // when done and the sequence failed
  Usage usage;
};

class Completion {
 public:
  // `reasoning`: the answer's <think> part goes to CompletionUpdate::reasoning (serve/reasoning_split.h).
  // `echo`: text the answer begins with (an echoed prompt). `tool_calls`: the reply's <tool_call>s
  // go to CompletionUpdate::tool_calls (infer/tool_call_parser.h). `server_tools`: the server runs
  // the model's calls (serve --tools, on_tool_turn) but those to `client_tools` (the request's):
  // they go to CompletionUpdate::server_tool_calls with their answers, and their <tool_call> text
  // and the tool message forced after them are left out of the text.
  Completion(ResponseHeader header, const tokenizer::Tokenizer& tokenizer, const infer::StopCriteria& stop,
             int64_t prompt_tokens, bool logprobs = false, std::optional<ReasoningSplitter> reasoning = std::nullopt,
             std::string echo = {}, bool tool_calls = false, bool server_tools = false,
             std::vector<std::string> client_tools = {});
  // Blocks until there is new text or the end, or until `timeout`; returns what arrived (nothing
  // new on a timeout).
  CompletionUpdate wait(std::chrono::milliseconds timeout);
  // The client is gone: the scheduler frees the sequence before its next step.
  void cancel() { cancelled_->store(true); }
  const ResponseHeader& header() const { return header_; }
  bool logprobs() const { return logprobs_; }

 private:
  friend class CompletionService;
  bool on_token(int64_t id);                  // scheduler's thread
  void on_logprobs(const infer::TokenLogprobs& logprobs);  // scheduler's thread, before on_token
  // An echoed prompt's logprobs (scheduler's thread, before any token): its first token's id (no
  // logprob) and the others'.
  void on_prompt_logprobs(int64_t first_id, const std::vector<infer::TokenLogprobs>& rest);
  void on_done(const SequenceOutcome& outcome);  // scheduler's thread
  void on_tool_turn(const infer::ToolTurn& turn);  // scheduler's thread, before the turn's forced tokens
  // Moves the held entries whose token's text starts within the text given so far to pending_.
  void release_logprobs();
  // Adds text that became final to pending_ (split into reasoning and reply, and the reply's tool
  // calls, when asked; `end`: the answer's end, held text given too); mutex_ held.
  void give(const std::string& text, bool end = false);

  ResponseHeader header_;
  const tokenizer::Tokenizer& tokenizer_;
  bool logprobs_;
  infer::TextStreamer streamer_;  // scheduler's thread only
  std::optional<ReasoningSplitter> reasoning_;  // scheduler's thread only
  std::optional<infer::ToolCallParser> tool_calls_;    // scheduler's thread only
  bool called_ = false;                         // a tool call was parsed (for the client)
  bool tool_calls_for_client_ = false;          // the request's tools are parsed into tool_calls
  bool server_tools_ = false;
  std::vector<std::string> client_tools_;       // with server tools: the names left to the client
  int64_t forced_ = 0;                          // scheduler's thread only: a tool message's tokens still to come
  // scheduler's thread only: entries whose text is not given yet (held back, or a stop string's),
  // the bytes of the tokens so far, and of the text given so far
  std::vector<LogprobEntry> held_;
  int64_t token_bytes_ = 0, text_bytes_ = 0;
  std::string held_echo_;  // with logprobs: the echoed prompt, sent with its logprobs once they are known
  std::shared_ptr<std::atomic<bool>> cancelled_ = std::make_shared<std::atomic<bool>>(false);
  std::mutex mutex_;
  std::condition_variable changed_;
  CompletionUpdate pending_;  // guarded by mutex_
};

class CompletionService {
 public:
  // `chat_template` may be null: chat requests then answer 400. `prompt_bos`: an id put before each
  // completion prompt (a GGUF tokenizer's add_bos_token). The scheduler, tokenizer and template
  // must outlive the service.
  // `split_reasoning`: a chat answer's <think> ... </think> becomes its reasoning_content.
  // `tools`: tools the server runs while a chat's answer decodes (serve --tools; each choice takes
  // a clone), null: none; calls to a request's own tools are left to its client.
  CompletionService(Scheduler& scheduler, const tokenizer::Tokenizer& tokenizer,
                    const tokenizer::ChatTemplate* chat_template, std::string model_name,
                    std::optional<int64_t> prompt_bos = std::nullopt, bool split_reasoning = false,
                    std::shared_ptr<const infer::ToolUse> tools = nullptr);
  // One Completion per choice (request.n; choice i samples with seed + i), submitted together so
  // that the later ones share the first one's prefill (scheduler.h). Throws ApiError: 404 for a
  // model name not this one's (check_model), 400 for a prompt the context cannot hold or a chat
  // the template refuses, 503 when the queue cannot take every choice (none is then served).
  std::vector<std::shared_ptr<Completion>> start(const CompletionRequest& request);
  // Throws ApiError 404 model_not_found (as OpenAI and vLLM answer) unless `id` names the model
  // served; a request without a model name (empty) is served.
  void check_model(const std::string& id) const;
  const std::string& model_name() const { return model_name_; }
  Scheduler& scheduler() { return scheduler_; }

  // The prompt's text as the model sees it (POST /apply-template): the chat rendered by the template
  // with its tools, or the completion prompt. Throws ApiError 400 as start() does.
  std::string prompt_text(const CompletionRequest& request) const;

 private:
  std::vector<int64_t> prompt_ids(const CompletionRequest& request) const;
  // The tokenizer's vocabulary as a trie for grammar masks, built at the first constrained request
  // (special tokens left out: they are never part of structured output).
  std::shared_ptr<const grammar::TokenTrie> token_trie();

  Scheduler& scheduler_;
  const tokenizer::Tokenizer& tokenizer_;
  const tokenizer::ChatTemplate* chat_template_;
  std::optional<int64_t> end_of_text_;
  std::string model_name_;
  std::optional<int64_t> prompt_bos_;
  bool split_reasoning_;
  std::shared_ptr<const infer::ToolUse> tools_;
  std::atomic<int64_t> next_id_{1};
  std::once_flag trie_once_;
  std::shared_ptr<const grammar::TokenTrie> trie_;
};

}  // namespace nf::serve
