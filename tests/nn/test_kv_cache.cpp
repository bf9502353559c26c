// KVCache: its storage (only the KV heads), the step of a cached forward (columns, per-row
// positions, the key-padding mask of left-padded rows), commit, rollback and reset, row views that
// share the storage, and bad input naming the numbers. MultiHeadAttention's cached forward against
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
  EXPECT_EQ(step.column, 0);
  EXPECT_EQ(step.positions, (std::vector<int64_t>{0, 0}));
  EXPECT_FALSE(step.key_padding.defined());
  cache.commit(step);
  step = cache.begin(2, 1);
  EXPECT_EQ(step.column, 4);
  EXPECT_EQ(step.positions, (std::vector<int64_t>{4, 4}));
  cache.commit(step);
  EXPECT_EQ(cache.length(), 5);
  EXPECT_EQ(cache.batch(), 2);
  cache.truncate(3);
  EXPECT_EQ(cache.begin(2, 2).column, 3);
  cache.reset();
  EXPECT_EQ(cache.length(), 0);
  EXPECT_EQ(cache.begin(3, 1).batch, 3);  // an empty cache takes any batch up to its maximum
}

TEST(KVCache, LeftPaddedRowsSitAtTheirOwnPositions) {
  KVCache cache(small_shape());
  cache.set_row_starts(4, {0, 3, 1});
  const KVCacheStep step = cache.begin(3, 2);
  EXPECT_EQ(step.positions, (std::vector<int64_t>{4, 1, 3}));
  ASSERT_TRUE(step.key_padding.defined());
  EXPECT_EQ(step.key_padding.shape(), Shape({3, 6}));
  const bool* keep = step.key_padding.data<bool>();
  const std::vector<int64_t> starts{0, 3, 1};
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t t = 0; t < 6; ++t) EXPECT_EQ(keep[r * 6 + t], t >= starts[r]) << r << " " << t;
}

TEST(KVCache, RowViewsWriteIntoTheSharedStorage) {
  KVCache cache(small_shape());
  const KVCache row = cache.row_view(1, 6);
  EXPECT_EQ(row.shape().max_batch, 1);
  EXPECT_EQ(row.shape().max_len, 4);
  fill_(row.layer(0).keys, 2.0);
  EXPECT_EQ(sum(cache.layer(0).keys).item(), 2.0 * 2 * 4 * 4);
  EXPECT_EQ(select(select(select(cache.layer(0).keys, 0, 1), 0, 0), 0, 6).contiguous().data<float>()[0], 2.0f);
  EXPECT_EQ(select(select(select(cache.layer(0).keys, 0, 1), 0, 0), 0, 5).contiguous().data<float>()[0], 0.0f);
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
  EXPECT_THROW_WITH(cache.set_row_starts(4, {0, 4}), "row 1 starts at column 4");
}

TEST(KVCache, AtRowPositionsCallsOncePerDistinctRow) {
  int calls = 0;
  const auto f = [&](int64_t r, int64_t n, int64_t p) {
    ++calls;
    return full({n, 1}, static_cast<double>(p * 10 + r));
  };
  EXPECT_EQ(at_row_positions({5, 5, 5}, f).shape(), Shape({3, 1}));
  EXPECT_EQ(calls, 1);
  const Tensor per_row = at_row_positions({1, 2, 3}, f);
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(per_row.contiguous().data<float>()[2], 32.0f);
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
    const Tensor out = attn.forward_cached(narrow(x, 1, column, n), {cache.layer(0), &step});
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
  EXPECT_THROW_WITH(bidirectional.forward_cached(zeros({1, 2, 8}), {cache.layer(0), &step}), "causal");
  MultiHeadAttention causal({.dim = 8, .n_heads = 2, .causal = true}, nullptr, gen);
  EXPECT_THROW_WITH(causal.forward_cached(zeros({1, 2, 8}), {cache.layer(0), &step}), "call eval()");
  causal.eval();
  EXPECT_THROW_WITH(causal.forward_cached(zeros({1, 3, 8}), {cache.layer(0), &step}), "(B = 1, T = 2, dim = 8)",
                    "(1, 3, 8)");
  KVCache mqa({.n_layers = 1, .max_batch = 1, .n_kv_heads = 1, .head_dim = 4, .max_len = 4});
  const KVCacheStep mqa_step = mqa.begin(1, 2);
  EXPECT_THROW_WITH(causal.forward_cached(zeros({1, 2, 8}), {mqa.layer(0), &mqa_step}), "(1, 1, 4, 4)",
                    "n_kv_heads = 2");
}

}  // namespace
}  // namespace nf::nn
