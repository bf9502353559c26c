#pragma once
// What a DecoderLMConfig costs, computed from the config alone (no model is built): exact
// parameter counts by part, active parameters per token (MoE), FLOPs per token, KV-cache bytes and
// memory estimates for inference and training. `nanoformer inspect` prints them.
//
// FLOPs per token (the usual 2N rule, Kaplan et al. 2020, plus attention's own matmuls):
//   forward  = 2 x active matmul weights + 2 x 2 x n_layers x context x n_heads x head_dim
//   training = 3 x forward (the backward costs twice the forward)
// where active matmul weights are the weight matrices a token multiplies by: q, k, v, o, the MLP
// (or the router, the top_k routed and the shared experts) and the head (tied or not); embedding
// and position lookups, norms and biases are not matmuls.
//
// KV cache per token = 2 (k and v) x n_layers x n_kv_heads x head_dim x bytes per element.
//
// Memory, each dtype on its own (everything stored in that dtype; mixed precision with fp32
// master weights and moments costs more):
//   inference = weights + KV cache of batch x context tokens
//   training  = weights + gradients (= weights) + AdamW's two moments (2 x weights) + activations
//   activations = batch x context x (n_layers x per-layer + dim + 2 x vocab) elements, where a
//     layer keeps what its backward reads: both norms' inputs and outputs (4 dim), q, k, v, the
//     attention output (q width), the attention weights (n_heads x context, softmax saved), and
//     per active expert the MLP's pre-activations and activation output ((up + 1) x hidden, up = 2
//     for SwiGLU); plus the embedding output and the logits with their softmax. Temporaries and
//     allocator slack are not counted, so treat it as a lower bound.
#include <cstdint>
#include <string>
#include <vector>

#include "nanoformer/models/config/model_config.h"
#include "nanoformer/models/model.h"

namespace nf::models {

// Estimated bytes in one dtype (see the header comment for the formulas).
struct MemoryEstimate {
  int64_t weights = 0;
  int64_t kv_cache = 0;         // batch x context tokens
  int64_t inference = 0;        // weights + kv_cache
  int64_t gradients = 0;
  int64_t optimizer = 0;        // AdamW: two moments
  int64_t activations = 0;      // batch x context tokens
  int64_t training = 0;         // weights + gradients + optimizer + activations
};

struct StatsOptions {
  int64_t context = 0;  // tokens per sequence; 0 = the config's max_seq_len
  int64_t batch = 1;    // sequences
};

struct ModelStats {
  ParameterCounts parameters;           // parameter_counts(config); built_model_stats sets only total
  int64_t active_parameters = 0;        // per token: total less the routed experts a token skips
  int64_t active_matmul_weights = 0;    // per token, the N of the FLOPs formula
  int64_t context = 0, batch = 0;       // what the estimates below assume
  int64_t forward_flops_per_token = 0;
  int64_t training_flops_per_token = 0;
  int64_t kv_cache_bytes_per_token_fp32 = 0;
  int64_t kv_cache_bytes_per_token_bf16 = 0;
  MemoryEstimate fp32, bf16;
};

// Throws nf::Error naming the config's bad option, or a context / batch that is not positive.
ModelStats model_stats(const DecoderLMConfig& config, const StatsOptions& options = {});

// The same estimates for any built model (the encoder, encoder-decoder and ViT), read off its
// modules; context 0 = model.max_context(). parameters.total is the model's count (the parts are
// Model::parameter_parts()); N (active_matmul_weights) sums every Linear's weight, since in these
// architectures each acts once per token, and a tied head's (Model::tied_head_weights); attention adds 2 x 2 x context x heads x head_dim per
// attention module (self and cross); activations and the KV cache come from every
// TransformerBlock's config by the formulas above (a cross-attention sublayer adds its norm, q, k,
// v, output and weights; the KV cache counts causal self-attention and cross-attention, that is a
// decoder's, whose cross-attention keys and values are counted per target token as a bound).
ModelStats built_model_stats(const Model& model, const StatsOptions& options = {});

// The weights a model holds, by how they are stored: dense parameters by dtype ("f32", "bf16"),
// block-quantised ones by type ("q8_0", "f16", ...; core/quant_type.h); a tied matrix once.
struct WeightTypeStats {
  std::string type;
  int64_t tensors = 0;
  int64_t parameters = 0;
  int64_t bytes = 0;
};
// One entry per type, in the order the types are first met (parameters first, then quantised weights).
std::vector<WeightTypeStats> weight_type_stats(const nn::Module& model);

}  // namespace nf::models
