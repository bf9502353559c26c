#pragma once
// Greedy decoding with the KV cache (the decode step of infer/decode_step.h): the prompt is
// prefilled in one pass, then each new token is the argmax of the last logits and is fed alone.
// When the sequence outgrows the model's max_seq_len, the window slides (ContextShift::crop): the
// cache is refilled with the last max_seq_len tokens each step, which is what a full forward over
// that window computes.
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
