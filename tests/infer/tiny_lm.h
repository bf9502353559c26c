#pragma once
// The tiny random-weight LLaMA-style model the generation tests decode with: vocab 64 (or as
// given), dim 32, two layers, 4 heads over 2 KV heads (of head_dim 8, or as given), weights with
// std 0.3 so that the logits spread.
#include <memory>

#include "nanoformer/models/decoder_lm.h"

namespace nf::testing {

inline std::shared_ptr<models::DecoderLM> tiny_lm(int64_t max_seq_len = 32, int64_t head_dim = 0, int64_t vocab = 64) {
  models::DecoderLMConfig c = models::preset_config("llama2c-stories260k");
  c.vocab_size = vocab, c.dim = 32, c.n_layers = 2, c.n_heads = 4, c.n_kv_heads = 2, c.max_seq_len = max_seq_len;
  c.head_dim = head_dim;
  c.init_std = 0.3;
  Generator gen(3);
  return std::make_shared<models::DecoderLM>(c, gen);
}

}  // namespace nf::testing
