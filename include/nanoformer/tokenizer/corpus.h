#pragma once
// Corpus preparation: text and JSONL files -> token ids, written to one binary token file
// (token_file.h) for training, or handed to the data loader directly.
//
// Text files are read in blocks and each block is cut into chunks that are encoded in parallel
// (OpenMP), then passed on in order. Cuts are only made after a '\n' that is followed by an ASCII
// letter or digit, where the tokenizer guarantees the ids do not change
// (Tokenizer::splittable_after_newline); a tokenizer without that guarantee encodes each file
// as a whole. The output is therefore identical to encoding each file in one call.
// JSONL files (jsonl.h) are encoded document by document, each followed by document_separator.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "nanoformer/tokenizer/jsonl.h"
#include "nanoformer/tokenizer/tokenizer.h"

namespace nf::tokenizer {

struct PrepareOptions {
  int threads = 0;                   // encoding threads (0: OpenMP's default)
  size_t chunk_bytes = 1 << 20;      // target size of the chunks encoded in parallel
  size_t block_bytes = 64 << 20;     // how much of a file is read at once
  std::optional<TokenId> separator;  // appended after each text file's tokens (e.g. <|endoftext|>)
  // JSONL: files whose name ends in .jsonl (every file, when `jsonl` is set) are read as one
  // document per line, the document being the line's string field `jsonl_field`.
  bool jsonl = false;
  std::string jsonl_field = "text";
  std::optional<TokenId> document_separator;  // appended after each JSONL document
  // Called after each block with the input bytes done and the total.
  std::function<void(uint64_t done, uint64_t total)> progress;
};

struct PrepareStats {
  uint64_t bytes = 0;   // input bytes
  uint64_t tokens = 0;  // tokens written
};

using TokenSink = std::function<void(std::span<const TokenId>)>;

// Encodes one input file (text or JSONL, as options say) and hands its ids to sink in order;
// progress reports this file's bytes. Returns the file's size in bytes.
uint64_t encode_corpus_file(const Tokenizer& tokenizer, const std::string& path, const PrepareOptions& options,
                            const TokenSink& sink, const ByteProgress& progress = {});

// Encodes the inputs into a token file at output; throws nf::Error naming an unreadable input
// (checked before anything is written) or a write failure.
PrepareStats prepare_token_file(const Tokenizer& tokenizer, const std::vector<std::string>& inputs,
                                const std::string& output, const PrepareOptions& options = {});

// The size of an input file; throws nf::Error naming a file that cannot be read or is a directory.
uint64_t corpus_file_size(const std::string& path);

// The first cut point at or after `from`: a position just after a '\n' and before an ASCII
// letter or digit; npos when there is none.
size_t find_safe_cut(std::string_view text, size_t from);

}  // namespace nf::tokenizer
