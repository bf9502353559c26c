#pragma once
// A sentence-transformers model folder's pipeline, read as sentence-transformers reads it:
// modules.json lists the modules (Transformer, then Pooling, then optionally Normalize; any other
// module, such as Dense, is refused naming its type), the Pooling module's config.json gives the
// pooling ("pooling_mode": mean / cls / max / lasttoken, or the older "pooling_mode_*_tokens"
// booleans; several modes at once, mean_sqrt_len_tokens and weightedmean are refused naming them)
// and sentence_bert_config.json the most tokens an input holds (max_seq_length). The weights and
// the tokenizer are the folder's Hugging Face files (hf_bert.h, tokenizer.json).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "nanoformer/models/sentence_embedding.h"

namespace nf::formats {

// The folder's pipeline; nothing when it has no modules.json (a plain Hugging Face folder).
// Throws nf::Error naming the file and the key or module that cannot be read.
std::optional<models::SentenceEmbedding> read_sentence_transformers(const std::string& dir);

// The parsers behind it, from each file's text (`where`: the file, for messages; fuzzed by
// fuzz/fuzz_sentence_transformers.cpp). Each throws nf::Error naming `where` and the key or module.
// modules.json: where the Pooling module's folder is, and whether Normalize follows it.
struct SentenceTransformersModules {
  std::string pooling_path;  // relative to the model folder ("" for a module without a path)
  bool normalize = false;
};
SentenceTransformersModules parse_sentence_transformers_modules(std::string_view text, const std::string& where);
// The Pooling module's config.json.
models::Pooling parse_sentence_transformers_pooling(std::string_view text, const std::string& where);
// sentence_bert_config.json: its max_seq_length (0 when absent or null).
int64_t parse_sentence_bert_config(std::string_view text, const std::string& where);

}  // namespace nf::formats
