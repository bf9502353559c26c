#pragma once
// Supervised fine-tuning data, with the loss on the answer's tokens only: chat conversations
// rendered by a chat template (tokenizer/chat_template.h), trained on the assistant's tokens, or
// prompt-completion pairs ({"prompt": ..., "completion": ...}, the format of OpenAI's legacy
// fine-tuning and TRL's prompt-completion datasets), trained on the completion's tokens; or
// preference pairs for DPO ({"chosen": [messages], "rejected": [messages]}, MiniMind's dpo.jsonl),
// two conversations rendered by the same template, the response mask on their assistant tokens.
//
// Each example is rendered whole and truncated to its first context + 1 tokens (as MiniMind
// truncates input_ids[:max_length]); one that keeps no trained token is dropped (counted). Row b
// of batch i takes example k = i * B + b of the order: shuffled by a permutation that is a pure
// function of (seed, epoch = k / N) for training, file order for validation. Inputs are the
// example's ids but the last, targets the ids shifted by one where the template trains on them and
// kIgnoreIndex elsewhere; rows are padded (pad id as input, kIgnoreIndex as target) to the longest
// row of the batch (nanochat) or to the context (MiniMind). Preference pairs are groups of two
// examples (chosen, then rejected) kept or dropped together and batched together: row 2b of a
// batch is pair b's chosen conversation, row 2b + 1 its rejected one.
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "nanoformer/data/batch.h"
#include "nanoformer/tokenizer/chat_template.h"
#include "nanoformer/tokenizer/jsonl.h"

namespace nf::data {

using tokenizer::TokenId;

class SftExamples {
 public:
  // Adds a rendered conversation, truncated to max_tokens; counts it as dropped and returns false
  // when no token after the first is trained on. `file` indexes files(), `line` is the JSONL line.
  bool add(const tokenizer::RenderedChat& chat, size_t max_tokens, uint32_t file, uint64_t line) {
    return add_group({&chat, 1}, max_tokens, file, line);
  }
  // Adds every chat of a group (a preference pair) or, when one of them keeps no trained token,
  // none (the group counted as dropped once).
  bool add_group(std::span<const tokenizer::RenderedChat> chats, size_t max_tokens, uint32_t file, uint64_t line);
  // Whether `chat` truncated to max_tokens trains on a token after its first.
  static bool keeps_trained_token(const tokenizer::RenderedChat& chat, size_t max_tokens);
  void add_file(std::string path) { files_.push_back(std::move(path)); }

  size_t size() const { return offsets_.size() - 1; }
  std::span<const TokenId> ids(size_t k) const;
  std::span<const uint8_t> trained(size_t k) const;
  // "sft.jsonl:12": where example k came from.
  std::string origin(size_t k) const;
  uint64_t tokens() const { return ids_.size(); }
  const std::vector<std::string>& files() const { return files_; }
  // Throws nf::Error naming the example's file, line and position when an id is not below vocab_size.
  void check_vocab(uint64_t vocab_size) const;
  // Conversations (groups) left out by add() and add_group() (no trained token within the limit).
  size_t dropped() const { return dropped_; }

 private:
  std::vector<TokenId> ids_;
  std::vector<uint8_t> trained_;
  std::vector<uint64_t> offsets_{0};
  std::vector<std::pair<uint32_t, uint64_t>> origins_;  // (file, line)
  std::vector<std::string> files_;
  size_t dropped_ = 0;
};

// Reads a chat JSONL file ({"conversations": [{"role": ..., "content": ...}, ...]} per line) into
// examples, rendering the conversations in parallel. Messages are read as MiniMind's SFTDataset
// (d65ef2c) reads them: "tools" on a system message (or the record's "tools") and "tool_calls" on an
// assistant's, each a string of JSON or a list; "reasoning_content" on an assistant's; "tool_call_id"
// on a tool message (OpenAI's); the template renders them (docs/training.md, "Conversations with
// tools"). Throws nf::Error "<file>:<line>: ..." naming the message and key on malformed JSON, a
// missing or non-string role or content, tools or tool_calls that are not JSON lists of objects, a
// key on a role it does not belong to, an unknown non-null message key, or what the template refuses
// (a role, or tools with a template that cannot render them).
void read_sft_jsonl(const std::string& path, const tokenizer::ChatTemplate& chat_template, size_t max_tokens,
                    SftExamples& examples, const tokenizer::ByteProgress& progress = {});

// The ids of a prompt-completion pair: encode(prompt) untrained, then encode(completion) and the
// tokenizer's end-of-text token when it has one (as TRL appends EOS), trained.
tokenizer::RenderedChat render_completion(const tokenizer::Tokenizer& tokenizer, const std::string& prompt,
                                          const std::string& completion);
// Reads a prompt-completion JSONL file ({"prompt": "...", "completion": "..."} per line) into
// examples. Throws nf::Error "<file>:<line>: ..." on malformed JSON or a missing or non-string field.
void read_completion_jsonl(const std::string& path, const tokenizer::Tokenizer& tokenizer, size_t max_tokens,
                           SftExamples& examples, const tokenizer::ByteProgress& progress = {});
// Reads a DPO JSONL file ({"chosen": [{"role": ..., "content": ...}, ...], "rejected": [...]} per
// line) into groups of two examples, chosen then rejected. Throws nf::Error "<file>:<line>: ..."
// naming the field ("chosen" or "rejected") that is missing or not an array of messages.
void read_preference_jsonl(const std::string& path, const tokenizer::ChatTemplate& chat_template, size_t max_tokens,
                           SftExamples& examples, const tokenizer::ByteProgress& progress = {});

class SftBatches final : public BatchSource {
 public:
  // Groups [begin, end) of `group` consecutive examples each (1: single examples, 2: preference
  // pairs), batch_size groups a batch (batch_size x group rows); shuffle: a new seeded order of the
  // groups each epoch, else file order.
  SftBatches(std::shared_ptr<const SftExamples> examples, size_t begin, size_t end, int64_t batch_size,
             int64_t context, bool shuffle, uint64_t seed, TokenId pad_id, bool pad_to_context, std::string part,
             int64_t group = 1);

  Batch batch(uint64_t index) const override;
  int64_t batch_size() const override { return batch_size_; }
  int64_t context() const override { return context_; }
  std::string describe() const override;

  // The group (its first example is examples[group x it]) at position b of batch `index`.
  size_t example_index(uint64_t index, int64_t b) const;
  int64_t group() const { return group_; }

 private:
  // The epoch's order of [0, end - begin): Fisher-Yates with Philox draws keyed by the seed.
  std::shared_ptr<const std::vector<uint32_t>> permutation(uint64_t epoch) const;

  std::shared_ptr<const SftExamples> examples_;
  size_t begin_, end_;
  int64_t batch_size_, context_;
  bool shuffle_;
  uint64_t seed_;
  TokenId pad_id_;
  bool pad_to_context_;
  std::string part_;
  int64_t group_;
  mutable std::mutex cache_mutex_;  // the last permutation made, reused by the epoch's batches
  mutable uint64_t cached_epoch_ = 0;
  mutable std::shared_ptr<const std::vector<uint32_t>> cached_;
};

}  // namespace nf::data
