#pragma once
// A tiny LLaMA-style chat model for CLI tests: byte_tokenizer with ChatML's specials
// (<|endoftext|> 256, <|im_start|> 257, <|im_end|> 258), saved as FOLDER/model.safetensors with its
// tokenizer.json beside it. With ascii_only the embedding rows (tied to the head) of every id from
// 128 up are zero, so those logits are 0 and greedy decoding, which then always finds a positive
// ASCII logit, writes plain ASCII and never an end token: answers run to max_tokens.
#include <filesystem>
#include <string>

#include "nanoformer/models/decoder_lm.h"
#include "nanoformer/models/model_io.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/view.h"
#include "tokenizer/fixtures.h"

namespace nf::testing {

inline void save_tiny_chat_model(const std::string& folder, bool ascii_only = false, int64_t max_seq_len = 128) {
  std::filesystem::create_directories(folder);
  tokenizer::testing::byte_tokenizer({"<|endoftext|>", "<|im_start|>", "<|im_end|>"}).save(folder + "/tokenizer.json");
  models::DecoderLMConfig c = models::preset_config("llama2c-stories260k");
  c.vocab_size = 259, c.dim = 32, c.n_layers = 2, c.n_heads = 4, c.n_kv_heads = 2, c.max_seq_len = max_seq_len;
  Generator gen(1);
  models::DecoderLM model(c, gen);
  if (ascii_only) copy_into(narrow(model.tok_embeddings->weight, 0, 128, c.vocab_size - 128), zeros({c.vocab_size - 128, c.dim}));
  models::save_model(model, folder + "/model.safetensors", "nanoformer");
}

}  // namespace nf::testing
