#pragma once
// A tiny LLaMA-style chat model for CLI tests: byte_tokenizer with ChatML's specials
// (<|endoftext|> 256, <|im_start|> 257, <|im_end|> 258), saved as FOLDER/model.safetensors with its
// tokenizer.json beside it. With ascii_only the embedding rows (tied to the head) of every id from
// 128 up are zero, so those logits are 0 and greedy decoding, which then always finds a positive
// ASCII logit, writes plain ASCII and never an end token: answers run to max_tokens. With
// padded_vocab (> 259) the model's vocabulary is padded beyond the tokenizer's, as nanochat pads to a
// multiple of 64, and the padded ids' rows are 10 times those of ids 32, 33, ...: their logits
// dominate, so any sampler that may draw them does. head_dim (0: dim / n_heads = 8) widens the heads.
#include <algorithm>
#include <filesystem>
#include <string>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/formats/model_io.h"
#include "nanoformer/models/decoder_lm.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/view.h"
#include "tokenizer/fixtures.h"

namespace nf::testing {

inline void save_tiny_chat_model(const std::string& folder, bool ascii_only = false, int64_t max_seq_len = 128,
                                 int64_t padded_vocab = 0, int64_t head_dim = 0) {
  std::filesystem::create_directories(folder);
  tokenizer::testing::byte_tokenizer({"<|endoftext|>", "<|im_start|>", "<|im_end|>"}).save(folder + "/tokenizer.json");
  models::DecoderLMConfig c = models::preset_config("llama2c-stories260k");
  c.vocab_size = std::max<int64_t>(259, padded_vocab), c.dim = 32, c.n_layers = 2, c.n_heads = 4, c.n_kv_heads = 2;
  c.max_seq_len = max_seq_len, c.head_dim = head_dim;
  Generator gen(1);
  models::DecoderLM model(c, gen);
  const int64_t padding = c.vocab_size - 259;
  if (padding > 0) {
    autograd::NoGradGuard no_grad;
    const Tensor& embedding = model.tok_embeddings->weight;
    copy_into(narrow(embedding, 0, 259, padding), mul(narrow(embedding, 0, 32, padding), 10.0));  // rows 32.. x 10
  }
  if (ascii_only) copy_into(narrow(model.tok_embeddings->weight, 0, 128, c.vocab_size - 128), zeros({c.vocab_size - 128, c.dim}));
  formats::save_model(model, folder + "/model.safetensors", "nanoformer");
}

}  // namespace nf::testing
