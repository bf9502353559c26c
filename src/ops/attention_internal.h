#pragma once
// Shared by the two attention implementations (ops/attention.cpp: checks and the fused kernel;
// ops/attention_plain.cpp: the composition of existing ops).
#include "nanoformer/ops/attention.h"

namespace nf::attention_detail {

// The checked sizes of one call: q (B, H, Tq, D), k and v (B, Hkv, Tk, D); `scale` resolved.
struct AttentionShape {
  int64_t B, H, Hkv, Tq, Tk, D;
  double scale;
};

// Validates q, k, v and the options (naming shapes and values) and resolves the scale.
AttentionShape check_attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& options);

// matmul -> mask -> softmax -> dropout -> matmul; inputs already checked.
AttentionWithWeights plain_attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& options,
                                     const AttentionShape& shape, Generator& gen);

}  // namespace nf::attention_detail
