#pragma once
// Shared by the two attention implementations (ops/attention.cpp: checks and the fused kernel;
// ops/attention_plain.cpp: the composition of existing ops).
#include "nanoformer/ops/attention.h"
#include "ops/problems/attention.h"

namespace nf::attention_detail {

// Validates q, k, v and the options (naming shapes and values): the problem's sizes, its scale
// resolved, causal and window; masks and dropout are the kernel's caller's to add.
AttentionProblem check_attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& options);

// matmul -> mask -> softmax -> dropout -> matmul; inputs already checked.
AttentionWithWeights plain_attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& options,
                                     const AttentionProblem& shape, Generator& gen);

}  // namespace nf::attention_detail
