#pragma once
// A prompt given as token ids (`nanoformer generate --ids --prompt-ids "1 2 3"`), for models
// without a tokenizer: parsed and checked against the model's vocabulary.
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace nf::infer {

// Ids separated by spaces or commas; throws nf::Error naming `flag` and the offending word or id
// (not an integer, or outside [0, vocab_size)).
std::vector<int64_t> parse_prompt_ids(std::string_view text, int64_t vocab_size,
                                      std::string_view flag = "--prompt-ids");
// Throws nf::Error naming `what`, the position and the first id outside [0, vocab_size).
void check_token_ids(std::span<const int64_t> ids, int64_t vocab_size, std::string_view what);

}  // namespace nf::infer
