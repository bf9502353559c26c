#include "nanoformer/data/data.h"
#include "nanoformer/data/eval_data.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "nanoformer/core/error.h"
#include "nanoformer/data/sft_data.h"
#include "nanoformer/data/token_windows.h"
#include "nanoformer/tokenizer/chat_template.h"
#include "nanoformer/tokenizer/corpus.h"
#include "nanoformer/util/progress_bar.h"
#include "util/json_input.h"

namespace nf::data {
namespace {

namespace tk = nf::tokenizer;

enum class FileKind { token_file, text, jsonl_text, jsonl_chat, jsonl_completion, jsonl_pairs };

const char* kind_name(FileKind kind) {
  switch (kind) {
    case FileKind::token_file: return "a token file";
    case FileKind::text: return "text";
    case FileKind::jsonl_text: return "JSONL of documents";
    case FileKind::jsonl_chat: return "JSONL of conversations";
    case FileKind::jsonl_completion: return "JSONL of prompt-completion pairs";
    case FileKind::jsonl_pairs: return "JSONL of chosen/rejected preference pairs";
  }
  return "";
}

// Fine-tuning examples (loss on the answer only) rather than documents to pretrain on.
bool is_examples(FileKind kind) {
  return kind == FileKind::jsonl_chat || kind == FileKind::jsonl_completion || kind == FileKind::jsonl_pairs;
}

// A token file by its magic; else JSONL by its name (of conversations when the first non-blank
// line has a "conversations" field, of prompt-completion pairs when it has "prompt" and
// "completion", of preference pairs when it has "chosen" or "rejected"); else text.
FileKind classify(const std::string& path) {
  std::error_code ec;
  NF_CHECK(!std::filesystem::is_directory(path, ec), path, ": is a directory, not a data file");
  std::ifstream in(path, std::ios::binary);
  NF_CHECK(in, path, ": cannot open data file: ", std::strerror(errno));
  NF_CHECK(in.peek() != std::ifstream::traits_type::eof(), path, ": the data file is empty (0 bytes): it holds no tokens");
  char head[sizeof tk::kTokenFileMagic] = {};
  in.read(head, sizeof head);
  if (in.gcount() == sizeof head && std::memcmp(head, tk::kTokenFileMagic, sizeof head) == 0) return FileKind::token_file;
  if (!tk::is_jsonl_path(path)) return FileKind::text;
  in.clear();
  in.seekg(0);
  std::string line;
  for (uint64_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(number) + ": ";
    const nlohmann::json first = util::parse_json(line, where);
    if (first.is_object() && first.contains("conversations")) return FileKind::jsonl_chat;
    if (first.is_object() && first.contains("prompt") && first.contains("completion")) return FileKind::jsonl_completion;
    if (first.is_object() && (first.contains("chosen") || first.contains("rejected"))) return FileKind::jsonl_pairs;
    return FileKind::jsonl_text;
  }
  return FileKind::jsonl_text;
}

// One progress bar over the bytes of every file that needs tokenising.
class TokenisingProgress {
 public:
  TokenisingProgress(const std::vector<std::string>& paths, const std::vector<FileKind>& kinds, bool enabled) {
    for (size_t i = 0; i < paths.size(); ++i)
      if (kinds[i] != FileKind::token_file) total_ += tk::corpus_file_size(paths[i]);
    if (enabled && total_ > 0) bar_ = std::make_unique<util::ProgressBar>(static_cast<int64_t>(total_), "tokenising", "B");
  }
  // A reporter for the next file, whose bytes count after those of the files before it.
  tk::ByteProgress next_file(const std::string& path) {
    const uint64_t base = done_;
    done_ += tk::corpus_file_size(path);
    if (!bar_) return {};
    return [this, base](uint64_t done, uint64_t) { bar_->update(static_cast<int64_t>(base + done)); };
  }
  void finish() {
    if (bar_) bar_->finish();
  }

 private:
  uint64_t total_ = 0, done_ = 0;
  std::unique_ptr<util::ProgressBar> bar_;
};

// The files as one corpus; with options.vocab_size, every id checked below it (adding to `check`).
std::shared_ptr<TokenCorpus> read_corpus(const std::vector<std::string>& paths, const std::vector<FileKind>& kinds,
                                         const tk::Tokenizer* tokenizer, const DataOptions& options,
                                         TokenisingProgress& progress, TokenCorpus::VocabCheck& check) {
  auto corpus = std::make_shared<TokenCorpus>();
  for (size_t i = 0; i < paths.size(); ++i) {
    if (kinds[i] == FileKind::token_file) {
      corpus->add_file(tk::TokenFile(paths[i]));
      continue;
    }
    tk::PrepareOptions prepare;
    prepare.jsonl_field = options.jsonl_field;
    prepare.document_separator = tk::end_of_text_id(*tokenizer);
    std::vector<TokenId> ids;
    auto append = [&ids](std::span<const TokenId> part) { ids.insert(ids.end(), part.begin(), part.end()); };
    tk::encode_corpus_file(*tokenizer, paths[i], prepare, append, progress.next_file(paths[i]));
    corpus->add_ids(paths[i], std::move(ids), tokenizer->vocab_size());
  }
  if (options.vocab_size > 0) {
    const TokenCorpus::VocabCheck part = corpus->check_vocab(static_cast<uint64_t>(options.vocab_size));
    check.tokens += part.tokens;
    check.max_id = std::max(check.max_id, part.max_id);
    check.seconds += part.seconds;
  }
  return corpus;
}

// Files other than token files need a tokenizer.
void require_tokenizer(const std::vector<std::string>& paths, const std::vector<FileKind>& kinds,
                       const std::string& tokenizer) {
  for (size_t i = 0; i < paths.size(); ++i)
    NF_CHECK(kinds[i] == FileKind::token_file || !tokenizer.empty(), "data: ", paths[i], " is ", kind_name(kinds[i]),
             ": a tokenizer is needed to tokenise it");
}

std::string percent(double fraction) { return std::to_string(static_cast<int>(std::lround(fraction * 100))) + "%"; }

TrainingData load_pretraining(const DataOptions& o, const std::vector<FileKind>& train_kinds,
                              const std::vector<FileKind>& val_kinds, const tk::Tokenizer* tokenizer) {
  std::vector<std::string> all = o.train_paths;
  all.insert(all.end(), o.val_paths.begin(), o.val_paths.end());
  std::vector<FileKind> all_kinds = train_kinds;
  all_kinds.insert(all_kinds.end(), val_kinds.begin(), val_kinds.end());
  TokenisingProgress progress(all, all_kinds, o.show_progress);
  auto windows = [&](std::shared_ptr<const TokenCorpus> corpus, uint64_t begin, uint64_t end,
                     TokenWindows::Order order, std::string part) {
    return std::make_unique<TokenWindows>(std::move(corpus), begin, end, o.batch_size, o.context, order, o.seed,
                                          std::move(part));
  };
  TrainingData data;
  TokenCorpus::VocabCheck check;
  const auto train = read_corpus(o.train_paths, train_kinds, tokenizer, o, progress, check);
  const auto val = o.val_paths.empty() ? nullptr : read_corpus(o.val_paths, val_kinds, tokenizer, o, progress, check);
  progress.finish();
  if (o.vocab_size > 0) {
    char text[160];
    std::snprintf(text, sizeof text, "token ids checked: %llu tokens, largest id %u < vocabulary %lld, in %.3g ms",
                  static_cast<unsigned long long>(check.tokens), static_cast<unsigned>(check.max_id),
                  static_cast<long long>(o.vocab_size), check.seconds * 1e3);
    data.vocab_check = text;
  }
  if (val) {
    data.train = windows(train, 0, train->size(), TokenWindows::Order::random, "training data");
    data.val = windows(val, 0, val->size(), TokenWindows::Order::sequential, "validation data");
    return data;
  }
  // split by position: the last val_fraction of the tokens is never inside a training window
  const auto val_tokens = static_cast<uint64_t>(std::floor(static_cast<double>(train->size()) * o.val_fraction));
  const uint64_t split = train->size() - val_tokens;
  data.train = windows(train, 0, split, TokenWindows::Order::random,
                       val_tokens ? "training part (the first " + percent(1 - o.val_fraction) + ")" : "training data");
  if (val_tokens > 0)
    data.val = windows(train, split, train->size(), TokenWindows::Order::sequential,
                       "validation part (the last " + percent(o.val_fraction) + ")");
  return data;
}

// Conversations (kind jsonl_chat), prompt-completion pairs (jsonl_completion) or preference pairs
// (jsonl_pairs: groups of two examples) as padded batches.
TrainingData load_examples(const DataOptions& o, const tk::Tokenizer& tokenizer, FileKind kind) {
  const bool chat = kind == FileKind::jsonl_chat || kind == FileKind::jsonl_pairs;
  const int64_t group = kind == FileKind::jsonl_pairs ? 2 : 1;
  // no template named: the tokenizer's own (its tokenizer_config.json's chat_template, or its special tokens')
  const std::string template_name =
      chat && o.chat_template.empty() ? tk::default_chat_template(tokenizer, o.tokenizer) : o.chat_template;
  NF_CHECK(!chat || !template_name.empty(), "data: tokenizer ", o.tokenizer,
           " has no chat_template in a tokenizer_config.json beside it and neither ChatML's nor nanochat's special "
           "tokens: give --chat-template");
  const auto chat_template = chat ? tk::make_chat_template(template_name, tokenizer) : nullptr;
  const auto max_tokens = static_cast<size_t>(o.context) + 1;
  std::vector<FileKind> kinds(o.train_paths.size() + o.val_paths.size(), kind);
  std::vector<std::string> all = o.train_paths;
  all.insert(all.end(), o.val_paths.begin(), o.val_paths.end());
  TokenisingProgress progress(all, kinds, o.show_progress);
  auto load = [&](const std::vector<std::string>& paths) {
    auto examples = std::make_shared<SftExamples>();
    for (const std::string& path : paths) {
      if (kind == FileKind::jsonl_pairs)
        read_preference_jsonl(path, *chat_template, max_tokens, *examples, progress.next_file(path));
      else if (chat)
        read_sft_jsonl(path, *chat_template, max_tokens, *examples, progress.next_file(path));
      else
        read_completion_jsonl(path, tokenizer, max_tokens, *examples, progress.next_file(path));
    }
    return examples;
  };
  const auto train = load(o.train_paths);
  const auto val = o.val_paths.empty() ? nullptr : load(o.val_paths);
  progress.finish();

  // padding's targets are ignored and causal attention keeps it out of the real positions, so any
  // id will do when none is named: the template's end token, else end-of-text, else 0
  const TokenId pad = o.pad_id >= 0 ? static_cast<TokenId>(o.pad_id)
                      : chat       ? chat_template->end_token()
                                   : tk::end_of_text_id(tokenizer).value_or(0);
  NF_CHECK(o.pad_id < 0 || static_cast<uint64_t>(o.pad_id) < tokenizer.vocab_size(), "data: pad id ", o.pad_id,
           " is not below the tokenizer's vocabulary size ", tokenizer.vocab_size());
  if (o.vocab_size > 0) {
    const auto vocab = static_cast<uint64_t>(o.vocab_size);
    if (tokenizer.vocab_size() > vocab) {
      train->check_vocab(vocab);
      if (val) val->check_vocab(vocab);
    }
    NF_CHECK(pad < vocab, "data: pad id ", pad, " is not below the model's vocabulary size ", vocab);
  }
  TrainingData data;
  auto batches = [&](const std::shared_ptr<SftExamples>& examples, size_t begin, size_t end, bool shuffle,
                     std::string part) {
    return std::make_unique<SftBatches>(examples, begin, end, o.batch_size, o.context, shuffle, o.seed, pad,
                                        o.pad_to_context, std::move(part), group);
  };
  const auto groups = [group](const SftExamples& examples) { return examples.size() / static_cast<size_t>(group); };
  if (val) {
    data.train = batches(train, 0, groups(*train), true, "training data");
    data.val = batches(val, 0, groups(*val), false, "validation data");
    return data;
  }
  // split by position: the last val_fraction of the examples (at least one) is validation
  const size_t n = groups(*train);
  const size_t n_val =
      o.val_fraction > 0 ? std::max<size_t>(1, static_cast<size_t>(std::floor(static_cast<double>(n) * o.val_fraction))) : 0;
  NF_CHECK(n > n_val, o.train_paths.front(), ": ", n, group == 2 ? " usable preference pairs" : " usable examples",
           ", too few for a training part and a validation part of ", percent(o.val_fraction),
           train->dropped() > 0 ? " (" + std::to_string(train->dropped()) + " left out: the response mask selects no " +
                                      "token within --context + 1; a longer --context keeps them)"
                                : std::string());
  data.train = batches(train, 0, n - n_val, true, n_val ? "training part" : "training data");
  if (n_val > 0) data.val = batches(train, n - n_val, n, false, "validation part (the last " + percent(o.val_fraction) + ")");
  return data;
}

}  // namespace

TrainingData load_training_data(const DataOptions& o) {
  NF_CHECK(!o.train_paths.empty(), "data: no training files given");
  NF_CHECK(o.batch_size > 0 && o.context > 0, "data: batch size ", o.batch_size, " and context ", o.context,
           " must be positive");
  NF_CHECK(o.val_fraction >= 0 && o.val_fraction < 1, "data: val_fraction ", o.val_fraction, " is not in [0, 1)");
  std::vector<FileKind> train_kinds, val_kinds;
  for (const std::string& path : o.train_paths) train_kinds.push_back(classify(path));
  for (const std::string& path : o.val_paths) val_kinds.push_back(classify(path));

  // one kind of data: conversations, prompt-completion pairs, preference pairs, or documents (text
  // or tokens) to pretrain on; preference pairs exactly when they are asked for (DPO)
  const FileKind first = o.preference_pairs ? FileKind::jsonl_pairs : train_kinds.front();
  auto check_same = [&](const std::vector<std::string>& paths, const std::vector<FileKind>& kinds) {
    for (size_t i = 0; i < paths.size(); ++i) {
      if (o.preference_pairs) {  // every line's fields are checked as the file is read
        NF_CHECK(tk::is_jsonl_path(paths[i]), "data: ", paths[i], " is ", kind_name(kinds[i]),
                 ": preference pairs (DPO) are read from JSONL files of {\"chosen\": [...], \"rejected\": [...]} lines");
        continue;
      }
      NF_CHECK(kinds[i] != FileKind::jsonl_pairs, "data: ", paths[i], " holds chosen/rejected preference pairs: train ",
               "on them with --objective dpo");
      NF_CHECK(is_examples(first) ? kinds[i] == first : !is_examples(kinds[i]), "data: ", paths[i], " is ",
               kind_name(kinds[i]), " but ", o.train_paths.front(), " is ", kind_name(first),
               ": a run trains on one kind of data (conversations, prompt-completion pairs, or documents)");
    }
  };
  check_same(o.train_paths, train_kinds);
  check_same(o.val_paths, val_kinds);
  if (o.preference_pairs) {
    std::fill(train_kinds.begin(), train_kinds.end(), FileKind::jsonl_pairs);
    std::fill(val_kinds.begin(), val_kinds.end(), FileKind::jsonl_pairs);
  }

  std::unique_ptr<tk::Tokenizer> tokenizer;
  require_tokenizer(o.train_paths, train_kinds, o.tokenizer);
  require_tokenizer(o.val_paths, val_kinds, o.tokenizer);
  if (!o.tokenizer.empty()) tokenizer = tk::load_tokenizer(o.tokenizer);
  if (is_examples(first)) return load_examples(o, *tokenizer, first);
  return load_pretraining(o, train_kinds, val_kinds, tokenizer.get());
}

std::shared_ptr<TokenCorpus> load_token_corpus(const std::vector<std::string>& paths, const std::string& tokenizer_path,
                                               int64_t vocab_size, bool show_progress) {
  NF_CHECK(!paths.empty(), "data: no files given");
  std::vector<FileKind> kinds;
  for (const std::string& path : paths) {
    kinds.push_back(classify(path));
    NF_CHECK(!is_examples(kinds.back()), "data: ", path, " is ", kind_name(kinds.back()),
             ": measuring needs documents (token files, text, or JSONL with a \"text\" field)");
  }
  require_tokenizer(paths, kinds, tokenizer_path);
  const std::unique_ptr<tk::Tokenizer> tokenizer = tokenizer_path.empty() ? nullptr : tk::load_tokenizer(tokenizer_path);
  DataOptions options;
  options.vocab_size = vocab_size;
  TokenisingProgress progress(paths, kinds, show_progress);
  TokenCorpus::VocabCheck check;
  auto corpus = read_corpus(paths, kinds, tokenizer.get(), options, progress, check);
  progress.finish();
  return corpus;
}

}  // namespace nf::data
