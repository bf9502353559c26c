#include "nanoformer/tokenizer/corpus.h"

#include <omp.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>

#include "nanoformer/core/error.h"
#include "nanoformer/tokenizer/token_file.h"

namespace nf::tokenizer {
namespace {

bool ascii_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

int thread_count(const PrepareOptions& options) {
  return options.threads > 0 ? options.threads : omp_get_max_threads();
}

// Encodes text[cuts[i], cuts[i + 1]) for every i in parallel, results in order.
std::vector<std::vector<TokenId>> encode_chunks(const Tokenizer& tokenizer, std::string_view text,
                                                const std::vector<size_t>& cuts, int threads) {
  const size_t n = cuts.size() - 1;
  std::vector<std::vector<TokenId>> out(n);
  parallel_for_first_error(n, threads, [&](size_t i) {
    out[i].reserve((cuts[i + 1] - cuts[i]) / 3);
    tokenizer.encode(text.substr(cuts[i], cuts[i + 1] - cuts[i]), out[i]);
  });
  return out;
}

void encode_text_file(const Tokenizer& tokenizer, const std::string& path, const PrepareOptions& options,
                      const TokenSink& sink, const ByteProgress& progress) {
  const uint64_t total = corpus_file_size(path);
  const bool splittable = tokenizer.splittable_after_newline();
  const size_t chunk = std::max<size_t>(options.chunk_bytes, 1);
  const size_t block = std::max<size_t>(options.block_bytes, chunk);
  std::ifstream in(path, std::ios::binary);
  NF_CHECK(in, "cannot open corpus file ", path, ": ", std::strerror(errno));
  std::string text, buffer(block, '\0');
  uint64_t done = 0;
  for (bool eof = false; !eof;) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    NF_CHECK(!in.bad(), "read failed in corpus file ", path, ": ", std::strerror(errno));
    const auto got = static_cast<size_t>(in.gcount());
    eof = got < buffer.size();
    text.append(buffer.data(), got);
    done += got;
    if (!splittable && !eof) continue;  // such a tokenizer needs the whole file at once
    // Chunk boundaries: safe cuts about `chunk` bytes apart; the tail after the last cut
    // waits for the next block unless the file is done.
    std::vector<size_t> cuts{0};
    if (splittable)
      for (size_t c; (c = find_safe_cut(text, cuts.back() + chunk)) != std::string::npos;) cuts.push_back(c);
    if (eof && cuts.back() != text.size()) cuts.push_back(text.size());
    if (cuts.size() > 1) {
      for (const auto& ids : encode_chunks(tokenizer, text, cuts, thread_count(options))) sink(ids);
      text.erase(0, cuts.back());
    }
    if (progress) progress(done, total);
  }
  if (options.separator) sink(std::span<const TokenId>(&*options.separator, 1));
}

}  // namespace

uint64_t corpus_file_size(const std::string& path) {
  std::error_code ec;
  NF_CHECK(!std::filesystem::is_directory(path, ec), "corpus file ", path, " is a directory");
  std::ifstream probe(path, std::ios::binary);
  NF_CHECK(probe, "cannot open corpus file ", path, ": ", std::strerror(errno));
  const auto size = std::filesystem::file_size(path, ec);
  NF_CHECK(!ec, "cannot read the size of corpus file ", path, ": ", ec.message());
  return size;
}

size_t find_safe_cut(std::string_view text, size_t from) {
  for (size_t nl = text.find('\n', from > 0 ? from - 1 : 0); nl != std::string_view::npos;
       nl = text.find('\n', nl + 1)) {
    const size_t cut = nl + 1;
    if (cut >= from && cut < text.size() && ascii_alnum(text[cut])) return cut;
  }
  return std::string_view::npos;
}

uint64_t encode_corpus_file(const Tokenizer& tokenizer, const std::string& path, const PrepareOptions& options,
                            const TokenSink& sink, const ByteProgress& progress) {
  const uint64_t size = corpus_file_size(path);
  if (!options.jsonl && !is_jsonl_path(path)) {
    encode_text_file(tokenizer, path, options, sink, progress);
    return size;
  }
  JsonlTextOptions jsonl;
  jsonl.field = options.jsonl_field;
  jsonl.separator = options.document_separator;
  jsonl.threads = thread_count(options);
  jsonl.block_bytes = options.block_bytes;
  jsonl.progress = progress;
  encode_jsonl_texts(tokenizer, path, jsonl, sink);
  return size;
}

PrepareStats prepare_token_file(const Tokenizer& tokenizer, const std::vector<std::string>& inputs,
                                const std::string& output, const PrepareOptions& options) {
  NF_CHECK(!inputs.empty(), "prepare: no input files");
  uint64_t total = 0;
  for (const std::string& path : inputs) total += corpus_file_size(path);

  TokenFileWriter writer(output, tokenizer.vocab_size());
  PrepareStats stats;
  for (const std::string& path : inputs) {
    const uint64_t before = stats.bytes;
    ByteProgress progress;
    if (options.progress) progress = [&](uint64_t done, uint64_t) { options.progress(before + done, total); };
    stats.bytes += encode_corpus_file(
        tokenizer, path, options, [&writer](std::span<const TokenId> ids) { writer.write(ids); }, progress);
  }
  stats.tokens = writer.count();
  writer.close();
  return stats;
}

}  // namespace nf::tokenizer
