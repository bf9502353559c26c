#pragma once
// Perplexity of a language model on a token stream at one context length, as `nanoformer eval`
// measures it. The first tokens of the stream (up to a budget) are cut into W windows of
// context + 1 tokens that overlap by one token, so every token after the first is a target exactly
// once: window k has inputs tokens [kL, kL + L) and targets [kL + 1, kL + L + 1), L = context.
// Each window is one independent forward pass starting at position 0, so a target at offset i
// sees i earlier tokens (the ALiBi paper's non-overlapping evaluation). Then
//   loss = mean over all W L targets of -log softmax(logits)[target],  perplexity = exp(loss).
// With the byte length of every token's text: bits per byte (nanochat's loss_eval), which does not
// depend on the tokenizer:  bits_per_byte = sum of target losses / (ln 2 * bytes of the targets).
// The same budget at every context scores the same tokens, so contexts compare like for like.
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "nanoformer/data/token_corpus.h"
#include "nanoformer/models/decoder_lm.h"

namespace nf::eval {

struct PerplexityOptions {
  int64_t context = 0;         // L > 0
  uint64_t max_tokens = 0;     // at most this many targets (0: the whole stream)
  int64_t batch_tokens = 4096; // windows per forward pass: max(1, batch_tokens / L)
  // f32: the plain forward. f16, bf16, q8_0, q4_0: each pass prefilled into a KV cache of that type, its
  // attention reading the keys and values as the cache stores them (what the cache type costs).
  QuantType cache_type = QuantType::f32;
  // The UTF-8 bytes of each id's text (tokenizer.token_bytes), vocab_size entries; empty: no bits per byte.
  std::vector<int64_t> token_bytes = {};
};

struct Perplexity {
  int64_t context = 0;
  int64_t windows = 0;      // W
  int64_t tokens = 0;       // targets scored: W L
  double loss = 0.0;        // mean cross-entropy per target, in nats
  double perplexity = 0.0;  // exp(loss)
  int64_t bytes = 0;        // of the targets' text (0 without token_bytes)
  double bits_per_byte = std::nan("");  // sum of losses / (ln 2 * bytes); nan without token_bytes
};

// W for a stream of `stream_tokens` tokens: floor(min(stream_tokens - 1, max_tokens) / L).
int64_t perplexity_windows(uint64_t stream_tokens, int64_t context, uint64_t max_tokens);

// Runs `model` in eval mode without autograd over the windows; `progress(windows_done)` is called
// after every forward pass. Throws nf::Error when the stream (or budget) holds no whole window,
// naming the counts, or when an id is not below the model's vocabulary size.
Perplexity evaluate_perplexity(models::DecoderLM& model, const data::TokenCorpus& corpus, const PerplexityOptions& options,
                               const std::function<void(int64_t windows_done)>& progress = {});

}  // namespace nf::eval
