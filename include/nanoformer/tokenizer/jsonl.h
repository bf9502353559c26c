#pragma once
// JSONL corpora (one JSON object per line), as MiniMind ships its data: pretraining text as
// {"text": "..."} lines (pretrain_hq.jsonl), chat data as {"conversations": [...]} lines. Files are
// read in blocks of whole lines whose lines are then processed in parallel; errors name the file
// and the line number (counted from 1, blank lines included).
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "nanoformer/tokenizer/tokenizer.h"

namespace nf::tokenizer {

struct JsonlLine {
  uint64_t number;        // 1-based line number in the file
  std::string_view text;  // without the line end ("\n" or "\r\n")
};

using ByteProgress = std::function<void(uint64_t done, uint64_t total)>;

// Calls on_block with the non-blank lines of each block of about block_bytes (whole lines), in
// file order, then progress(bytes done, file size). Throws nf::Error naming an unreadable file.
void read_jsonl_blocks(const std::string& path, size_t block_bytes,
                       const std::function<void(std::span<const JsonlLine>)>& on_block,
                       const ByteProgress& progress = {});

// Runs fn(i) for every i in [0, n) on `threads` threads (0: nf::num_threads()); when calls throw,
// rethrows the exception of the smallest i, so the error reported does not depend on timing.
void parallel_for_first_error(size_t n, int threads, const std::function<void(size_t)>& fn);

// The end-of-text token put after each document of a JSONL corpus: <|endoftext|> (GPT-2's, and
// MiniMind's id 0) when the tokenizer has it as a single token; none otherwise.
inline constexpr std::string_view kEndOfText = "<|endoftext|>";
std::optional<TokenId> end_of_text_id(const Tokenizer& tokenizer);

struct JsonlTextOptions {
  std::string field = "text";        // the string field holding each document
  std::optional<TokenId> separator;  // appended after each document
  int threads = 0;                   // 0: nf::num_threads()
  size_t block_bytes = 8 << 20;
  ByteProgress progress;
};

// Encodes the `field` of every line of a JSONL file, each document by itself followed by the
// separator, and hands the ids to sink block by block in file order. A line that is not valid
// JSON, not an object, or has no string `field` is an nf::Error "<path>:<line>: ...".
void encode_jsonl_texts(const Tokenizer& tokenizer, const std::string& path, const JsonlTextOptions& options,
                        const std::function<void(std::span<const TokenId>)>& sink);

// Whether a file's name ends in ".jsonl".
bool is_jsonl_path(std::string_view path);

}  // namespace nf::tokenizer
