// KVCache: its storage (only the KV heads; rings of twice the window for sliding-window layers),
// the step of a cached forward (position, per-layer columns), commit, rollback and reset, the
// context shift, and bad input naming the numbers. MultiHeadAttention's cached forward against
// its full forward for the schemes a decoder LM does not take (T5 bias, Transformer-XL) and QK-norm,
// with both kernels.
#include <cstdio>

#include "nanoformer/nn/attention.h"
#include "nanoformer/nn/kv_cache.h"
#include "nanoformer/nn/positional.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/reduce.h"
#include "nanoformer/ops/view.h"
#include "support/testing.h"

namespace nf::nn {
namespace {

KVCacheShape small_shape() {
  return {.n_layers = 2, .max_batch = 3, .n_kv_heads = 2, .head_dim = 4, .max_len = 10, .dtype = DType::f32};
}

TEST(KVCache, StorageHoldsTheKeyValueHeadsForTheWholeContext) {
  const KVCache cache(small_shape());
  EXPECT_EQ(cache.layer(1).keys.shape(), Shape({3, 2, 10, 4}));
  EXPECT_EQ(cache.layer(1).values.shape(), Shape({3, 2, 10, 4}));
  EXPECT_EQ(cache.bytes(), 2 * 2 * 3 * 2 * 10 * 4 * 4);
  EXPECT_EQ(cache.length(), 0);
  EXPECT_THROW_WITH(cache.layer(2), "layer 2", "2 layers");
}

TEST(KVCache, StepsAdvanceTheColumnsAndRollBack) {
  KVCache cache(small_shape());
  KVCacheStep step = cache.begin(2, 4);
  EXPECT_EQ(step.position, 0);
  EXPECT_EQ(step.columns, (std::vector<int64_t>{0, 0}));
  cache.commit(step);
  step = cache.begin(2, 1);
  EXPECT_EQ(step.position, 4);
  EXPECT_EQ(step.columns, (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(cache.at(1, step).column, 4);
  cache.commit(step);
  EXPECT_EQ(cache.length(), 5);
  EXPECT_EQ(cache.batch(), 2);
  cache.truncate(3);
  EXPECT_EQ(cache.begin(2, 2).position, 3);
  cache.reset();
  EXPECT_EQ(cache.length(), 0);
  EXPECT_EQ(cache.begin(3, 1).batch, 3);  // an empty cache takes any batch up to its maximum
}

// A layer of window 3 in a context of 10: a ring of 6 columns, unrolled when a step would not fit,
// keeping the 2 keys the next token's window still reaches.
TEST(KVCache, SlidingWindowLayersKeepARingOfTwiceTheWindow) {
  KVCacheShape shape = small_shape();
  shape.windows = {0, 3};
  KVCache cache(shape);
  EXPECT_EQ(cache.layer(0).keys.shape(), Shape({3, 2, 10, 4}));
  EXPECT_EQ(cache.layer(1).keys.shape(), Shape({3, 2, 6, 4}));
  EXPECT_EQ(cache.bytes(), 2 * 3 * 2 * (10 + 6) * 4 * 4);
  EXPECT_EQ(cache.max_step(), 4);  // 6 columns - the 2 kept
  // write each position's number into its key column, to see which columns move
  const auto write = [&](const KVCacheStep& step) {
    for (int64_t l = 0; l < 2; ++l)
      for (int64_t t = 0; t < step.new_tokens; ++t)
        fill_(narrow(cache.layer(l).keys, 2, step.columns[static_cast<size_t>(l)] + t, 1),
              static_cast<double>(step.position + t));
    cache.commit(step);
  };
  write(cache.begin(1, 4));
  write(cache.begin(1, 2));  // 6 columns: full
  const KVCacheStep step = cache.begin(1, 1);
  EXPECT_EQ(step.columns, (std::vector<int64_t>{6, 2}));  // positions 4 and 5 moved to columns 0 and 1
  const Tensor ring = select(select(select(cache.layer(1).keys, 0, 0), 0, 0), 1, 0);  // (columns,) of row 0, head 0
  EXPECT_EQ(ring.contiguous().data<float>()[0], 4.0f);
  EXPECT_EQ(ring.contiguous().data<float>()[1], 5.0f);
  write(step);
  EXPECT_EQ(cache.length(), 7);
  EXPECT_TRUE(cache.can_truncate(6));   // the window of position 6 reaches 4 and 5: held
  EXPECT_FALSE(cache.can_truncate(3));  // position 3's window reaches 1 and 2: dropped
  EXPECT_THROW_WITH(cache.truncate(3), "cannot truncate to 3", "sliding-window");
  cache.reset();
  EXPECT_THROW_WITH(cache.begin(1, 5), "5 new tokens exceed the 4");
}

// The context shift drops positions keep .. keep + discard - 1: later columns move down and their
// keys are handed to the re-positioning function with -discard.
TEST(KVCache, ShiftDropsTheMiddleAndRepositionsTheRest) {
  KVCache cache({.n_layers = 1, .max_batch = 1, .n_kv_heads = 1, .head_dim = 1, .max_len = 8});
  const KVCacheStep step = cache.begin(1, 8);
  for (int64_t t = 0; t < 8; ++t) {
    fill_(narrow(cache.layer(0).keys, 2, t, 1), static_cast<double>(t));
    fill_(narrow(cache.layer(0).values, 2, t, 1), static_cast<double>(10 * t));
  }
  cache.commit(step);
  int64_t seen_delta = 0;
  ASSERT_TRUE(cache.shift(2, 3, [&](const Tensor& keys, int64_t delta) {
    seen_delta = delta;
    return keys + static_cast<double>(delta) * 100;
  }));
  EXPECT_EQ(seen_delta, -3);
  EXPECT_EQ(cache.length(), 5);
  const Tensor keys = reshape(cache.layer(0).keys, {-1}).contiguous(), values = reshape(cache.layer(0).values, {-1}).contiguous();
  const std::vector<float> want_keys{0, 1, 5 - 300, 6 - 300, 7 - 300}, want_values{0, 10, 50, 60, 70};
  for (size_t t = 0; t < 5; ++t) {
    EXPECT_EQ(keys.data<float>()[t], want_keys[t]) << t;
    EXPECT_EQ(values.data<float>()[t], want_values[t]) << t;
  }
  EXPECT_EQ(cache.begin(1, 3).position, 5);
  EXPECT_THROW_WITH(cache.shift(4, 2, [](const Tensor& k, int64_t) { return k; }), "cannot drop positions 4 .. 5",
                    "of the 5 cached");
}

TEST(KVCache, BadInputNamesTheNumbers) {
  KVCache cache(small_shape());
  EXPECT_THROW_WITH(cache.begin(4, 1), "batch 4", "maximum batch 3");
  EXPECT_THROW_WITH(cache.begin(1, 11), "11 new tokens after 0 cached", "maximum context 10");
  cache.commit(cache.begin(2, 8));
  EXPECT_THROW_WITH(cache.begin(2, 3), "3 new tokens after 8 cached", "maximum context 10");
  EXPECT_THROW_WITH(cache.begin(1, 1), "batch 1 differs from the 2 rows");
  EXPECT_THROW_WITH(cache.truncate(9), "truncate to 9", "holds 8");
  EXPECT_THROW_WITH(KVCache({.n_layers = 1, .max_batch = 0, .n_kv_heads = 1, .head_dim = 2, .max_len = 4}), "max_batch 0");
  EXPECT_THROW_WITH(KVCache({.n_layers = 2, .max_batch = 1, .n_kv_heads = 1, .head_dim = 2, .max_len = 4, .dtype = DType::f32, .windows = {1}}),
                    "1 windows for 2 layers");
}

// The attention layer fed its sequence through a cache (prefill 5, one token at a time, then a
// chunk of 3) against its full causal forward; returns the largest difference.
double cached_attention_error(const AttentionConfig& config, std::shared_ptr<AttentionPosition> position) {
  Generator gen(3);
  MultiHeadAttention attn(config, position, gen);
  attn.eval();
  if (position) position->eval();
  const int64_t B = 2, T = 11;
  const Tensor x = randn({B, T, config.dim}, gen);
  const Tensor full_out = attn.forward(x);
  const AttentionConfig& c = attn.config();
  KVCache cache({.n_layers = 1, .max_batch = B, .n_kv_heads = c.n_kv_heads, .head_dim = c.head_dim, .max_len = 12});
  double error = 0;
  int64_t column = 0;
  for (const int64_t n : {5, 1, 1, 1, 3}) {
    const KVCacheStep step = cache.begin(B, n);
    const CachedAttention layer = cache.at(0, step);
    const Tensor out = attn.forward(narrow(x, 1, column, n), {.caches = {&layer, 1}});
    cache.commit(step);
    error = std::max(error, max(abs(out - narrow(full_out, 1, column, n))).item());
    column += n;
  }
  return error;
}

TEST(KVCacheAttention, CachedForwardEqualsTheFullForwardForEveryScheme) {
  const AttentionConfig gqa{.dim = 32, .n_heads = 4, .n_kv_heads = 2, .causal = true};
  const auto rope = [](const AttentionConfig& c) {
    return make_attention_position({.kind = PositionKind::rope, .max_len = 16, .head_dim = c.dim / c.n_heads});
  };
  AttentionConfig nanochat = gqa;
  nanochat.qk_norm = true;
  AttentionConfig plain = gqa;
  plain.fused = false;
  AttentionConfig mha = gqa;
  mha.n_kv_heads = 0;
  Generator gen(5);
  const std::vector<std::tuple<const char*, AttentionConfig, std::shared_ptr<AttentionPosition>>> cases = {
      {"rope GQA", gqa, rope(gqa)},
      {"rope + QK-norm", nanochat, rope(nanochat)},
      {"rope, plain kernel", plain, rope(plain)},
      {"T5 bias (causal buckets)", gqa, std::make_shared<T5RelativeBias>(4, 32, 128, /*bidirectional=*/false, gen)},
      {"ALiBi", gqa, std::make_shared<AlibiBias>(4)},
      {"Transformer-XL", mha, std::make_shared<XLRelativePosition>(32, 4, 8, 0.0, gen)},
      {"none", gqa, nullptr},
  };
  for (const auto& [label, config, position] : cases) {
    const double error = cached_attention_error(config, position);
    std::printf("  %-26s max abs error %.2e\n", label, error);
    EXPECT_LE(error, 1e-5) << label;
  }
}

TEST(KVCacheAttention, RefusesWhatACacheCannotServe) {
  Generator gen(1);
  MultiHeadAttention bidirectional({.dim = 8, .n_heads = 2}, nullptr, gen);
  bidirectional.eval();
  KVCache cache({.n_layers = 1, .max_batch = 1, .n_kv_heads = 2, .head_dim = 4, .max_len = 4});
  const KVCacheStep step = cache.begin(1, 2);
  const CachedAttention layer = cache.at(0, step);
  EXPECT_THROW_WITH(bidirectional.forward(zeros({1, 2, 8}), {.caches = {&layer, 1}}), "causal");
  MultiHeadAttention causal({.dim = 8, .n_heads = 2, .causal = true}, nullptr, gen);
  EXPECT_THROW_WITH(causal.forward(zeros({1, 2, 8}), {.caches = {&layer, 1}}), "call eval()");
  causal.eval();
  EXPECT_THROW_WITH(causal.forward(zeros({1, 3, 8}), {.caches = {&layer, 1}}), "(B, T = new tokens, dim = 8)",
                    "(1, 3, 8)");
  KVCache mqa({.n_layers = 1, .max_batch = 1, .n_kv_heads = 1, .head_dim = 4, .max_len = 4});
  const KVCacheStep mqa_step = mqa.begin(1, 2);
  const CachedAttention mqa_layer = mqa.at(0, mqa_step);
  EXPECT_THROW_WITH(causal.forward(zeros({1, 2, 8}), {.caches = {&mqa_layer, 1}}), "(1, 1, 4, 4)",
                    "n_kv_heads = 2");
}

}  // namespace
}  // namespace nf::nn
