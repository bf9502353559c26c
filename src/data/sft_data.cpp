#include "nanoformer/data/sft_data.h"

#include <algorithm>
#include <numeric>

#include "nanoformer/core/error.h"
#include "nanoformer/core/generator.h"
#include "util/json_input.h"

namespace nf::data {
namespace {

using nlohmann::json;
using tokenizer::ChatMessage;

const std::string& string_field(const json& message, const char* key, size_t index, const std::string& where) {
  const auto it = message.find(key);
  NF_CHECK(it != message.end(), where, "message ", index, " has no \"", key, "\"");
  NF_CHECK(it->is_string(), where, "message ", index, ": \"", key, "\" is not a string but ", util::json_excerpt(*it));
  return it->get_ref<const std::string&>();
}

// The messages of doc[key] (an array of {"role", "content"} objects).
std::vector<ChatMessage> conversation_from_json(const json& doc, const char* key, const std::string& where) {
  NF_CHECK(doc.is_object(), where, "expected a JSON object, got ", util::json_excerpt(doc));
  const auto conversation = doc.find(key);
  NF_CHECK(conversation != doc.end(), where, "no \"", key, "\" field");
  NF_CHECK(conversation->is_array(), where, "\"", key, "\" is not an array of messages but ",
           util::json_excerpt(*conversation));
  std::vector<ChatMessage> messages;
  const std::string field = where + "\"" + key + "\": ";
  for (size_t i = 0; i < conversation->size(); ++i) {
    const json& m = (*conversation)[i];
    NF_CHECK(m.is_object(), field, "message ", i, " is not an object but ", util::json_excerpt(m));
    messages.push_back({string_field(m, "role", i, field), string_field(m, "content", i, field)});
  }
  return messages;
}

// The conversation rendered by the template, its errors prefixed with `where`.
tokenizer::RenderedChat render_chat(const tokenizer::ChatTemplate& chat_template,
                                    const std::vector<ChatMessage>& messages, const std::string& where) {
  try {
    return chat_template.render(messages);
  } catch (const Error& e) {
    NF_FAIL(where, e.what());
  }
}

}  // namespace

bool SftExamples::keeps_trained_token(const tokenizer::RenderedChat& chat, size_t max_tokens) {
  const size_t n = std::min(chat.ids.size(), max_tokens);
  // position 0 is never a target (targets are ids[1:])
  return n >= 2 && std::any_of(chat.trained.begin() + 1, chat.trained.begin() + static_cast<std::ptrdiff_t>(n),
                               [](uint8_t t) { return t != 0; });
}

bool SftExamples::add_group(std::span<const tokenizer::RenderedChat> chats, size_t max_tokens, uint32_t file,
                            uint64_t line) {
  if (!std::all_of(chats.begin(), chats.end(), [&](const auto& c) { return keeps_trained_token(c, max_tokens); })) {
    ++dropped_;
    return false;
  }
  for (const tokenizer::RenderedChat& chat : chats) {
    const size_t n = std::min(chat.ids.size(), max_tokens);
    ids_.insert(ids_.end(), chat.ids.begin(), chat.ids.begin() + static_cast<std::ptrdiff_t>(n));
    trained_.insert(trained_.end(), chat.trained.begin(), chat.trained.begin() + static_cast<std::ptrdiff_t>(n));
    offsets_.push_back(ids_.size());
    origins_.emplace_back(file, line);
  }
  return true;
}

std::span<const TokenId> SftExamples::ids(size_t k) const {
  return std::span<const TokenId>(ids_).subspan(offsets_.at(k), offsets_.at(k + 1) - offsets_[k]);
}

std::span<const uint8_t> SftExamples::trained(size_t k) const {
  return std::span<const uint8_t>(trained_).subspan(offsets_.at(k), offsets_.at(k + 1) - offsets_[k]);
}

std::string SftExamples::origin(size_t k) const {
  const auto& [file, line] = origins_.at(k);
  return files_.at(file) + ":" + std::to_string(line);
}

void SftExamples::check_vocab(uint64_t vocab_size) const {
  for (size_t k = 0; k < size(); ++k) {
    const auto example = ids(k);
    for (size_t t = 0; t < example.size(); ++t)
      NF_CHECK(example[t] < vocab_size, origin(k), ": token ", t, " of the rendered conversation has id ",
               example[t], ", not below the model's vocabulary size ", vocab_size);
  }
}

namespace {

// Reads a JSONL file of examples, rendering its lines in parallel: render(line's JSON, where) gives
// a line's group of chats (one, or a preference pair).
template <typename Render>
void read_examples_jsonl(const std::string& path, size_t max_tokens, SftExamples& examples,
                         const tokenizer::ByteProgress& progress, const Render& render) {
  const auto file = static_cast<uint32_t>(examples.files().size());
  examples.add_file(path);
  std::vector<std::vector<tokenizer::RenderedChat>> rendered;
  tokenizer::read_jsonl_blocks(
      path, 8 << 20,
      [&](std::span<const tokenizer::JsonlLine> lines) {
        rendered.assign(lines.size(), {});
        tokenizer::parallel_for_first_error(lines.size(), 0, [&](size_t i) {
          const std::string where = path + ":" + std::to_string(lines[i].number) + ": ";
          rendered[i] = render(util::parse_json(lines[i].text, where), where);
        });
        for (size_t i = 0; i < lines.size(); ++i) examples.add_group(rendered[i], max_tokens, file, lines[i].number);
      },
      progress);
}

const std::string& string_member(const json& doc, const char* key, const std::string& where) {
  NF_CHECK(doc.is_object(), where, "expected a JSON object, got ", util::json_excerpt(doc));
  const auto it = doc.find(key);
  NF_CHECK(it != doc.end(), where, "no \"", key, "\" field");
  NF_CHECK(it->is_string(), where, "\"", key, "\" is not a string but ", util::json_excerpt(*it));
  return it->get_ref<const std::string&>();
}

}  // namespace

void read_sft_jsonl(const std::string& path, const tokenizer::ChatTemplate& chat_template, size_t max_tokens,
                    SftExamples& examples, const tokenizer::ByteProgress& progress) {
  read_examples_jsonl(path, max_tokens, examples, progress, [&](const json& doc, const std::string& where) {
    return std::vector{render_chat(chat_template, conversation_from_json(doc, "conversations", where), where)};
  });
}

void read_preference_jsonl(const std::string& path, const tokenizer::ChatTemplate& chat_template, size_t max_tokens,
                           SftExamples& examples, const tokenizer::ByteProgress& progress) {
  read_examples_jsonl(path, max_tokens, examples, progress, [&](const json& doc, const std::string& where) {
    const auto chosen = conversation_from_json(doc, "chosen", where);
    const auto rejected = conversation_from_json(doc, "rejected", where);
    return std::vector{render_chat(chat_template, chosen, where + "\"chosen\": "),
                       render_chat(chat_template, rejected, where + "\"rejected\": ")};
  });
}

tokenizer::RenderedChat render_completion(const tokenizer::Tokenizer& tokenizer, const std::string& prompt,
                                          const std::string& completion) {
  tokenizer::RenderedChat out;
  out.ids = tokenizer.encode(prompt);
  out.trained.assign(out.ids.size(), 0);
  for (TokenId id : tokenizer.encode(completion)) out.ids.push_back(id);
  if (const auto eot = tokenizer::end_of_text_id(tokenizer)) out.ids.push_back(*eot);
  out.trained.resize(out.ids.size(), 1);
  return out;
}

void read_completion_jsonl(const std::string& path, const tokenizer::Tokenizer& tokenizer, size_t max_tokens,
                           SftExamples& examples, const tokenizer::ByteProgress& progress) {
  read_examples_jsonl(path, max_tokens, examples, progress, [&](const json& doc, const std::string& where) {
    return std::vector{
        render_completion(tokenizer, string_member(doc, "prompt", where), string_member(doc, "completion", where))};
  });
}

SftBatches::SftBatches(std::shared_ptr<const SftExamples> examples, size_t begin, size_t end, int64_t batch_size,
                       int64_t context, bool shuffle, uint64_t seed, TokenId pad_id, bool pad_to_context,
                       std::string part, int64_t group)
    : examples_(std::move(examples)),
      begin_(begin),
      end_(end),
      batch_size_(batch_size),
      context_(context),
      shuffle_(shuffle),
      seed_(seed),
      pad_id_(pad_id),
      pad_to_context_(pad_to_context),
      part_(std::move(part)),
      group_(group) {
  NF_CHECK(batch_size > 0 && context > 0, "chat batches: batch size ", batch_size, " and context ", context,
           " must be positive");
  NF_CHECK(group > 0 && examples_->size() % static_cast<size_t>(group) == 0, "chat batches: ", examples_->size(),
           " examples do not make groups of ", group);
  const size_t groups = examples_->size() / static_cast<size_t>(group);
  NF_CHECK(begin < end && end <= groups, "chat batches: the ", part_, " has no ",
           group == 2 ? "preference pairs" : "conversations", " (", group == 2 ? "pairs" : "examples", " [", begin,
           ", ", end, ") of ", groups, ")");
  NF_CHECK(end - begin <= UINT32_MAX, "chat batches: more than 2^32 conversations");
}

std::shared_ptr<const std::vector<uint32_t>> SftBatches::permutation(uint64_t epoch) const {
  std::lock_guard<std::mutex> lock(cache_mutex_);
  if (cached_ && cached_epoch_ == epoch) return cached_;
  auto order = std::make_shared<std::vector<uint32_t>>(end_ - begin_);
  std::iota(order->begin(), order->end(), 0u);
  // Fisher-Yates: swap element j with a uniform one of [0, j], drawn from counter (j, epoch)
  for (size_t j = order->size(); j-- > 1;) {
    const auto words = philox4x32(j, epoch, seed_);
    const uint64_t r = (static_cast<uint64_t>(words[0]) << 32) | words[1];
    std::swap((*order)[j], (*order)[r % (j + 1)]);
  }
  cached_epoch_ = epoch;
  cached_ = std::move(order);
  return cached_;
}

size_t SftBatches::example_index(uint64_t index, int64_t b) const {
  const uint64_t n = end_ - begin_;
  const uint64_t k = index * static_cast<uint64_t>(batch_size_) + static_cast<uint64_t>(b);
  if (!shuffle_) return begin_ + k % n;
  return begin_ + (*permutation(k / n))[k % n];
}

Batch SftBatches::batch(uint64_t index) const {
  const int64_t B = batch_size_ * group_;  // rows: the examples of batch_size_ groups
  std::vector<size_t> rows(static_cast<size_t>(B));
  int64_t T = 1;
  for (int64_t b = 0; b < B; ++b) {
    rows[b] = example_index(index, b / group_) * static_cast<size_t>(group_) + static_cast<size_t>(b % group_);
    T = std::max<int64_t>(T, static_cast<int64_t>(examples_->ids(rows[b]).size()) - 1);
  }
  if (pad_to_context_) T = context_;
  Batch out;
  out.inputs = Tensor::empty({B, T}, DType::i64);
  out.targets = Tensor::empty({B, T}, DType::i64);
  int64_t* inputs = out.inputs.data<int64_t>();
  int64_t* targets = out.targets.data<int64_t>();
  for (int64_t b = 0; b < B; ++b) {
    const auto ids = examples_->ids(rows[b]);
    const auto trained = examples_->trained(rows[b]);
    const auto n = static_cast<int64_t>(ids.size()) - 1;  // inputs ids[:-1], targets ids[1:]
    for (int64_t t = 0; t < T; ++t) {
      const bool real = t < n;
      inputs[b * T + t] = real ? ids[t] : pad_id_;
      const bool taken = real && trained[t + 1];
      targets[b * T + t] = taken ? static_cast<int64_t>(ids[t + 1]) : kIgnoreIndex;
      out.target_tokens += taken;
    }
  }
  return out;
}

std::string SftBatches::describe() const {
  const auto& files = examples_->files();
  std::string out = files.front() + (files.size() > 1 ? " + " + std::to_string(files.size() - 1) + " more" : "") +
                    ": " + part_ + ", " + std::to_string(end_ - begin_) +
                    (group_ == 2 ? " preference pairs" : " examples") +
                    (shuffle_ ? " shuffled each epoch" : " in file order") + ", padded to " +
                    (pad_to_context_ ? "the context " + std::to_string(context_) : "the batch's longest");
  if (examples_->dropped() > 0 && group_ == 1)
    out += " (" + std::to_string(examples_->dropped()) + " left out: no trained token within context + 1)";
  else if (examples_->dropped() > 0)
    out += "\nwarning: " + std::to_string(examples_->dropped()) +
           " preference pairs left out because the response mask of their chosen or rejected conversation selects "
           "no token within --context + 1 (a prompt longer than the context, or a template that trains on nothing)";
  return out;
}

}  // namespace nf::data
