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

uint64_t input_size(const std::string& path) {
  std::error_code ec;
  NF_CHECK(!std::filesystem::is_directory(path, ec), "corpus file ", path, " is a directory");
  std::ifstream probe(path, std::ios::binary);
  NF_CHECK(probe, "cannot open corpus file ", path, ": ", std::strerror(errno));
  const auto size = std::filesystem::file_size(path, ec);
  NF_CHECK(!ec, "cannot read the size of corpus file ", path, ": ", ec.message());
  return size;
}

// Encodes text[cuts[i], cuts[i + 1]) for every i in parallel, results in order.
std::vector<std::vector<TokenId>> encode_chunks(const Tokenizer& tokenizer, std::string_view text,
                                                const std::vector<size_t>& cuts, int threads) {
  const size_t n = cuts.size() - 1;
  std::vector<std::vector<TokenId>> out(n);
  std::exception_ptr error;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (size_t i = 0; i < n; ++i) {
    try {
      out[i].reserve((cuts[i + 1] - cuts[i]) / 3);
      tokenizer.encode(text.substr(cuts[i], cuts[i + 1] - cuts[i]), out[i]);
    } catch (...) {
#pragma omp critical
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
  return out;
}

}  // namespace

size_t find_safe_cut(std::string_view text, size_t from) {
  for (size_t nl = text.find('\n', from > 0 ? from - 1 : 0); nl != std::string_view::npos;
       nl = text.find('\n', nl + 1)) {
    const size_t cut = nl + 1;
    if (cut >= from && cut < text.size() && ascii_alnum(text[cut])) return cut;
  }
  return std::string_view::npos;
}

PrepareStats prepare_token_file(const Tokenizer& tokenizer, const std::vector<std::string>& inputs,
                                const std::string& output, const PrepareOptions& options) {
  NF_CHECK(!inputs.empty(), "prepare: no input files");
  uint64_t total = 0;
  for (const std::string& path : inputs) total += input_size(path);
  const int threads = options.threads > 0 ? options.threads : omp_get_max_threads();
  const bool splittable = tokenizer.splittable_after_newline();
  const size_t chunk = std::max<size_t>(options.chunk_bytes, 1);
  const size_t block = std::max<size_t>(options.block_bytes, chunk);

  TokenFileWriter writer(output, tokenizer.vocab_size());
  PrepareStats stats;
  std::string text, buffer(block, '\0');
  for (const std::string& path : inputs) {
    std::ifstream in(path, std::ios::binary);
    NF_CHECK(in, "cannot open corpus file ", path, ": ", std::strerror(errno));
    text.clear();
    for (bool eof = false; !eof;) {
      in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
      NF_CHECK(!in.bad(), "read failed in corpus file ", path, ": ", std::strerror(errno));
      const auto got = static_cast<size_t>(in.gcount());
      eof = got < buffer.size();
      text.append(buffer.data(), got);
      stats.bytes += got;
      if (!splittable && !eof) continue;  // such a tokenizer needs the whole file at once
      // Chunk boundaries: safe cuts about `chunk` bytes apart; the tail after the last cut
      // waits for the next block unless the file is done.
      std::vector<size_t> cuts{0};
      if (splittable)
        for (size_t c; (c = find_safe_cut(text, cuts.back() + chunk)) != std::string::npos;) cuts.push_back(c);
      if (eof && cuts.back() != text.size()) cuts.push_back(text.size());
      if (cuts.size() > 1) {
        for (const auto& ids : encode_chunks(tokenizer, text, cuts, threads)) writer.write(ids);
        text.erase(0, cuts.back());
      }
      if (options.progress) options.progress(stats.bytes, total);
    }
    if (options.separator) writer.write(std::span<const TokenId>(&*options.separator, 1));
  }
  stats.tokens = writer.count();
  writer.close();
  return stats;
}

}  // namespace nf::tokenizer
