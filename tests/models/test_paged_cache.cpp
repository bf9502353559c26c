// A paged KV cache (nn/kv_cache.h with block_len: full-attention layers in shared, reference-counted
// blocks) gives the same bits as the contiguous cache: the same script of forwards (a prefill the
// decode kernel takes, one the fused kernel takes over gathered rows, single tokens, a chunk, a
// rollback, beams chosen by select_rows, a context shift, a copy) on both, for every cache type, for
// RoPE with GQA, ALiBi (whose score bias reads the keys back), learned positions, sliding-window
// layers (a ring kept contiguous beside paged layers, and a window wide enough to be paged) and
// nanochat's smear and value embeddings (state carried past the keys), at block lengths that divide
// the context and one that does not. Blocks shared by another cache (adopt: a prefix computed once)
// are never written: the sharer copies the block it must write into, and what the other reads, and
// so its logits, stay those of a cold cache.
#include <cstring>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/models/decoder_lm.h"
#include "nanoformer/models/model.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/view.h"
#include "support/testing.h"

namespace nf::models {
namespace {

// A tiny model whose head_dim is 32 (what q8_0 and q4_0 caches take): dim 64, 2 heads, 1 KV head.
DecoderLMConfig tiny(const std::string& preset, nn::PositionKind position) {
  DecoderLMConfig c = preset_config(preset);
  c.vocab_size = 64, c.dim = 64, c.n_layers = 2, c.n_heads = 2, c.n_kv_heads = 1, c.head_dim = 0;
  c.max_seq_len = 32, c.mlp_hidden = 0, c.mlp_multiple_of = 16;
  c.position = position;
  c.init = InitScheme::normal, c.init_std = 0.2;
  return c;
}

struct Case {
  std::string name;
  DecoderLMConfig config;
};

std::vector<Case> cases() {
  std::vector<Case> out{{"rope gqa", tiny("gpt-mini", nn::PositionKind::rope)},
                        {"alibi", tiny("gpt-mini", nn::PositionKind::alibi)},
                        {"learned", tiny("gpt-mini", nn::PositionKind::learned)}};
  DecoderLMConfig ring = tiny("gpt-mini", nn::PositionKind::rope);
  ring.sliding_window = 5, ring.window_pattern = "SL";  // layer 0 a ring of 10 columns, layer 1 paged
  out.push_back({"window 5 ring beside a paged layer", ring});
  DecoderLMConfig wide = ring;
  wide.sliding_window = 20;  // 2 W >= the context: paged, masked by the window
  out.push_back({"window 20 paged", wide});
  DecoderLMConfig nanochat = tiny("nanochat-d6", nn::PositionKind::rope);
  nanochat.smear = true, nanochat.value_embeddings = true;
  out.push_back({"nanochat smear and value embeddings", nanochat});
  return out;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  const Tensor x = a.contiguous(), y = b.contiguous();
  return x.shape() == y.shape() && std::memcmp(x.data<float>(), y.data<float>(), x.numel() * sizeof(float)) == 0;
}

Tensor ids(int64_t batch, int64_t t, uint64_t seed) {
  Generator gen(seed);
  return randint(0, 64, {batch, t}, gen);
}

// The same operations on a contiguous cache and a paged one, the logits compared bit for bit.
struct Twin {
  DecoderLM& model;
  nn::KVCache contiguous, paged;
  std::string where;

  void feed(const Tensor& x, const std::string& what) {
    const Tensor a = model.forward_cached(x, contiguous, false), b = model.forward_cached(x, paged, false);
    EXPECT_TRUE(same_bits(a, b)) << where << ": " << what << " at position " << contiguous.length();
    EXPECT_EQ(contiguous.length(), paged.length());
  }
  void truncate(int64_t n) {
    ASSERT_EQ(contiguous.can_truncate(n), paged.can_truncate(n)) << where;
    if (!contiguous.can_truncate(n)) return;
    contiguous.truncate(n), paged.truncate(n);
  }
  void shift(int64_t keep, int64_t discard) {
    const bool a = model.shift_context(contiguous, keep, discard), b = model.shift_context(paged, keep, discard);
    ASSERT_EQ(a, b) << where;
    if (!a) contiguous.reset(), paged.reset();  // a model whose keys cannot move re-encodes; here: starts again
  }
};

TEST(PagedCache, AttentionOverBlocksEqualsTheContiguousCacheBitForBit) {
  NoGradGuard no_grad;
  for (const Case& c : cases()) {
    Generator gen(7);
    DecoderLM model(c.config, gen);
    model.eval();
    for (const QuantType type : {QuantType::f32, QuantType::f16, QuantType::bf16, QuantType::q8_0, QuantType::q4_0})
      for (const int64_t block_len : {4, 5, 16}) {
        Twin t{model, model.make_cache(2, 32, type, 0), model.make_cache(2, 32, type, block_len),
               c.name + ", " + quant_type_name(type) + ", blocks of " + std::to_string(block_len)};
        ASSERT_TRUE(t.paged.blocks(0).empty());
        t.feed(ids(2, 7, 1), "a prefill of 7 (the decode kernel)");
        for (int i = 0; i < 4; ++i) t.feed(ids(2, 1, 10 + i), "one token");
        t.feed(ids(2, 9, 2), "a chunk of 9 (the fused kernel over gathered rows)");  // 20
        t.truncate(13);                                                               // a rollback
        t.feed(ids(2, 3, 3), "after a rollback");
        t.contiguous.select_rows({1, 1}), t.paged.select_rows({1, 1});  // beams from row 1: blocks shared
        t.feed(ids(2, 2, 4), "two beams of one parent");  // each writes its own copy of the parent's last block
        t.shift(3, 9);
        t.feed(ids(2, 4, 5), "after a context shift");
        nn::KVCache copy_a = model.make_cache(2, 32, type, 0), copy_b = model.make_cache(2, 32, type, block_len);
        copy_a.copy_from(t.contiguous), copy_b.copy_from(t.paged);  // shares every block
        t.feed(ids(2, 2, 6), "the original after a copy");
        Twin copies{model, std::move(copy_a), std::move(copy_b), t.where + ", the copy"};
        copies.feed(ids(2, 3, 7), "the copy");
        while (t.contiguous.length() + 3 <= 32) t.feed(ids(2, 3, 8 + t.contiguous.length()), "to the end of the context");
        t.shift(2, 12);
        t.feed(ids(2, 1, 9), "after a second shift");
      }
  }
}

TEST(PagedCache, SharedBlocksAreNeverWrittenAndTheSharerReadsWhatAColdCacheReads) {
  NoGradGuard no_grad;
  for (const QuantType type : {QuantType::f32, QuantType::q8_0}) {
    Generator gen(3);
    DecoderLM model(tiny("gpt-mini", nn::PositionKind::rope), gen);
    model.eval();
    const Tensor prompt = ids(1, 12, 11);
    nn::KVCache a = model.make_cache(1, 32, type, 4), cold = model.make_cache(1, 32, type, 0);
    ASSERT_TRUE(a.shares_prefixes());
    model.forward_cached(narrow(prompt, 1, 0, 8), a);  // the prefix 0 .. 7 fed as one chunk by both
    model.forward_cached(narrow(prompt, 1, 8, 4), a);
    model.forward_cached(narrow(prompt, 1, 0, 8), cold);
    const std::vector<nn::KVBlockRef> prefix = a.full_blocks();
    ASSERT_EQ(prefix.size(), 3u);
    const std::vector<nn::KVBlockRef> shared(prefix.begin(), prefix.begin() + 2);  // positions 0 .. 7
    std::vector<std::vector<unsigned char>> bytes;
    for (const nn::KVBlockRef& block : shared) {
      const auto* p = static_cast<const unsigned char*>(block->rows().data());
      bytes.emplace_back(p, p + block->bytes());
    }
    nn::KVCache b = model.make_cache(1, 32, type, 4);
    b.adopt(shared);
    EXPECT_EQ(b.length(), 8);
    EXPECT_EQ(shared[0].use_count(), 4);  // a, b, prefix, shared
    // b computes positions 8 .. 11 itself: the cold cache's logits, bit for bit
    const Tensor tail = narrow(prompt, 1, 8, 4);
    EXPECT_TRUE(same_bits(model.forward_cached(tail, b, false), model.forward_cached(tail, cold, false)));
    EXPECT_NE(b.blocks(0)[2].get(), a.blocks(0)[2].get());  // its own third block
    // a rolls back into the shared block 1 and writes other tokens there: it copies that block first
    a.truncate(6);
    model.forward_cached(ids(1, 5, 12), a);
    EXPECT_NE(a.blocks(0)[1].get(), shared[1].get());
    EXPECT_EQ(a.blocks(0)[0].get(), shared[0].get());  // block 0, untouched, still shared
    for (size_t i = 0; i < shared.size(); ++i)
      EXPECT_EQ(std::memcmp(shared[i]->rows().data(), bytes[i].data(), bytes[i].size()), 0) << "shared block " << i;
    // and b, reading the shared blocks, still decodes what the cold cache decodes
    for (int i = 0; i < 6; ++i) {
      const Tensor next = ids(1, 1, 20 + i);
      EXPECT_TRUE(same_bits(model.forward_cached(next, b, false), model.forward_cached(next, cold, false)))
          << quant_type_name(type) << ", token " << i;
    }
    // blocks die with their last holder
    const std::weak_ptr<nn::KVBlock> watched = a.blocks(0)[1];
    a.reset();
    EXPECT_TRUE(watched.expired());
    b.reset();
    EXPECT_EQ(shared[0].use_count(), 2);  // prefix and shared
  }
}

TEST(PagedCache, BadInputNamesTheNumbers) {
  Generator gen(3);
  DecoderLM model(tiny("gpt-mini", nn::PositionKind::rope), gen);
  nn::KVCache contiguous = model.make_cache(1, 32);
  EXPECT_THROW_WITH(contiguous.adopt({}), "adopt needs a paged cache");
  EXPECT_THROW_WITH(model.make_cache(1, 32, QuantType::f32, -1), "block_len -1");
  nn::KVCache other = model.make_cache(1, 32, QuantType::q8_0, 4);
  nn::KVCache paged = model.make_cache(1, 32, QuantType::f32, 4);
  NoGradGuard no_grad;
  model.eval();
  model.forward_cached(ids(1, 8, 1), other);
  EXPECT_THROW_WITH(paged.adopt(other.full_blocks()), "another cache's layout");
  DecoderLMConfig ring = tiny("gpt-mini", nn::PositionKind::rope);
  ring.sliding_window = 5, ring.window_pattern = "SL";
  DecoderLM windowed(ring, gen);
  EXPECT_FALSE(windowed.make_cache(1, 32, QuantType::f32, 4).shares_prefixes());
}

}  // namespace
}  // namespace nf::models
