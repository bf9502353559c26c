#pragma once
// Multiple choice by log-likelihood (lm-evaluation-harness's loglikelihood requests): for a
// context and several continuations, the sum over each continuation's tokens of
// log p(token | context, earlier continuation tokens).
//
// Tokenisation (lm-eval's _encode_pair): trailing white space of the context moves to the front
// of every continuation; context_ids = encode(context), and a continuation's ids are
// encode(context + continuation) past the first |context_ids| ids. The model reads context_ids
// then the continuation's ids. The context is shared: its first |context_ids| - 1 tokens are
// prefilled once into a KV cache whose row is copied to one row per choice, and the choices then
// go through one batched forward of [last context id, continuation ids but the last], padded at
// the end to the longest (causal attention: padding after a token does not change its logits).
// When context + the longest continuation exceed max_seq_len + 1 tokens, the oldest context tokens
// are dropped for every choice alike (lm-eval cuts each choice's own input).
#include <cstdint>
#include <string>
#include <vector>

#include "nanoformer/models/decoder_lm.h"
#include "nanoformer/tokenizer/tokenizer.h"

namespace nf::eval {

struct EncodedChoices {
  std::vector<int64_t> context;                    // at least one id
  std::vector<std::vector<int64_t>> continuations;  // each at least one id
};

// lm-eval's _encode_pair for every continuation; an nf::Error when the context or a continuation
// encodes to no token.
EncodedChoices encode_choices(const tokenizer::Tokenizer& tokenizer, const std::string& context,
                              const std::vector<std::string>& continuations);

// The summed continuation log-probabilities (nats, log-softmax in double over f32 logits), one per
// continuation, from one prefill and one batched forward (eval mode, no autograd). An nf::Error
// when an id is not below the vocabulary or a continuation alone exceeds max_seq_len.
std::vector<double> continuation_logprobs(models::DecoderLM& model, const EncodedChoices& choices);

// The index of the largest score, the first on ties (numpy's argmax).
size_t argmax(const std::vector<double>& scores);

}  // namespace nf::eval
