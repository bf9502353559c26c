#pragma once
// Greedy decoding by recomputation: each new token is the argmax of the logits of a full forward
// over the whole sequence so far. O(T^2) work and no cache, which makes it the plain reference
// that cached decoding is checked against; fast enough for short answers of small models.
#include <cstdint>
#include <optional>
#include <vector>

#include "nanoformer/models/decoder_lm.h"

namespace nf::infer {

// Appends up to max_new_tokens argmax tokens to `prompt` (kept within the model's max_seq_len by
// dropping the oldest tokens from the window), stopping after `stop` when given. Returns the new
// tokens only (including `stop` when reached). Runs in eval mode without autograd.
std::vector<int64_t> greedy_generate(models::DecoderLM& model, const std::vector<int64_t>& prompt,
                                     int64_t max_new_tokens, std::optional<int64_t> stop = std::nullopt);

}  // namespace nf::infer
