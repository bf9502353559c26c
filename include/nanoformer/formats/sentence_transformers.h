#pragma once
// A sentence-transformers model folder's pipeline, read as sentence-transformers reads it:
// modules.json lists the modules (Transformer, then Pooling, then optionally Normalize; any other
// module, such as Dense, is refused naming its type), the Pooling module's config.json gives the
// pooling ("pooling_mode": mean / cls / max / lasttoken, or the older "pooling_mode_*_tokens"
// booleans; several modes at once, mean_sqrt_len_tokens and weightedmean are refused naming them)
// and sentence_bert_config.json the most tokens an input holds (max_seq_length). The weights and
// the tokenizer are the folder's Hugging Face files (hf_bert.h, tokenizer.json).
#include <optional>
#include <string>

#include "nanoformer/models/sentence_embedding.h"

namespace nf::models {

// The folder's pipeline; nothing when it has no modules.json (a plain Hugging Face folder).
// Throws nf::Error naming the file and the key or module that cannot be read.
std::optional<SentenceEmbedding> read_sentence_transformers(const std::string& dir);

}  // namespace nf::models
