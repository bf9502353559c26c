#pragma once
// llama2.c's model file (karpathy/llama2.c, run.c / export.py "legacy" version 0), read and write:
//   7 little-endian int32: dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len
//   (vocab_size < 0: the classifier is a separate matrix stored last), then fp32 tensors, each
//   in PyTorch's (out, in) layout, every layer's copy of one tensor before the next tensor:
//   token embedding (V, D) | attention RMSNorm weights (L, D) | wq (L, H hs, D) | wk (L, KV hs, D)
//   | wv (L, KV hs, D) | wo (L, D, H hs) | FFN RMSNorm weights (L, D) | w1 (L, F, D) | w2 (L, D, F)
//   | w3 (L, F, D) | final RMSNorm (D) | freq_cis_real (S, hs/2) | freq_cis_imag (S, hs/2)
//   | [classifier (V, D)]
// with hs = D / H. The model is LLaMA: RMSNorm eps 1e-5, RoPE with interleaved pairs and theta
// 10000, SwiGLU, no biases. The freq_cis tables are skipped on read (our RoPE computes its own)
// and written as cos / sin of t / 10000^(2i / hs), evaluated in double and rounded to fp32.
// The file size must be exactly what the header implies: a truncated or oversized file is refused
// naming the file and the expected and actual sizes, before any tensor is read.
#include <memory>
#include <string>

#include "nanoformer/models/decoder_lm.h"

namespace nf::formats {

// The config a llama2.c file's header describes (name = the file's stem, mlp_hidden = hidden_dim).
models::DecoderLMConfig read_llama2c_config(const std::string& path);
std::shared_ptr<models::DecoderLM> load_llama2c(const std::string& path);
// Throws nf::Error naming the first option llama2.c cannot express (a norm other than RMSNorm
// eps 1e-5, RoPE other than interleaved theta 10000, biases, MoE, ...).
void save_llama2c(const models::DecoderLM& model, const std::string& path);

}  // namespace nf::formats
