#include "nanoformer/data/sft_data.h"

#include <algorithm>
#include <numeric>

#include "nanoformer/core/error.h"
#include "nanoformer/core/generator.h"
#include "util/json_input.h"

namespace nf::data {
namespace {

using nlohmann::ordered_json;  // keys in the file's order: a template's tojson writes them so
using tokenizer::ChatMessage;

std::string excerpt(const ordered_json& value) { return util::json_excerpt(nlohmann::json(value)); }

const std::string& string_field(const ordered_json& message, const char* key, size_t index, const std::string& where) {
  const auto it = message.find(key);
  NF_CHECK(it != message.end(), where, "message ", index, " has no \"", key, "\"");
  NF_CHECK(it->is_string(), where, "message ", index, ": \"", key, "\" is not a string but ", excerpt(*it));
  return it->get_ref<const std::string&>();
}

// A list that MiniMind's data holds as a string of JSON or as JSON itself (tools, tool_calls), as the
// JSON text of an array of objects; empty for null, "" and [] (MiniMind's "no tools", "no calls").
// `what` names the key for the errors: not JSON, not an array, an element not an object.
std::string json_list_field(const ordered_json& value, const std::string& what) {
  if (value.is_null() || (value.is_string() && value.get_ref<const std::string&>().empty())) return {};
  const ordered_json list = value.is_string()
                                ? util::parse_ordered_json(value.get_ref<const std::string&>(), what + " (a string) is ")
                                : value;
  NF_CHECK(list.is_array(), what, " is not a list but ", excerpt(list));
  for (size_t i = 0; i < list.size(); ++i)
    NF_CHECK(list[i].is_object(), what, ": item ", i, " is not an object but ", excerpt(list[i]));
  return list.empty() ? std::string() : list.dump();
}

// The message keys read; any other one is refused unless null (a template may read any key of a message).
constexpr const char* kMessageKeys[] = {"role", "content", "reasoning_content", "tools", "tool_calls", "tool_call_id"};

// A conversation as the template renders it: the messages and the tools offered (JSON text, empty: none).
struct Conversation {
  std::vector<ChatMessage> messages;
  std::string tools;
};

// The conversation of doc[key] (an array of messages, MiniMind's SFT format: sft_data.h), with the tools
// of its system message or of doc's "tools".
Conversation conversation_from_json(const ordered_json& doc, const char* key, const std::string& where) {
  NF_CHECK(doc.is_object(), where, "expected a JSON object, got ", excerpt(doc));
  const auto conversation = doc.find(key);
  NF_CHECK(conversation != doc.end(), where, "no \"", key, "\" field");
  NF_CHECK(conversation->is_array(), where, "\"", key, "\" is not an array of messages but ", excerpt(*conversation));
  Conversation out;
  std::string tools_from;  // where the tools came from, for "given twice"
  if (const auto top = doc.find("tools"); top != doc.end()) {
    out.tools = json_list_field(*top, where + "\"tools\"");
    if (!out.tools.empty()) tools_from = "the record's \"tools\"";
  }
  const std::string field = where + "\"" + key + "\": ";
  for (size_t i = 0; i < conversation->size(); ++i) {
    const ordered_json& m = (*conversation)[i];
    NF_CHECK(m.is_object(), field, "message ", i, " is not an object but ", excerpt(m));
    const std::string at = field + "message " + std::to_string(i) + ": ";
    for (const auto& [k, v] : m.items())
      NF_CHECK(v.is_null() || std::find(std::begin(kMessageKeys), std::end(kMessageKeys), k) != std::end(kMessageKeys),
               at, "unknown key \"", k, "\" (a message is read by role, content, reasoning_content, tools, tool_calls "
               "and tool_call_id; another key could change what the template renders)");
    ChatMessage message{.role = string_field(m, "role", i, field), .content = ""};
    const std::string& role = message.role;
    auto value = [&](const char* k) { return m.contains(k) ? m[k] : ordered_json(); };
    message.tool_calls = json_list_field(value("tool_calls"), at + "\"tool_calls\"");
    NF_CHECK(message.tool_calls.empty() || role == "assistant", at, "\"tool_calls\" on a message of role ", role,
             " (only an assistant's message makes calls)");
    // OpenAI's calls have a null or no content; MiniMind's template renders a missing content as ""
    if (message.tool_calls.empty() || !value("content").is_null()) message.content = string_field(m, "content", i, field);
    if (const ordered_json r = value("reasoning_content"); !r.is_null()) {
      NF_CHECK(r.is_string(), at, "\"reasoning_content\" is not a string but ", excerpt(r));
      NF_CHECK(role == "assistant", at, "\"reasoning_content\" on a message of role ", role,
               " (the templates render an assistant's only)");
      message.reasoning_content = r.get<std::string>();
    }
    if (const ordered_json id = value("tool_call_id"); !id.is_null()) {
      NF_CHECK(id.is_string(), at, "\"tool_call_id\" is not a string but ", excerpt(id));
      NF_CHECK(role == "tool", at, "\"tool_call_id\" on a message of role ", role,
               " (a tool message answers a call)");
      message.tool_call_id = id.get<std::string>();
    }
    if (std::string tools = json_list_field(value("tools"), at + "\"tools\""); !tools.empty()) {
      NF_CHECK(role == "system", at, "\"tools\" on a message of role ", role,
               " (tools are read from a system message, as MiniMind reads them, or from the record's "
               "\"tools\")");
      NF_CHECK(tools_from.empty(), at, "\"tools\" given twice (also in ", tools_from, ")");
      tools_from = "message " + std::to_string(i);
      out.tools = std::move(tools);
    }
    out.messages.push_back(std::move(message));
  }
  return out;
}

// The conversation rendered by the template, its errors prefixed with `where`.
tokenizer::RenderedChat render_chat(const tokenizer::ChatTemplate& chat_template, const Conversation& conversation,
                                    const std::string& where) {
  try {
    return chat_template.render(conversation.messages, conversation.tools);
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
          rendered[i] = render(util::parse_ordered_json(lines[i].text, where), where);
        });
        for (size_t i = 0; i < lines.size(); ++i) examples.add_group(rendered[i], max_tokens, file, lines[i].number);
      },
      progress);
}

const std::string& string_member(const ordered_json& doc, const char* key, const std::string& where) {
  NF_CHECK(doc.is_object(), where, "expected a JSON object, got ", excerpt(doc));
  const auto it = doc.find(key);
  NF_CHECK(it != doc.end(), where, "no \"", key, "\" field");
  NF_CHECK(it->is_string(), where, "\"", key, "\" is not a string but ", excerpt(*it));
  return it->get_ref<const std::string&>();
}

}  // namespace

void read_sft_jsonl(const std::string& path, const tokenizer::ChatTemplate& chat_template, size_t max_tokens,
                    SftExamples& examples, const tokenizer::ByteProgress& progress) {
  read_examples_jsonl(path, max_tokens, examples, progress, [&](const ordered_json& doc, const std::string& where) {
    return std::vector{render_chat(chat_template, conversation_from_json(doc, "conversations", where), where)};
  });
}

void read_preference_jsonl(const std::string& path, const tokenizer::ChatTemplate& chat_template, size_t max_tokens,
                           SftExamples& examples, const tokenizer::ByteProgress& progress) {
  read_examples_jsonl(path, max_tokens, examples, progress, [&](const ordered_json& doc, const std::string& where) {
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
  read_examples_jsonl(path, max_tokens, examples, progress, [&](const ordered_json& doc, const std::string& where) {
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
