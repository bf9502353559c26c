#pragma once
// GGUF model files (llama.cpp's; the container is io/gguf.h), read and written as DecoderLMs, with
// the keys and tensor names llama.cpp's convert_hf_to_gguf.py writes:
//   llama  RMSNorm, RoPE, SwiGLU: {llama.}context_length, embedding_length, block_count,
//          feed_forward_length, attention.head_count, attention.head_count_kv (default head_count),
//          attention.layer_norm_rms_epsilon, rope.freq_base (default 10000), attention.key_length /
//          value_length and rope.dimension_count (default and must be the head size), rope.scaling.type
//          none or linear (with rope.scaling.factor, or the older rope.scale_linear); rope_layout
//          `interleaved`: convert_hf_to_gguf permutes q / k rows so that llama.cpp's RoPE rotates adjacent
//          pairs, so they load in place (a `half` model is written with its rows permuted, rope_rows.h)
//   gpt2   LayerNorm with biases, learned positions, GELU (tanh): {gpt2.}context_length, embedding_length,
//          block_count, feed_forward_length, attention.head_count, attention.layer_norm_epsilon
// Tensors (GGUF's names <- the Hugging Face names of hf_checkpoint.h, renamed as llama.cpp's
// tensor_mapping.py does, so the maps are the same): token_embd, position_embd, blk.N.attn_norm,
// blk.N.attn_q / attn_k / attn_v (gpt2: attn_qkv, rows q, k, v), attn_output, ffn_norm, ffn_gate /
// ffn_up / ffn_down, output_norm, output (absent: tied; gpt2 also ties when it holds token_embd's bytes).
// llama's q / k / v / output and ffn biases are optional each: when any is present the model has
// biases and the absent ones are zero (so Qwen-style q / k / v biases without an output bias load).
// Vocabulary size: token_embd's rows. The tokenizer (gguf_tokenizer.h) is read by load_tokenizer.
// Reading: block-quantised tensors become Linear / Embedding weights in place (views into the
// memory-mapped file, no copy); f32 tensors become the parameters in place too (views of the
// mapping that the parameters adopt, nn::LoadMode::adopt; a fused tensor's parts are row ranges of
// it), so memory is the file. The mapping is copy-on-write: training or rewriting a weight copies
// the pages it writes and leaves the file unchanged. f16 / bf16 tensors are converted into f32
// parameters (a copy), as are the block-quantised ones not held quantised (dequantised).
// Refused with one line naming the file and the key or tensor: an architecture other than llama /
// gpt2, any {arch}.* key not listed above (they change the model: experts, sliding windows, ALiBi,
// logit scales, ...), rope scaling other than none / linear, per-layer sizes that differ, a head
// size other than the rotated size, a tensor type nanoformer cannot compute with, missing,
// unexpected or mis-shaped tensors (all listed), a split file (split.count > 1). Bookkeeping keys
// (general.*, quantize.*, tokenizer.*) are not read here.
// Writing: the llama architecture for LLaMA-style decoders, gpt2 for GPT-2-style ones, anything else
// refused naming the option (MoE, QK-norm, softcaps, ...); quantised weights are written as they
// are held (models/quantize.h), everything else as f32; the tokenizer embedded when one is given.
#include <memory>
#include <optional>
#include <string>

#include "nanoformer/io/gguf.h"
#include "nanoformer/models/decoder_lm.h"

namespace nf::formats {

// The config a GGUF file describes (checks every {arch}.* key and the tensors' names and shapes).
models::DecoderLMConfig config_from_gguf(const io::GGUFFile& file);
std::shared_ptr<models::DecoderLM> load_gguf(const std::string& path);

struct GGUFSaveOptions {
  // A tokenizer file to embed (tokenizer.json, or a .gguf whose tokenizer.* keys are copied as they
  // are); "" writes tokenizer.ggml.model "none" (ids only, as llama.cpp loads a model without a
  // vocabulary).
  std::string tokenizer = {};
  // general.file_type (llama.cpp's llama_ftype: models::llama_file_type of the spec that quantised the
  // model); unset: the type most block weights have (Q4_K -> Q4_K_S, ...)
  std::optional<uint32_t> file_type = {};
};
// Writes `model` to `path` (atomically). Throws naming what GGUF's llama / gpt2 cannot express.
void save_gguf(const models::DecoderLM& model, const std::string& path, const GGUFSaveOptions& options = {});
// Throws naming what GGUF cannot hold of a tokenizer file (GGUFSaveOptions::tokenizer), before a
// model is loaded; save_gguf checks it against the model's vocabulary again.
void check_gguf_tokenizer(const std::string& tokenizer);

}  // namespace nf::formats
