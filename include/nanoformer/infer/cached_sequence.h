#pragma once
// A sequence held in its own KV cache, kept within the cache's context by shifting it: what every
// decoding stream (infer/decode_step.h) feeds its tokens to.
//
// Generation past the context: when the next tokens do not fit, the first `keep` tokens stay,
// the oldest half of the rest is dropped and the later keys move down (DecoderLM::shift_context:
// RoPE keys rotated, as llama.cpp's context shift), or, where keys cannot move (absolute position
// embeddings), the kept tokens are re-encoded. `crop` instead drops just enough tokens and always
// re-encodes: nanoGPT's crop to the last max_seq_len tokens, exactly a full forward over that
// window, at one prefill per token.
#include <cstdint>
#include <span>
#include <vector>

#include "nanoformer/core/tensor.h"
#include "nanoformer/models/decoder_lm.h"
#include "nanoformer/nn/kv_cache.h"

namespace nf::infer {

struct ContextShift {
  int64_t keep = 0;   // --keep: tokens at the start that are never dropped (a system prompt)
  bool crop = false;  // drop only what must go and re-encode the rest (exact, slow)
};

// A sequence in its own KV cache: tokens() are what the cache holds, in order.
class CachedSequence {
 public:
  // A cache of one row and max_len positions (0: the model's max_seq_len), of cache_type (nn/kv_cache.h);
  // paged in blocks of block_len positions when > 0.
  CachedSequence(models::DecoderLM& model, int64_t max_len = 0, ContextShift shift = {},
                 QuantType cache_type = QuantType::f32, int64_t block_len = 0);

  const std::vector<int64_t>& tokens() const { return tokens_; }
  models::DecoderLM& model() const { return model_; }
  const ContextShift& shift() const { return shift_; }
  // Becomes a copy of `other` (a sequence over the same model and cache shape): its tokens and cache
  // (a paged cache's blocks shared, not copied).
  void copy_from(const CachedSequence& other);
  // The first exact() tokens' keys and values are those a prefill of tokens() from the start
  // computes: all of them, but after a context shift moved keys computed beside dropped tokens (then
  // --keep's), which no other sequence can share.
  int64_t exact() const { return exact_; }
  // The blocks (of a paged cache that shares prefixes) that the first exact() tokens fill whole:
  // block i holds tokens() [i block_len, (i + 1) block_len), as a prefill of them computes it.
  std::vector<nn::KVBlockRef> shareable_blocks() const;
  // Forgets what it holds and starts from `blocks`, which hold `tokens` (blocks.size() x block_len
  // of them) as another sequence computed them (nn::KVCache::adopt).
  void adopt(const std::vector<int64_t>& tokens, const std::vector<nn::KVBlockRef>& blocks);
  nn::KVCache& cache() { return cache_; }
  const nn::KVCache& cache() const { return cache_; }
  int64_t max_len() const { return cache_.shape().max_len; }
  void reset();

  // Rolls back to the longest common prefix of tokens() and `sequence`, always leaving at least
  // its last token to feed (so that its logits are computed); returns the tokens kept.
  int64_t keep_common_prefix(const std::vector<int64_t>& sequence);
  // Rolls back to the first n tokens (a draft's rejected part); false, leaving the sequence as
  // it is, when the cache cannot (a state carried from the last token, nn/kv_cache.h).
  bool truncate(int64_t n);
  // Makes room for n more tokens, shifting the context when they do not fit; false when it cannot
  // (the kept tokens leave no room).
  bool make_room(int64_t n);
  // Feeds ids after tokens() (which must have room: make_room); returns the last position's logits
  // (1, 1, vocab_size), or with all_positions every fed position's (1, T, vocab_size).
  Tensor feed(const std::vector<int64_t>& ids, bool all_positions = false);
  // Feeds ids[i] after sequences[i]->tokens() in one forward over their caches (each with room;
  // the same count for every sequence: the prompts of a group, or a decode step's last tokens);
  // returns each sequence's last logits (n, 1, vocab_size), or with all_positions every fed
  // position's (n, T, vocab_size: drafts of one length verified together).
  static Tensor feed(std::span<CachedSequence* const> sequences, const std::vector<std::vector<int64_t>>& ids,
                     bool all_positions = false);

 private:
  models::DecoderLM& model_;
  nn::KVCache cache_;
  ContextShift shift_;
  std::vector<int64_t> tokens_;
  int64_t exact_ = 0;
};

}  // namespace nf::infer
