// GGUF's tokenizer.ggml.* keys <-> BpeTokenizer (see gguf_tokenizer.h).
#include "nanoformer/tokenizer/gguf_tokenizer.h"

#include <algorithm>
#include <array>
#include <optional>
#include <set>
#include <variant>

#include "nanoformer/core/error.h"
#include "nanoformer/tokenizer/byte_level.h"
#include "nanoformer/tokenizer/chat_template.h"
#include "nanoformer/tokenizer/jsonl.h"

namespace nf::tokenizer {
namespace {

constexpr const char* kModelKey = "tokenizer.ggml.model";
constexpr const char* kNoTokenizer = "none";
constexpr const char* kPreKey = "tokenizer.ggml.pre";
constexpr const char* kTokensKey = "tokenizer.ggml.tokens";
constexpr const char* kTypesKey = "tokenizer.ggml.token_type";
constexpr const char* kMergesKey = "tokenizer.ggml.merges";
constexpr const char* kAddBosKey = "tokenizer.ggml.add_bos_token";
constexpr const char* kAddEosKey = "tokenizer.ggml.add_eos_token";

// llama.cpp's token types (llama_token_type).
enum TokenType : int32_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

// llama.cpp's tokenizer.ggml.pre names whose split is GPT-2's regex alone (LLAMA_VOCAB_PRE_TYPE_GPT2),
// and those whose split is LLaMA-3's (LLAMA_VOCAB_PRE_TYPE_LLAMA3, where llama.cpp also ignores merges
// for whole words in the vocabulary). The first of each is what we write.
constexpr std::array kGpt2PreNames = {"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de",
                                      "a.x-4.0", "mellum", "modern-bert"};
constexpr std::array kLlama3PreNames = {"llama-bpe", "llama3", "llama-v3", "falcon3", "falcon-h1", "pixtral",
                                        "midm-2.0", "lfm2", "jina-v5-nano"};
// ... and Qwen2's (LLAMA_VOCAB_PRE_TYPE_QWEN2 in llama.cpp 0c1e570 src/llama-vocab.cpp: LLaMA-3's split with
// one digit a piece, merges kept).
constexpr std::array kQwen2PreNames = {"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "megrez"};

// MiniMind2's ChatML template, as its train_tokenizer.py writes it into tokenizer_config.json
// (tools/tokenizer/chat_template_golden.py checks it renders as nanoformer's "chatml").
constexpr const char* kChatmlJinja =
    "{% if messages[0]['role'] == 'system' %}{% set system_message = messages[0]['content'] %}"
    "{{ '<|im_start|>system\\n' + system_message + '<|im_end|>\\n' }}"
    "{% else %}{{ '<|im_start|>system\\nYou are a helpful assistant<|im_end|>\\n' }}{% endif %}"
    "{% for message in messages %}{% set content = message['content'] %}"
    "{% if message['role'] == 'user' %}{{ '<|im_start|>user\\n' + content + '<|im_end|>\\n<|im_start|>assistant\\n' }}"
    "{% elif message['role'] == 'assistant' %}{{ content + '<|im_end|>' + '\\n' }}{% endif %}{% endfor %}";

std::string context(const io::GGUFFile& file) { return file.path() + ": "; }

template <class T>
const std::vector<T>& array_key(const io::GGUFFile& file, const std::string& key, const char* expected) {
  const io::GGUFValue& value = file.get(key);
  const auto* items = std::get_if<std::vector<T>>(&value);
  NF_CHECK(items, context(file), "key '", key, "' is ", io::gguf_value_type_name(value), ", not an array of ", expected);
  return *items;
}

// Token types as int32 whatever integer type the writer chose (convert writes i32).
std::vector<int64_t> token_types(const io::GGUFFile& file, size_t n_tokens) {
  if (!file.has(kTypesKey)) return std::vector<int64_t>(n_tokens, kNormal);
  std::vector<int64_t> types;
  std::visit(
      [&](const auto& v) {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, std::vector<int32_t>> || std::is_same_v<V, std::vector<uint32_t>> ||
                      std::is_same_v<V, std::vector<int8_t>> || std::is_same_v<V, std::vector<uint8_t>> ||
                      std::is_same_v<V, std::vector<int16_t>> || std::is_same_v<V, std::vector<uint16_t>>) {
          types.assign(v.begin(), v.end());
        } else {
          NF_FAIL(context(file), "key '", kTypesKey, "' is ", io::gguf_value_type_name(file.get(kTypesKey)),
                  ", not an array of integers");
        }
      },
      file.get(kTypesKey));
  NF_CHECK(types.size() == n_tokens, context(file), "key '", kTypesKey, "' has ", types.size(), " entries but '",
           kTokensKey, "' has ", n_tokens);
  return types;
}

PreTokenizerOptions pre_tokenizer(const io::GGUFFile& file, BpeOptions& options) {
  const std::string pre = file.has(kPreKey) ? file.get_string(kPreKey) : std::string();
  if (std::find(kGpt2PreNames.begin(), kGpt2PreNames.end(), pre) != kGpt2PreNames.end())
    return {.pattern = SplitPattern::kGpt2};
  if (std::find(kLlama3PreNames.begin(), kLlama3PreNames.end(), pre) != kLlama3PreNames.end()) {
    options.ignore_merges = true;
    return {.pattern = SplitPattern::kGpt4};
  }
  if (std::find(kQwen2PreNames.begin(), kQwen2PreNames.end(), pre) != kQwen2PreNames.end())
    return {.pattern = SplitPattern::kQwen2};
  NF_FAIL(context(file), pre.empty() ? std::string("no key '") + kPreKey + "' (llama.cpp's legacy 'default' split)"
                                     : std::string("key '") + kPreKey + "' is '" + pre + "'",
          ", which nanoformer cannot split by (gpt-2 and its aliases: GPT-2's regex; llama-bpe and its aliases: "
          "LLaMA-3's; qwen2 and its aliases: Qwen2's); give the model's tokenizer.json with --tokenizer");
}

template <class T>
void add(GGUFMetadata& out, const std::string& key, T value) {
  out.emplace_back(key, io::GGUFValue(std::move(value)));
}

}  // namespace

std::vector<std::pair<std::string, TokenId>> gguf_special_ids(const io::GGUFFile& file) {
  const size_t n_tokens = file.has(kTokensKey) ? array_key<std::string>(file, kTokensKey, "strings").size() : 0;
  std::vector<std::pair<std::string, TokenId>> ids;
  for (const char* name : {"bos", "eos", "eot", "eom", "unknown", "seperator", "padding"}) {
    const std::string key = std::string("tokenizer.ggml.") + name + "_token_id";
    if (!file.has(key)) continue;
    const int64_t id = file.get_int(key);
    NF_CHECK(id >= 0 && static_cast<size_t>(id) < n_tokens, context(file), "key '", key, "' is ", id,
             ", not an id of the ", n_tokens, " tokens");
    ids.emplace_back(name, static_cast<TokenId>(id));
  }
  return ids;
}

// "none" (or "no_vocab") is llama.cpp's vocabulary-less model: ids only, vocab_size dummy tokens.
bool has_gguf_tokenizer(const io::GGUFFile& file) {
  if (!file.has(kModelKey)) return false;
  const io::GGUFValue& model = file.get(kModelKey);
  const auto* name = std::get_if<std::string>(&model);
  return !name || (*name != kNoTokenizer && *name != "no_vocab");
}

BpeTokenizer tokenizer_from_gguf(const io::GGUFFile& file) {
  NF_CHECK(has_gguf_tokenizer(file), context(file), "no tokenizer (key '", kModelKey, "' is ",
           file.has(kModelKey) ? "'" + file.get_string(kModelKey) + "'" : std::string("absent"),
           "); give one with --tokenizer");
  const std::string model = file.get_string(kModelKey);
  NF_CHECK(model == "gpt2", context(file), "key '", kModelKey, "' is '", model,
           "': that tokenizer is not supported (gpt2: byte-level BPE)");
  const auto& tokens = array_key<std::string>(file, kTokensKey, "strings");
  const std::vector<int64_t> types = token_types(file, tokens.size());
  BpeOptions options;
  const PreTokenizerOptions pre = pre_tokenizer(file, options);

  std::vector<std::optional<std::string>> vocab(tokens.size());
  std::vector<AddedToken> added;
  for (size_t id = 0; id < tokens.size(); ++id) {
    switch (types[id]) {
      case kNormal:
      case kUnknown:
      case kByte: vocab[id] = tokens[id]; break;
      case kControl:
      case kUserDefined:
        NF_CHECK(!tokens[id].empty(), context(file), "token ", id, " of '", kTokensKey, "' is an empty added token");
        added.push_back({.id = static_cast<TokenId>(id), .content = tokens[id], .special = types[id] == kControl,
                         .normalized = types[id] != kControl});
        break;
      case kUnused: break;
      default:
        NF_FAIL(context(file), "token ", id, " of '", kTokensKey, "' has type ", types[id], " in '", kTypesKey,
                "' (known: 1 normal .. 6 byte)");
    }
  }
  // added tokens are vocabulary entries too, as tokenizer.json files have them, unless a normal token
  // already has their bytes
  std::set<std::string> spellings;
  for (const auto& token : vocab)
    if (token) spellings.insert(*token);
  for (const AddedToken& t : added)
    if (std::string spelling = byte_level::encode(t.content); spellings.insert(spelling).second) vocab[t.id] = spelling;
  std::vector<std::pair<std::string, std::string>> merges;
  if (file.has(kMergesKey)) {
    const auto& lines = array_key<std::string>(file, kMergesKey, "strings");
    merges.reserve(lines.size());
    for (size_t i = 0; i < lines.size(); ++i) {
      const size_t space = lines[i].find(' ');
      NF_CHECK(space != std::string::npos && lines[i].find(' ', space + 1) == std::string::npos, context(file), "merge ",
               i, " of '", kMergesKey, "' is not two tokens separated by one space");
      merges.emplace_back(lines[i].substr(0, space), lines[i].substr(space + 1));
    }
  }
  gguf_special_ids(file);  // checked, though nothing here needs them
  try {
    return BpeTokenizer(BpeModel(std::move(vocab), merges, options), std::move(added), pre);
  } catch (const Error& e) {
    NF_FAIL(context(file), "tokenizer: ", e.what());
  }
}

std::vector<TokenId> gguf_end_ids(const io::GGUFFile& file) {
  std::vector<TokenId> ends;
  for (const auto& [name, id] : gguf_special_ids(file))
    if (name == "eos" || name == "eot" || name == "eom")
      if (std::find(ends.begin(), ends.end(), id) == ends.end()) ends.push_back(id);
  return ends;
}

std::optional<TokenId> gguf_prompt_bos(const io::GGUFFile& file) {
  const auto flag = [&](const char* key, bool absent) {
    if (!file.has(key)) return absent;
    NF_CHECK(std::holds_alternative<bool>(file.get(key)), context(file), "key '", key, "' is a ",
             io::gguf_value_type_name(file.get(key)), ", not a bool");
    return file.get_bool(key);
  };
  NF_CHECK(!flag(kAddEosKey, false), context(file), "key '", kAddEosKey,
           "' is true: appending an end-of-sequence token to every prompt is not supported");
  const std::string pre = file.has(kPreKey) ? file.get_string(kPreKey) : std::string();
  const bool llama3 = std::find(kLlama3PreNames.begin(), kLlama3PreNames.end(), pre) != kLlama3PreNames.end();
  if (!flag(kAddBosKey, llama3)) return std::nullopt;
  for (const auto& [name, id] : gguf_special_ids(file))
    if (name == "bos") return id;
  NF_FAIL(context(file), "key '", kAddBosKey, "' ", file.has(kAddBosKey) ? "is true" : "is absent (true for this pre-tokenizer)",
          " but the file has no tokenizer.ggml.bos_token_id");
}

GGUFMetadata gguf_tokenizer_metadata(const BpeTokenizer& tokenizer, size_t vocab_size, const std::string& source,
                                     const std::string& chat_template,
                                     const std::vector<std::pair<std::string, std::string>>& special_tokens) {
  const PreTokenizerOptions& pre = tokenizer.pre_tokenizer();
  NF_CHECK(pre.pattern != SplitPattern::kNone && !pre.add_prefix_space, source, ": the tokenizer splits with ",
           pre.add_prefix_space ? "add_prefix_space" : "no pattern",
           ", which llama.cpp's byte-level BPE cannot express (GGUF holds the GPT-2 or the GPT-4 split)");
  NF_CHECK(tokenizer.vocab_size() <= vocab_size, source, ": the tokenizer has ", tokenizer.vocab_size(),
           " ids but the model only ", vocab_size);
  std::vector<std::string> tokens(vocab_size);
  std::vector<int32_t> types(vocab_size, kUnused);
  const BpeModel& model = tokenizer.model();
  for (size_t id = 0; id < vocab_size; ++id) {
    const auto tid = static_cast<TokenId>(id);
    if (model.contains(tid)) {
      tokens[id] = model.spelling(tid);
      types[id] = kNormal;
    } else {
      tokens[id] = "[PAD" + std::to_string(id) + "]";
    }
  }
  for (const AddedToken& t : tokenizer.added().tokens()) {
    NF_CHECK(!t.single_word && !t.lstrip && !t.rstrip, source, ": added token '", t.content, "' has ",
             t.single_word ? "single_word" : t.lstrip ? "lstrip" : "rstrip", ", which GGUF cannot express");
    const bool looks_special = t.content.starts_with("<|") && t.content.ends_with("|>");  // as convert_hf_to_gguf
    tokens[t.id] = t.content;
    types[t.id] = t.special || looks_special ? kControl : kUserDefined;
  }
  std::vector<std::string> merges;
  for (const auto& [left, right] : model.merges()) merges.push_back(model.spelling(left) + " " + model.spelling(right));

  GGUFMetadata out;
  add(out, kModelKey, std::string("gpt2"));
  add(out, kPreKey, std::string(pre.pattern == SplitPattern::kGpt2    ? kGpt2PreNames[0]
                                : pre.pattern == SplitPattern::kQwen2 ? kQwen2PreNames[0]
                                                                      : kLlama3PreNames[0]));
  add(out, kTokensKey, std::move(tokens));
  add(out, kTypesKey, std::move(types));
  add(out, kMergesKey, std::move(merges));
  const bool chatml = detect_chat_template(tokenizer) == "chatml";
  const std::optional<TokenId> end_of_text = end_of_text_id(tokenizer);
  // `key`'s token when special_tokens names one the tokenizer has, else `fallback`
  const auto named = [&](std::string_view key, std::optional<TokenId> fallback) {
    for (const auto& [k, text] : special_tokens)
      if (k == key && !text.empty())
        if (const std::optional<TokenId> id = tokenizer.token_id(text)) return id;
    return fallback;
  };
  const std::optional<TokenId> bos = named("bos_token", chatml ? tokenizer.token_id("<|im_start|>") : end_of_text);
  const std::optional<TokenId> eos = named("eos_token", chatml ? tokenizer.token_id("<|im_end|>") : end_of_text);
  const std::optional<TokenId> pad = named("pad_token", chatml ? end_of_text : std::nullopt);
  if (bos) add(out, "tokenizer.ggml.bos_token_id", static_cast<uint32_t>(*bos));
  if (eos) add(out, "tokenizer.ggml.eos_token_id", static_cast<uint32_t>(*eos));
  if (pad) add(out, "tokenizer.ggml.padding_token_id", static_cast<uint32_t>(*pad));
  add(out, kAddBosKey, false);
  add(out, kAddEosKey, false);
  if (!chat_template.empty()) add(out, "tokenizer.chat_template", chat_template);
  else if (chatml) add(out, "tokenizer.chat_template", std::string(kChatmlJinja));
  return out;
}

GGUFMetadata gguf_no_tokenizer_metadata() {
  GGUFMetadata out;
  add(out, kModelKey, std::string(kNoTokenizer));
  return out;
}

}  // namespace nf::tokenizer
