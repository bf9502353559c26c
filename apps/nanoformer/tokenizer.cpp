// `nanoformer tokenizer train|encode|decode|prepare|info`: byte-level BPE and character-level
// tokenizers from the command line, and corpus preparation into a binary token file.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <sstream>

#include "command.h"
#include "nanoformer/core/error.h"
#include "nanoformer/tokenizer/bpe_tokenizer.h"
#include "nanoformer/tokenizer/bpe_trainer.h"
#include "nanoformer/tokenizer/wordpiece_tokenizer.h"
#include "nanoformer/tokenizer/char_tokenizer.h"
#include "nanoformer/tokenizer/corpus.h"
#include "nanoformer/tokenizer/jsonl.h"
#include "nanoformer/tokenizer/token_file.h"
#include "nanoformer/util/progress_bar.h"

namespace nf::cli {
namespace {

namespace tk = nf::tokenizer;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Reports (done, total) progress on a shared ProgressBar, made on the first report (when the total
// is known) and finished when done reaches total.
std::function<void(uint64_t, uint64_t)> progress_reporter(std::string label, std::string unit, bool enabled) {
  auto bar = std::make_shared<std::unique_ptr<util::ProgressBar>>();
  return [=](uint64_t done, uint64_t total) {
    if (!enabled || total == 0) return;
    if (!*bar) *bar = std::make_unique<util::ProgressBar>(static_cast<int64_t>(total), label, unit);
    (*bar)->update(static_cast<int64_t>(done));
    if (done >= total) (*bar)->finish();
  };
}

void print_ids(const std::vector<tk::TokenId>& ids) {
  std::string line;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) line += ' ';
    line += std::to_string(ids[i]);
  }
  std::cout << line << "\n";
}

void add_train(CLI::App& parent) {
  auto* cmd = parent.add_subcommand("train", "Train a byte-level BPE (tokenizer.json) or a character-level vocabulary");
  struct Args {
    std::vector<std::string> inputs, specials;
    size_t vocab_size = 0;
    std::string output, pattern = "gpt2";
    uint64_t min_frequency = 0;
    int threads = 0;
    bool char_level = false, quiet = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--input,-i", a->inputs, "Training text files")->required()->check(CLI::ExistingFile);
  cmd->add_option("--vocab-size,-v", a->vocab_size, "Vocabulary size, including special and the 256 byte tokens");
  cmd->add_option("--special,-s", a->specials, "Special tokens, given ids 0, 1, ... (e.g. '<|endoftext|>')");
  cmd->add_option("--output,-o", a->output, "Output file (tokenizer.json, or the character vocabulary)")->required();
  cmd->add_option("--pattern", a->pattern, "Pre-tokenizer split pattern")->check(CLI::IsMember({"gpt2", "gpt4"}));
  cmd->add_option("--min-frequency", a->min_frequency, "Stop merging when the best pair occurs fewer times");
  cmd->add_option("--threads", a->threads, "Threads for counting words (default: all)");
  cmd->add_flag("--char", a->char_level, "Build a character-level vocabulary instead of BPE");
  cmd->add_flag("--quiet,-q", a->quiet, "No progress output");
  cmd->callback([a, cmd] {
    const auto start = Clock::now();
    if (a->char_level) {
      for (const char* flag : {"--vocab-size", "--special", "--pattern", "--min-frequency", "--threads"})
        NF_CHECK(cmd->count(flag) == 0, "train: ", flag, " is for BPE; --char builds a character vocabulary (every "
                 "character of the input)");
      std::string text;
      for (const std::string& path : a->inputs) text += tk::read_file(path);
      const tk::CharTokenizer tok = tk::CharTokenizer::train(text);
      tok.save(a->output);
      std::cerr << "character vocabulary: " << tok.vocab_size() << " characters from " << text.size() << " bytes -> "
                << a->output << "\n";
      return;
    }
    NF_CHECK(a->vocab_size > 0, "train: --vocab-size is required for BPE");
    tk::BpeTrainerOptions options;
    options.vocab_size = a->vocab_size;
    options.special_tokens = a->specials;
    options.pattern = *tk::pattern_from_name(a->pattern);
    options.min_frequency = a->min_frequency;
    options.threads = a->threads;
    auto report = progress_reporter("merging", "merges", !a->quiet);
    options.progress = [report](std::string_view stage, uint64_t done, uint64_t total) {
      if (stage == "merge") report(done, total);
    };
    const tk::BpeTokenizer tok = tk::train_bpe_from_files(a->inputs, options);
    tok.save(a->output);
    std::cerr << "trained " << tok.vocab_size() << " tokens (" << tok.model().merges().size() << " merges) in "
              << seconds_since(start) << " s -> " << a->output << "\n";
  });
}

void add_encode(CLI::App& parent) {
  auto* cmd = parent.add_subcommand("encode", "Print the token ids of a text");
  struct Args {
    std::string tokenizer, text, input, split;
    bool special_tokens = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--tokenizer,-t", a->tokenizer, "tokenizer.json or character vocabulary")->required();
  auto* text = cmd->add_option("--text", a->text, "The text to encode");
  auto* input = cmd->add_option("--input,-i", a->input, "A file to encode")->check(CLI::ExistingFile);
  text->excludes(input);
  cmd->add_option("--split", a->split,
                  "Treat the input as several texts separated by this string (backslash escapes \\n \\t \\\\ allowed); "
                  "print one line of ids per text");
  cmd->add_flag("--special-tokens", a->special_tokens,
                "Add the special tokens the tokenizer puts around a text (BERT: [CLS] ... [SEP]), as Hugging Face's "
                "encode with add_special_tokens=True");
  cmd->callback([a, text, input] {
    NF_CHECK(text->count() + input->count() == 1, "encode: give --text or --input");
    const auto tok = tk::load_tokenizer(a->tokenizer);
    const auto encode = [&](std::string_view piece) {
      std::vector<tk::TokenId> ids;
      if (a->special_tokens)
        tok->encode_with_special_tokens(piece, ids);
      else
        tok->encode(piece, ids);
      return ids;
    };
    const std::string all = input->count() ? tk::read_file(a->input) : a->text;
    if (a->split.empty()) return print_ids(encode(all));
    std::string sep;
    for (size_t i = 0; i < a->split.size(); ++i) {
      if (a->split[i] != '\\' || i + 1 == a->split.size()) {
        sep += a->split[i];
        continue;
      }
      const char e = a->split[++i];
      sep += e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
    }
    for (size_t pos = 0;;) {
      const size_t end = all.find(sep, pos);
      print_ids(encode(std::string_view(all).substr(pos, end == std::string::npos ? std::string::npos : end - pos)));
      if (end == std::string::npos) break;
      pos = end + sep.size();
    }
  });
}

void add_decode(CLI::App& parent) {
  auto* cmd = parent.add_subcommand("decode", "Print the text of token ids");
  struct Args {
    std::string tokenizer, input;
    std::vector<tk::TokenId> ids;
    bool skip_special = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--tokenizer,-t", a->tokenizer, "tokenizer.json or character vocabulary")->required();
  auto* ids = cmd->add_option("--ids", a->ids, "Token ids");
  auto* input = cmd->add_option("--input,-i", a->input, "A file of whitespace-separated ids")->check(CLI::ExistingFile);
  ids->excludes(input);
  cmd->add_flag("--skip-special", a->skip_special, "Leave out special tokens");
  cmd->callback([a, input] {
    const auto tok = tk::load_tokenizer(a->tokenizer);
    if (input->count()) {
      std::istringstream in(tk::read_file(a->input));
      std::string word;
      while (in >> word) {
        size_t used = 0;
        unsigned long v = 0;
        try {
          v = std::stoul(word, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        NF_CHECK(used == word.size() && v <= 0xFFFFFFFFul, a->input, ": '", word, "' is not a token id");
        a->ids.push_back(static_cast<tk::TokenId>(v));
      }
    }
    std::string out;
    tok->decode(a->ids, out, a->skip_special);
    std::cout.write(out.data(), static_cast<std::streamsize>(out.size()));
    if (isatty(STDOUT_FILENO)) std::cout << "\n";
  });
}

void add_prepare(CLI::App& parent) {
  auto* cmd = parent.add_subcommand("prepare", "Encode text or JSONL files into a binary token file for training");
  struct Args {
    std::string tokenizer, output, eos, jsonl_field;
    std::vector<std::string> inputs;
    int threads = 0;
    bool quiet = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--tokenizer,-t", a->tokenizer, "tokenizer.json or character vocabulary")->required();
  cmd->add_option("--input,-i", a->inputs, "Text files, or JSONL files (*.jsonl: one {\"text\": ...} document per line)")
      ->required();
  cmd->add_option("--output,-o", a->output, "Token file to write")->required();
  cmd->add_option("--threads", a->threads, "Encoding threads (default: all)");
  cmd->add_option("--eos", a->eos,
                  "A token appended after each text file and each JSONL document (JSONL default: <|endoftext|> when "
                  "the tokenizer has it)");
  cmd->add_option("--jsonl-field", a->jsonl_field,
                  "Read every input as JSONL, the document being this string field of each line (files named *.jsonl "
                  "are read as JSONL with the field 'text' without it)");
  cmd->add_flag("--quiet,-q", a->quiet, "No progress bar");
  cmd->callback([a] {
    const auto start = Clock::now();
    const auto tok = tk::load_tokenizer(a->tokenizer);
    tk::PrepareOptions options;
    options.threads = a->threads;
    if (!a->jsonl_field.empty()) {
      options.jsonl = true;
      options.jsonl_field = a->jsonl_field;
    }
    if (!a->eos.empty()) {
      options.separator = tok->token_id(a->eos);
      NF_CHECK(options.separator, "prepare: --eos '", a->eos, "' is not a token of ", a->tokenizer);
      options.document_separator = options.separator;
    } else {
      options.document_separator = tk::end_of_text_id(*tok);
    }
    const bool any_jsonl = options.jsonl || std::any_of(a->inputs.begin(), a->inputs.end(), tk::is_jsonl_path);
    if (any_jsonl && !a->quiet) {
      if (options.document_separator)
        std::cerr << "JSONL documents end with " << (a->eos.empty() ? std::string(tk::kEndOfText) : a->eos) << " (id "
                  << *options.document_separator << ")\n";
      else
        std::cerr << "JSONL documents are not separated: " << a->tokenizer << " has no " << tk::kEndOfText
                  << " (give --eos)\n";
    }
    options.progress = progress_reporter("encoding", "B", !a->quiet);
    const tk::PrepareStats stats = tk::prepare_token_file(*tok, a->inputs, a->output, options);
    const double s = seconds_since(start);
    std::cerr << "wrote " << stats.tokens << " tokens (" << tk::token_width(tok->vocab_size()) << " bytes each) from "
              << stats.bytes << " bytes in " << s << " s (" << static_cast<double>(stats.bytes) / 1e6 / s
              << " MB/s) -> " << a->output << "\n";
  });
}

void add_info(CLI::App& parent) {
  auto* cmd = parent.add_subcommand("info", "Describe a tokenizer or a token file");
  auto path = std::make_shared<std::string>();
  cmd->add_option("file", *path, "tokenizer.json, character vocabulary or token file")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->callback([path] {
    char head[8] = {};
    std::ifstream(*path, std::ios::binary).read(head, 8);
    if (std::equal(head, head + 8, tk::kTokenFileMagic)) {
      const tk::TokenFile f(*path);
      std::cout << "token file: " << f.size() << " tokens, " << f.token_width() << " bytes each, vocabulary size "
                << f.vocab_size() << "\n";
      return;
    }
    const auto tok = tk::load_tokenizer(*path);
    std::cout << "kind: " << tok->kind() << "\nvocabulary size: " << tok->vocab_size() << "\n";
    if (const auto* bpe = dynamic_cast<const tk::BpeTokenizer*>(tok.get())) {
      std::cout << "merges: " << bpe->model().merges().size()
                << "\npattern: " << tk::pattern_name(bpe->pre_tokenizer().pattern)
                << "\nadd_prefix_space: " << (bpe->pre_tokenizer().add_prefix_space ? "true" : "false") << "\n";
      for (const tk::AddedToken& t : bpe->added().tokens())
        std::cout << "added token " << t.id << ": " << t.content << (t.special ? " (special)" : "") << "\n";
    }
    if (const auto* wp = dynamic_cast<const tk::WordPieceTokenizer*>(tok.get())) {
      const tk::WordPieceConfig& c = wp->config();
      if (c.normalizer)
        std::cout << "normalizer: lowercase " << (c.normalizer->lowercase ? "true" : "false") << ", strip_accents "
                  << (c.normalizer->strips_accents() ? "true" : "false") << "\n";
      std::cout << "special tokens around a text: " << c.prefix_ids.size() << " before, " << c.suffix_ids.size()
                << " after\n";
      for (const tk::AddedToken& t : wp->added().tokens())
        std::cout << "added token " << t.id << ": " << t.content << (t.special ? " (special)" : "") << "\n";
    }
  });
}

void add_bench(CLI::App& parent) {
  auto* cmd = parent.add_subcommand("bench", "Measure single-threaded encode and decode throughput on a file");
  struct Args {
    std::string tokenizer, input;
    int runs = 5;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--tokenizer,-t", a->tokenizer, "tokenizer.json or character vocabulary")->required();
  cmd->add_option("--input,-i", a->input, "Text file")->required()->check(CLI::ExistingFile);
  cmd->add_option("--runs", a->runs, "Timed runs (after one warm-up); the median is reported")
      ->check(CLI::PositiveNumber);
  cmd->callback([a] {
    const auto tok = tk::load_tokenizer(a->tokenizer);
    const std::string text = tk::read_file(a->input);
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    std::vector<tk::TokenId> ids;
    std::string decoded;
    std::vector<double> enc, dec;
    for (int r = 0; r <= a->runs; ++r) {
      ids.clear();
      auto t0 = Clock::now();
      tok->encode(text, ids);
      const double e = seconds_since(t0);
      decoded.clear();
      t0 = Clock::now();
      tok->decode(ids, decoded);
      const double d = seconds_since(t0);
      NF_CHECK(decoded == text, "bench: decode(encode(text)) differs from the text");
      if (r > 0) enc.push_back(e), dec.push_back(d);
    }
    const double mb = static_cast<double>(text.size()) / 1e6;
    std::printf("bytes %zu tokens %zu encode_mb_s %.2f decode_mb_s %.2f\n", text.size(), ids.size(), mb / median(enc),
                mb / median(dec));
  });
}

}  // namespace

void add_tokenizer_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("tokenizer", "Train, inspect and apply byte-level BPE tokenizers");
  cmd->require_subcommand(1);
  add_train(*cmd);
  add_encode(*cmd);
  add_decode(*cmd);
  add_prepare(*cmd);
  add_info(*cmd);
  add_bench(*cmd);
}

}  // namespace nf::cli
