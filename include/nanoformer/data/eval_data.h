#pragma once
// The data of an evaluation (`nanoformer eval`): documents as one token stream, read the way the
// training data loader reads pretraining data (data.h), which implements this in src/data/data.cpp.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nanoformer/data/token_corpus.h"

namespace nf::data {

// Token files, text or JSONL of documents (text and JSONL need `tokenizer`, tokenised in parallel
// with a progress bar when show_progress), laid end to end; ids checked against vocab_size (0: not
// checked). Fine-tuning examples (conversations, prompt-completion pairs) are refused by name; an
// unreadable file or a bad id is an nf::Error naming the file.
std::shared_ptr<TokenCorpus> load_token_corpus(const std::vector<std::string>& paths, const std::string& tokenizer,
                                               int64_t vocab_size, bool show_progress = true);

}  // namespace nf::data
