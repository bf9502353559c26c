#pragma once
// Scaled dot-product attention:
//   out = dropout(softmax(scale q k^T + bias, masked)) v
// q (B, H, Tq, D), k and v (B, Hkv, Tk, D) with H % Hkv == 0: query head h reads key/value head
// h / (H / Hkv) (grouped-query and multi-query attention, torch's enable_gqa=True); K and V are
// never repeated in the fused kernel. Result (B, H, Tq, D); the fused kernel's is a (B, Tq, H, D)
// buffer seen through transpose(1, 2) (as PyTorch's CPU flash attention), so the usual
// out.transpose(1, 2).reshape(B, Tq, H * D) copies nothing, and its gradients of q, k and v keep
// their inputs' memory order (a transposed projection's gradient flows back without a copy).
//
// Two implementations with the same semantics:
//  - fused (the default): FlashAttention-2 style, online softmax over blocks of keys, never
//    materialising the (Tq, Tk) scores; saves the per-row logsumexp and recomputes scores blockwise
//    in backward;
//  - plain: the composition matmul -> mask -> softmax -> dropout -> matmul of existing ops (for
//    tests, and to return the weights).
//
// Rows whose keys are all masked give zeros and pass no gradient (as torch's math backend).
// The fused kernel computes no key tile that causality or the window hide from a whole query tile.
#include <cstdint>
#include <optional>
#include <span>

#include "nanoformer/core/generator.h"
#include "nanoformer/core/tensor.h"
#include "nanoformer/ops/kv_storage.h"

namespace nf {

enum class AttentionKernel { fused, plain };

struct AttentionOptions {
  // Query i sees key j only when j <= i + (Tk - Tq): aligned bottom-right, torch's is_causal when
  // Tq == Tk, and what a decoder with a KV cache of Tk - Tq earlier tokens needs.
  bool causal = false;
  // Sliding window (only with causal): query i, whose diagonal key is d = i + (Tk - Tq), sees key j
  // only when d - window < j <= d, the `window` most recent keys including its own; 0 = every key.
  // This is transformers' / Mistral's sliding_window W and flash-attn's window_size = (W - 1, 0).
  // nanochat (gpt.py, _compute_window_sizes) gives each layer flash-attn's (left, 0) from its
  // window_pattern (e.g. "SSSL", tiled over the layers, the last layer always "L"): "S" is
  // left = ceil(sequence_len / 4 / 128) * 128, i.e. window = left + 1 (513 at sequence_len 2048),
  // and "L" is left = sequence_len, i.e. every key (window 0).
  int64_t window = 0;
  // bool (true = attend) or additive (q's dtype; may require grad, e.g. a learned position bias),
  // broadcastable to (B, H, Tq, Tk).
  Tensor mask{};
  // bool (B, Tk), true = a real token: padded keys are masked for every query.
  Tensor key_padding{};
  // Probability of zeroing each attention weight (survivors scaled by 1 / (1 - p)); in [0, 1).
  double dropout_p = 0.0;
  // Multiplies q k^T; default 1 / sqrt(D).
  std::optional<double> scale{};
  AttentionKernel kernel = AttentionKernel::fused;
};

// Dropout draws its keep-mask from `gen` by element index of the (B, H, Tq, Tk) weights, so both
// kernels drop the same weights for the same generator state.
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const AttentionOptions& options = {}, Generator& gen = default_generator());

struct AttentionWithWeights {
  Tensor out;      // (B, H, Tq, D)
  Tensor weights;  // (B, H, Tq, Tk): the weights applied to v (after dropout, as torch's MultiheadAttention)
};
// The plain kernel, also returning the weights (options.kernel is ignored). Both are differentiable.
AttentionWithWeights scaled_dot_product_attention_with_weights(const Tensor& q, const Tensor& k, const Tensor& v,
                                                               const AttentionOptions& options = {},
                                                               Generator& gen = default_generator());

// Inference over a KV cache's rows (ops/kv_storage.h): q (B, H, Tq, D) f32 attends over columns
// 0 .. length - 1 of rows b < B of k and v, (B, Hkv, length, D), as above; no autograd. Decoding's
// queries (Tq x H / Hkv <= 16) read the keys and values where they are stored (f32, f16, bf16;
// Q8_0: s = sum over blocks of d sum q x); longer ones attend over them in place where they are
// f32, else dequantised to f32. Takes causal, window and scale; no mask, key padding or dropout.
Tensor scaled_dot_product_attention(const Tensor& q, const KVStorage& k, const KVStorage& v, int64_t length,
                                    const AttentionOptions& options = {});

// Inference over several caches at once (continuous batching: each sequence in its own cache, at
// its own length): cache i's rows are the next caches[i].rows rows of q, which attend over columns
// 0 .. length - 1 of the cache's first rows, as above; every cache's work in one kernel call (on
// the CPU, one parallel region over every cache's rows and KV heads).
struct CachedKV {
  const KVStorage* keys = nullptr;
  const KVStorage* values = nullptr;
  int64_t length = 0;
  int64_t rows = 1;
};
Tensor scaled_dot_product_attention(const Tensor& q, std::span<const CachedKV> caches, const AttentionOptions& options = {});

}  // namespace nf
