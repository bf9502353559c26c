// Requests to scheduled sequences and their text (serve/completion_service.h).
#include "nanoformer/serve/completion_service.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <random>

#include "nanoformer/core/error.h"
#include "nanoformer/infer/hermes_tools.h"
#include "nanoformer/serve/api_error.h"
#include "nanoformer/tokenizer/jsonl.h"

namespace nf::serve {

Completion::Completion(ResponseHeader header, const tokenizer::Tokenizer& tokenizer, const infer::StopCriteria& stop,
                       int64_t prompt_tokens, bool logprobs, std::optional<ReasoningSplitter> reasoning,
                       std::string echo, bool tool_calls, bool server_tools, std::vector<std::string> client_tools)
    : header_(std::move(header)),
      tokenizer_(tokenizer),
      logprobs_(logprobs),
      streamer_(tokenizer, stop),
      reasoning_(std::move(reasoning)),
      tool_calls_for_client_(tool_calls),
      server_tools_(server_tools),
      client_tools_(std::move(client_tools)) {
  if (tool_calls || server_tools) tool_calls_.emplace();
  pending_.usage.prompt_tokens = prompt_tokens;
  text_bytes_ = static_cast<int64_t>(echo.size());
  (logprobs ? held_echo_ : pending_.text) = std::move(echo);
}

void Completion::on_logprobs(const infer::TokenLogprobs& logprobs) {
  if (forced_ > 0) return;  // a tool message's token: not in the answer's text (on_token counts it down)
  const auto bytes = [&](int64_t id) { return std::string(tokenizer_.token_bytes(static_cast<tokenizer::TokenId>(id))); };
  LogprobEntry entry{.token = bytes(logprobs.id), .logprob = logprobs.logprob, .top = {}, .text_offset = token_bytes_};
  for (const auto& [id, logprob] : logprobs.top) entry.top.emplace_back(bytes(id), logprob);
  token_bytes_ += static_cast<int64_t>(entry.token.size());
  held_.push_back(std::move(entry));
}

void Completion::on_prompt_logprobs(int64_t first_id, const std::vector<infer::TokenLogprobs>& rest) {
  const std::string first(tokenizer_.token_bytes(static_cast<tokenizer::TokenId>(first_id)));
  held_.push_back({.token = first, .logprob = std::nullopt, .top = {}, .text_offset = token_bytes_});
  token_bytes_ += static_cast<int64_t>(first.size());
  for (const infer::TokenLogprobs& l : rest) on_logprobs(l);
  {
    std::lock_guard lock(mutex_);
    pending_.text.insert(0, held_echo_);  // the echoed text and its logprobs in one chunk
    held_echo_.clear();
    release_logprobs();  // within the echoed text
  }
  changed_.notify_all();
}

void Completion::release_logprobs() {  // mutex_ held
  size_t released = 0;
  while (released < held_.size() && held_[released].text_offset < text_bytes_) ++released;
  std::move(held_.begin(), held_.begin() + static_cast<ptrdiff_t>(released), std::back_inserter(pending_.logprobs));
  held_.erase(held_.begin(), held_.begin() + static_cast<ptrdiff_t>(released));
}

void Completion::give(const std::string& text, bool end) {
  text_bytes_ += static_cast<int64_t>(text.size());  // logprobs' offsets count the reasoning's bytes too
  std::string reply = text;
  if (reasoning_) {
    AnswerParts parts = reasoning_->push(text);
    if (end) {
      const AnswerParts rest = reasoning_->finish();
      parts.reasoning += rest.reasoning, parts.content += rest.content;
    }
    pending_.reasoning += parts.reasoning;
    reply = std::move(parts.content);
  }
  if (!tool_calls_) {
    pending_.text += reply;
    return;
  }
  infer::ToolCallParts parts = tool_calls_->push(reply);
  if (end) {
    infer::ToolCallParts rest = tool_calls_->finish();
    parts.content += rest.content;
    std::move(rest.calls.begin(), rest.calls.end(), std::back_inserter(parts.calls));
  }
  pending_.text += parts.content;
  for (infer::ToolCall& call : parts.calls) {
    const bool client = std::find(client_tools_.begin(), client_tools_.end(), call.name) != client_tools_.end();
    if (server_tools_ && !client) continue;  // the server ran it: on_tool_turn reports it with its answer
    if (!tool_calls_for_client_) continue;
    called_ = true;
    pending_.tool_calls.push_back(std::move(call));
  }
}

void Completion::on_tool_turn(const infer::ToolTurn& turn) {
  {
    std::lock_guard lock(mutex_);
    for (size_t i = 0; i < turn.calls.size(); ++i)
      pending_.server_tool_calls.push_back(
          {.call = turn.calls[i], .output = turn.ran ? std::optional<std::string>(turn.answers[i]) : std::nullopt});
  }
  forced_ = turn.forced;
  changed_.notify_all();
}

bool Completion::on_token(int64_t id) {
  if (forced_ > 0) {  // a tool message's token: neither text nor subject to the stop strings
    --forced_;
    return true;
  }
  std::string text = streamer_.push(id);
  {
    std::lock_guard lock(mutex_);
    give(text);
    release_logprobs();
    pending_.usage.completion_tokens = streamer_.new_tokens();
  }
  changed_.notify_all();
  return !streamer_.stopped();
}

void Completion::on_done(const SequenceOutcome& outcome) {
  std::string text = outcome.error.empty() ? streamer_.finish() : std::string();
  {
    std::lock_guard lock(mutex_);
    pending_.text.insert(0, held_echo_);  // a sequence that failed before its prompt was scored
    held_echo_.clear();
    give(text, /*end=*/true);
    release_logprobs();  // the rest (an end token, a stop string's tokens) are not in the answer
    pending_.done = true;
    pending_.error = outcome.error;
    pending_.usage.completion_tokens = outcome.completion_tokens;
    const bool length = outcome.reason == infer::StopReason::max_new_tokens || outcome.reason == infer::StopReason::context_full;
    pending_.finish_reason = length ? "length" : called_ ? "tool_calls" : "stop";
  }
  changed_.notify_all();
}

CompletionUpdate Completion::wait(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, timeout, [&] {
    return pending_.done || !pending_.text.empty() || !pending_.reasoning.empty() || !pending_.tool_calls.empty() ||
           !pending_.server_tool_calls.empty();
  });
  CompletionUpdate update = pending_;
  pending_.text.clear();
  pending_.reasoning.clear();
  pending_.tool_calls.clear();
  pending_.server_tool_calls.clear();
  pending_.logprobs.clear();
  return update;
}

CompletionService::CompletionService(Scheduler& scheduler, const tokenizer::Tokenizer& tokenizer,
                                     const tokenizer::ChatTemplate* chat_template, std::string model_name,
                                     std::optional<int64_t> prompt_bos, bool split_reasoning,
                                     std::shared_ptr<const infer::ToolUse> tools)
    : scheduler_(scheduler),
      tokenizer_(tokenizer),
      chat_template_(chat_template),
      end_of_text_(tokenizer::end_of_text_id(tokenizer)),
      model_name_(std::move(model_name)),
      prompt_bos_(prompt_bos),
      split_reasoning_(split_reasoning),
      tools_(std::move(tools)) {}

std::vector<int64_t> CompletionService::prompt_ids(const CompletionRequest& r) const {
  std::vector<tokenizer::TokenId> ids;
  if (r.endpoint == Endpoint::chat) {
    if (!chat_template_)
      throw invalid_request("messages", "this model's tokenizer has no chat template: use /v1/completions");
    try {
      ids = chat_template_->render_for_completion(r.messages, r.tool_use.tools);
    } catch (const Error& e) {
      throw invalid_request("messages", e.what());
    }
  } else {
    ids = tokenizer_.encode(r.prompt);
    if (ids.empty()) throw invalid_request("prompt", "'prompt' is empty");
    if (prompt_bos_) ids.insert(ids.begin(), static_cast<tokenizer::TokenId>(*prompt_bos_));
  }
  return {ids.begin(), ids.end()};
}

std::string CompletionService::prompt_text(const CompletionRequest& r) const {
  const std::vector<int64_t> ids = prompt_ids(r);
  return tokenizer_.decode(std::vector<tokenizer::TokenId>(ids.begin(), ids.end()));
}

std::shared_ptr<const grammar::TokenTrie> CompletionService::token_trie() {
  std::call_once(trie_once_, [&] { trie_ = grammar::TokenTrie::of(tokenizer_); });
  return trie_;
}

void CompletionService::check_model(const std::string& id) const {
  if (!id.empty() && id != model_name_)
    throw ApiError(404, "the model '" + id + "' does not exist: this server serves '" + model_name_ + "'",
                   "invalid_request_error", "model", "model_not_found");
}

std::vector<std::shared_ptr<Completion>> CompletionService::start(const CompletionRequest& r) {
  check_model(r.model);
  const std::vector<int64_t> prompt = prompt_ids(r);
  const auto length = static_cast<int64_t>(prompt.size());
  const int64_t context = scheduler_.context();
  if (length >= context)
    throw invalid_request(r.endpoint == Endpoint::chat ? "messages" : "prompt",
                          "the prompt is " + std::to_string(length) + " tokens, but the context holds " +
                              std::to_string(context) + ", leaving no room for a new token",
                          "context_length_exceeded");
  // without max_tokens, to the end of the context; with it, past the end (the context shifts)
  infer::StopCriteria stop{.eos_ids = {}, .stop_strings = r.stop, .max_new_tokens = r.max_tokens.value_or(context - length)};
  const int64_t max_new_tokens = stop.max_new_tokens;  // 0: the prompt scored only (echo)
  stop.max_new_tokens = std::max<int64_t>(stop.max_new_tokens, 1);  // the text streamer's, which sees no token then
  if (r.endpoint == Endpoint::chat && chat_template_)
    stop.eos_ids.push_back(chat_template_->end_token());
  else if (end_of_text_)
    stop.eos_ids.push_back(*end_of_text_);

  const bool chat = r.endpoint == Endpoint::chat;
  ResponseHeader header{.id = (chat ? "chatcmpl-" : "cmpl-") + std::to_string(next_id_++),
                        .created = std::chrono::duration_cast<std::chrono::seconds>(
                                       std::chrono::system_clock::now().time_since_epoch())
                                       .count(),
                        .model = model_name_,
                        .endpoint = r.endpoint,
                        .index = 0,
                        .schema_approximations = r.schema_approximations};
  const uint64_t seed = r.seed ? *r.seed : std::random_device{}();
  // a chat template that opens the reasoning itself leaves the answer inside it from its first token
  std::optional<ReasoningSplitter> reasoning;
  if (split_reasoning_ && chat) {
    const size_t tail = std::min<size_t>(prompt.size(), 16);  // enough for <think> as single bytes
    std::string end = tokenizer_.decode(std::vector<tokenizer::TokenId>(prompt.end() - static_cast<ptrdiff_t>(tail), prompt.end()));
    while (!end.empty() && std::isspace(static_cast<unsigned char>(end.back()))) end.pop_back();
    reasoning = ReasoningSplitter(end.size() >= 7 && end.compare(end.size() - 7, 7, "<think>") == 0);
  }
  if (r.n > scheduler_.capacity())
    throw invalid_request("n", "'n' is " + std::to_string(r.n) + ", but this server holds at most " +
                                   std::to_string(scheduler_.capacity()) + " sequences at once (--parallel + --queue)");
  // server tools: the request's own tools (when they are parsed) are left to its client
  const bool server_tools = chat && tools_ != nullptr;
  std::vector<std::string> client_tools;
  if (server_tools && r.tool_use.parsed())
    for (const auto& tool : nlohmann::json::parse(r.tool_use.tools)) client_tools.push_back(tool.at("function").at("name"));
  std::vector<std::shared_ptr<Completion>> choices;
  std::vector<SequenceRequest> sequences;
  for (int64_t i = 0; i < r.n; ++i) {
    header.index = i;
    auto completion = std::make_shared<Completion>(header, tokenizer_, stop, length, r.top_logprobs >= 0, reasoning,
                                                   r.echo ? r.prompt : std::string(), r.tool_use.parsed(), server_tools,
                                                   client_tools);
    SequenceRequest sequence{.prompt = prompt,
                             .sampler = r.sampler,
                             .stop = {.eos_ids = stop.eos_ids, .stop_strings = {}, .max_new_tokens = max_new_tokens},
                             .on_token = [completion](int64_t id) { return completion->on_token(id); },
                             .on_done = [completion](const SequenceOutcome& o) { completion->on_done(o); },
                             .cancelled = completion->cancelled_,
                             .on_logprobs = nullptr,
                             .top_logprobs = std::max<int64_t>(r.top_logprobs, 0),
                             .speculative = r.speculative};
    if (r.grammar)  // each choice walks the grammar on its own
      sequence.constraint = std::make_shared<grammar::GrammarConstraint>(r.grammar, token_trie(), stop.eos_ids);
    if (r.top_logprobs >= 0)
      sequence.on_logprobs = [completion](const infer::TokenLogprobs& l) { completion->on_logprobs(l); };
    if (r.top_logprobs >= 0 && r.echo)
      sequence.on_prompt_logprobs = [completion, first = prompt.front()](const std::vector<infer::TokenLogprobs>& rest) {
        completion->on_prompt_logprobs(first, rest);
      };
    if (server_tools) {  // each choice its own tools' state, telling its completion of each turn
      sequence.tools = tools_->clone();
      if (auto* hermes = dynamic_cast<infer::HermesToolUse*>(sequence.tools.get())) hermes->leave_to_client(client_tools);
      sequence.tools->on_turn = [completion](const infer::ToolTurn& turn) { completion->on_tool_turn(turn); };
    }
    sequence.sampler.seed = seed + static_cast<uint64_t>(i);  // choice i: seed + i
    sequence.sampler.vocab_limit = static_cast<int64_t>(tokenizer_.vocab_size());  // a padded model's extra ids are never drawn
    sequences.push_back(std::move(sequence));
    choices.push_back(std::move(completion));
  }
  if (!scheduler_.submit(std::move(sequences)))  // all of the choices or none
    throw ApiError(503, "the server is busy: the queue is full; retry later", "server_error", "", "queue_full");
  return choices;
}

}  // namespace nf::serve
