// KVCache: its storage (only the KV heads; rings of twice the window for sliding-window layers; the
// bytes of each cache type; f32 as rows of the model's dtype, read back as a view), the step of a cached forward (position, per-layer columns), commit,
// rollback and reset, the context shift, beams' rows, also in q8_0 and q4_0 caches (whose rows are
// the reference quantiser's bytes), and bad input naming
// the numbers, the cache type and head_dim. MultiHeadAttention's cached forward against its full
// forward for the schemes a decoder LM does not take (T5 bias, Transformer-XL) and QK-norm, with
// both kernels; over a quantised cache, its decoding kernel (reading the rows in place) against
// the plain kernel over the dequantised cache.
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <tuple>

#include "nanoformer/nn/attention.h"
#include "nanoformer/nn/kv_cache.h"
#include "nanoformer/nn/positional.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/join.h"
#include "nanoformer/ops/quantized.h"
#include "nanoformer/ops/reduce.h"
#include "nanoformer/ops/view.h"
#include "support/testing.h"

namespace nf::nn {
namespace {

KVCacheShape small_shape() {
  return {.n_layers = 2, .max_batch = 3, .n_kv_heads = 2, .head_dim = 4, .max_len = 10, .dtype = DType::f32};
}

// (batch, heads, columns, head_dim) of a layer's keys or values
Shape shape_of(const KVStorage& storage) {
  return {storage.batch(), storage.heads(), storage.columns(), storage.head_dim()};
}

TEST(KVCache, StorageHoldsTheKeyValueHeadsForTheWholeContext) {
  const KVCache cache(small_shape());
  EXPECT_EQ(shape_of(cache.layer(1).keys), Shape({3, 2, 10, 4}));
  EXPECT_EQ(shape_of(cache.layer(1).values), Shape({3, 2, 10, 4}));
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
  EXPECT_EQ(shape_of(cache.layer(0).keys), Shape({3, 2, 10, 4}));
  EXPECT_EQ(shape_of(cache.layer(1).keys), Shape({3, 2, 6, 4}));
  EXPECT_EQ(cache.bytes(), 2 * 3 * 2 * (10 + 6) * 4 * 4);
  EXPECT_EQ(cache.max_step(), 4);  // 6 columns - the 2 kept
  // write each position's number into its key column, to see which columns move
  const auto write = [&](const KVCacheStep& step) {
    for (int64_t l = 0; l < 2; ++l)
      for (int64_t t = 0; t < step.new_tokens; ++t)
        cache.layer(l).keys.write(step.columns[static_cast<size_t>(l)] + t,
                                  full({3, 2, 1, 4}, static_cast<double>(step.position + t)));
    cache.commit(step);
  };
  write(cache.begin(1, 4));
  write(cache.begin(1, 2));  // 6 columns: full
  const KVCacheStep step = cache.begin(1, 1);
  EXPECT_EQ(step.columns, (std::vector<int64_t>{6, 2}));  // positions 4 and 5 moved to columns 0 and 1
  const Tensor ring = select(select(select(cache.layer(1).keys.read(3, 0, 6), 0, 0), 0, 0), 1, 0);  // (columns,) of row 0, head 0
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
    cache.layer(0).keys.write(t, full({1, 1, 1, 1}, static_cast<double>(t)));
    cache.layer(0).values.write(t, full({1, 1, 1, 1}, static_cast<double>(10 * t)));
  }
  cache.commit(step);
  int64_t seen_delta = 0;
  ASSERT_TRUE(cache.shift(2, 3, [&](const Tensor& keys, int64_t delta) {
    seen_delta = delta;
    return keys + static_cast<double>(delta) * 100;
  }));
  EXPECT_EQ(seen_delta, -3);
  EXPECT_EQ(cache.length(), 5);
  const Tensor keys = reshape(cache.layer(0).keys.read(1, 0, 8), {-1}).contiguous(),
               values = reshape(cache.layer(0).values.read(1, 0, 8), {-1}).contiguous();
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

// Each cache type's bytes: f32 4 per value, f16 and bf16 2, q8_0 34 per 32 (3.76 times less than
// f32), q4_0 18 per 32 (7.11 times less).
TEST(KVCache, EachCacheTypeCountsItsBytes) {
  KVCacheShape shape{.n_layers = 2, .max_batch = 3, .n_kv_heads = 2, .head_dim = 64, .max_len = 10, .windows = {0, 3}};
  const int64_t values = 2 * 3 * 2 * (10 + 6) * 64;  // keys and values; a full layer and a ring of 6
  EXPECT_EQ(KVCache(shape).bytes(), values * 4);
  for (const QuantType type : {QuantType::f16, QuantType::bf16}) {
    shape.cache_type = type;
    EXPECT_EQ(KVCache(shape).bytes(), values * 2) << quant_type_name(type);
  }
  shape.cache_type = QuantType::q8_0;
  const KVCache q8(shape);
  EXPECT_EQ(q8.bytes(), values / 32 * 34);
  std::printf("  q8_0 cache: %lld bytes, f32 / q8_0 = %.2f\n", static_cast<long long>(q8.bytes()),
              static_cast<double>(values * 4) / static_cast<double>(q8.bytes()));
  EXPECT_EQ(q8.layer(0).keys.type(), QuantType::q8_0);
  const KVStorage& ring = q8.layer(1).keys;
  EXPECT_EQ(ring.type(), QuantType::q8_0);
  EXPECT_EQ(std::vector<int64_t>({ring.batch(), ring.heads(), ring.columns(), ring.head_dim()}),
            std::vector<int64_t>({3, 2, 6, 64}));
  EXPECT_EQ(KVCache(small_shape()).layer(0).keys.type(), QuantType::f32);
  shape.cache_type = QuantType::q4_0;
  const KVCache q4(shape);
  EXPECT_EQ(q4.bytes(), values / 32 * 18);
  std::printf("  q4_0 cache: %lld bytes, f32 / q4_0 = %.2f\n", static_cast<long long>(q4.bytes()),
              static_cast<double>(values * 4) / static_cast<double>(q4.bytes()));
  EXPECT_EQ(q4.layer(1).values.type(), QuantType::q4_0);
}

// Cache type f32 keeps keys and values as the model computes them: rows of its dtype (8 bytes a
// value for f64, 2 for bf16 and f16), which store them exactly and read back as a view, no copy.
TEST(KVCache, TheF32CacheTypeStoresRowsOfTheModelsDtype) {
  for (const auto& [dtype, type, bytes] : {std::tuple{DType::f32, QuantType::f32, 4}, std::tuple{DType::f64, QuantType::f64, 8},
                                          std::tuple{DType::bf16, QuantType::bf16, 2}, std::tuple{DType::f16, QuantType::f16, 2}}) {
    KVCacheShape shape = small_shape();
    shape.dtype = dtype;
    KVCache cache(shape);
    EXPECT_EQ(cache.layer(1).values.type(), type) << dtype_name(dtype);
    EXPECT_EQ(cache.bytes(), 2 * 2 * 3 * 2 * 10 * 4 * bytes) << dtype_name(dtype);
    Generator gen(2);
    const Tensor x = randn({2, 2, 3, 4}, gen).to(dtype);
    const KVStorage& keys = cache.layer(1).keys;
    keys.write(5, x);
    const Tensor read = keys.read(2, 5, 3, dtype);
    EXPECT_TRUE(read.shares_storage_with(keys.read(3, 0, 10, dtype))) << dtype_name(dtype);  // a view
    EXPECT_TENSOR_CLOSE(read, x, 0, 0);
    EXPECT_EQ(keys.read(2, 5, 3).dtype(), DType::f32);  // other dtypes: converted
    EXPECT_TENSOR_CLOSE(keys.read(2, 5, 3), x.to(DType::f32), 0, 0);
  }
}

TEST(KVCache, CacheTypesByNameAndTheHeadDimsQ8_0AndQ4_0Take) {
  EXPECT_EQ(kv_cache_type_from_name("f32"), QuantType::f32);
  EXPECT_EQ(kv_cache_type_from_name("f16"), QuantType::f16);
  EXPECT_EQ(kv_cache_type_from_name("bf16"), QuantType::bf16);
  EXPECT_EQ(kv_cache_type_from_name("q8_0"), QuantType::q8_0);
  EXPECT_EQ(kv_cache_type_from_name("q4_0"), QuantType::q4_0);
  EXPECT_THROW_WITH(kv_cache_type_from_name("q4"), "--cache-type: 'q4' is not a KV cache type (f32, f16, bf16, q8_0 or q4_0)");
  EXPECT_THROW_WITH(kv_cache_type_from_name("q4_1"), "--cache-type: 'q4_1' is not a KV cache type");
  KVCacheShape shape = small_shape();  // head_dim 4
  for (const QuantType type : {QuantType::q8_0, QuantType::q4_0}) {
    shape.cache_type = type;
    EXPECT_THROW_WITH(KVCache(shape), std::string("--cache-type ").append(quant_type_name(type)), "blocks of 32",
                      "head_dim 4 is not a multiple of 32");
  }
  shape.head_dim = 32, shape.cache_type = QuantType::q4_1;
  EXPECT_THROW_WITH(KVCache(shape), "cache type q4_1 is not one of f32, f16, bf16, q8_0 or q4_0");
}

// A q4_0 cache's rows are the bytes of the reference Q4_0 quantiser (ops/quantized.h's quantize,
// which tests/ops/test_quant_rows.cpp checks against gguf.quants) row by row, at any column, and
// read back as its dequantised values.
TEST(KVCache, AQ4_0CacheStoresTheReferenceQuantisersRows) {
  const KVCache cache({.n_layers = 1, .max_batch = 2, .n_kv_heads = 2, .head_dim = 64, .max_len = 9,
                       .cache_type = QuantType::q4_0});
  Generator gen(4);
  const Tensor x = randn({2, 2, 5, 64}, gen);
  const KVStorage& keys = cache.layer(0).keys;
  keys.write(3, x);
  const QuantizedTensor want = quantize(x.reshape({20, 64}), QuantType::q4_0);
  ASSERT_EQ(keys.row_bytes(), want.row_bytes());
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t t = 0; t < 5; ++t)
        EXPECT_EQ(std::memcmp(keys.row(b, h, 3 + t), want.row((b * 2 + h) * 5 + t), want.row_bytes()), 0) << b << h << t;
  EXPECT_TENSOR_CLOSE(keys.read(2, 3, 5), dequantize(want).reshape({2, 2, 5, 64}), 0, 0);
}

// (B, H, T, D) with every value of row (b, h, t) value(b, h, t).
Tensor rows_of(int64_t B, int64_t H, int64_t T, int64_t D, const std::function<double(int64_t, int64_t, int64_t)>& value) {
  Tensor x = Tensor::empty({B, H, T, D});
  for (int64_t r = 0; r < B * H * T; ++r)
    std::fill_n(x.data<float>() + r * D, D, static_cast<float>(value(r / (H * T), r / T % H, r % T)));
  return x;
}

// Q8_0 stores a row of 32 equal values 127 n exactly (d = n, q = 127), Q4_0 one of -8 n (d = n,
// q = 0; n and d exact in f16 for these |n| < 2048), so where rows move to can be read back exactly:
// the ring's unrolling, the shift (keys dequantised, re-positioned, quantised again; values moved
// as they are) and beams' rows.
class QuantizedCacheMoves : public ::testing::TestWithParam<std::pair<QuantType, double>> {};

TEST_P(QuantizedCacheMoves, ItsRowsForTheRingTheShiftAndBeams) {
  const QuantType type = GetParam().first;
  const double unit = GetParam().second;  // a row of `unit` n stores n exactly
  const auto n_at = [unit](const Tensor& rows, int64_t b, int64_t h, int64_t t) {  // n of row (b, h, t) of read()
    return rows.data<float>()[((b * rows.size(1) + h) * rows.size(2) + t) * rows.size(3)] / static_cast<float>(unit);
  };
  {  // a layer of window 3 in a context of 10: a ring of 6 columns
    KVCache cache({.n_layers = 2, .max_batch = 1, .n_kv_heads = 2, .head_dim = 32, .max_len = 10,
                   .cache_type = type, .windows = {0, 3}});
    const auto write = [&](const KVCacheStep& step) {
      for (int64_t l = 0; l < 2; ++l)
        cache.layer(l).keys.write(
            step.columns[static_cast<size_t>(l)],
            rows_of(1, 2, step.new_tokens, 32, [&](int64_t, int64_t, int64_t t) { return unit * (step.position + t); }));
      cache.commit(step);
    };
    write(cache.begin(1, 4));
    write(cache.begin(1, 2));
    const KVCacheStep step = cache.begin(1, 1);
    EXPECT_EQ(step.columns, (std::vector<int64_t>{6, 2}));
    const Tensor ring = cache.layer(1).keys.read(1, 0, 2);
    EXPECT_EQ(n_at(ring, 0, 1, 0), 4.0f);  // positions 4 and 5 moved to columns 0 and 1
    EXPECT_EQ(n_at(ring, 0, 1, 1), 5.0f);
  }
  {  // drop positions 2 .. 4 of 8: keys re-positioned by -3 (the function adds 100 delta)
    KVCache cache({.n_layers = 1, .max_batch = 1, .n_kv_heads = 1, .head_dim = 32, .max_len = 8,
                   .cache_type = type});
    const KVCacheStep step = cache.begin(1, 8);
    const LayerKV& layer = cache.layer(0);
    layer.keys.write(0, rows_of(1, 1, 8, 32, [unit](int64_t, int64_t, int64_t t) { return unit * t; }));
    layer.values.write(0, rows_of(1, 1, 8, 32, [unit](int64_t, int64_t, int64_t t) { return unit * 10 * t; }));
    cache.commit(step);
    ASSERT_TRUE(cache.shift(2, 3, [unit](const Tensor& keys, int64_t delta) { return keys + unit * 100 * delta; }));
    const Tensor keys = layer.keys.read(1, 0, 5), values = layer.values.read(1, 0, 5);
    const std::vector<float> want_keys{0, 1, 5 - 300, 6 - 300, 7 - 300}, want_values{0, 10, 50, 60, 70};
    for (int64_t t = 0; t < 5; ++t) {
      EXPECT_EQ(n_at(keys, 0, 0, t), want_keys[static_cast<size_t>(t)]) << t;
      EXPECT_EQ(n_at(values, 0, 0, t), want_values[static_cast<size_t>(t)]) << t;
    }
  }
  {  // beams: rows 2, 0, 2 of 3
    KVCache cache({.n_layers = 1, .max_batch = 3, .n_kv_heads = 2, .head_dim = 32, .max_len = 4,
                   .cache_type = type});
    const KVCacheStep step = cache.begin(3, 2);
    for (const KVStorage& storage : {cache.layer(0).keys, cache.layer(0).values})
      storage.write(0, rows_of(3, 2, 2, 32, [unit](int64_t b, int64_t h, int64_t t) { return unit * (100 * b + 10 * h + t); }));
    cache.commit(step);
    cache.select_rows({2, 0, 2});
    const std::vector<int64_t> parent{2, 0, 2};
    for (const KVStorage& storage : {cache.layer(0).keys, cache.layer(0).values}) {
      const Tensor rows = storage.read(3, 0, 2);
      for (int64_t b = 0; b < 3; ++b)
        for (int64_t h = 0; h < 2; ++h)
          for (int64_t t = 0; t < 2; ++t)
            EXPECT_EQ(n_at(rows, b, h, t), static_cast<float>(100 * parent[static_cast<size_t>(b)] + 10 * h + t));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, QuantizedCacheMoves,
                         ::testing::Values(std::pair{QuantType::q8_0, 127.0}, std::pair{QuantType::q4_0, -8.0}),
                         [](const auto& info) { return std::string(quant_type_name(info.param.first)); });

// The attention layer fed its sequence through a cache of cache_type (prefill 5, one token at a
// time, then a chunk of 3): its outputs, and those of its full causal forward.
std::pair<Tensor, Tensor> cached_attention(const AttentionConfig& config, std::shared_ptr<AttentionPosition> position,
                                           QuantType cache_type = QuantType::f32) {
  Generator gen(3);
  MultiHeadAttention attn(config, position, gen);
  attn.eval();
  if (position) position->eval();
  const int64_t B = 2, T = 11;
  const Tensor x = randn({B, T, config.dim}, gen);
  const AttentionConfig& c = attn.config();
  KVCache cache({.n_layers = 1, .max_batch = B, .n_kv_heads = c.n_kv_heads, .head_dim = c.head_dim, .max_len = 12,
                 .cache_type = cache_type});
  std::vector<Tensor> outputs;
  int64_t column = 0;
  for (const int64_t n : {5, 1, 1, 1, 3}) {
    const KVCacheStep step = cache.begin(B, n);
    const CachedAttention layer = cache.at(0, step);
    outputs.push_back(attn.forward(narrow(x, 1, column, n), {.caches = {&layer, 1}}));
    cache.commit(step);
    column += n;
  }
  return {cat(outputs, 1), attn.forward(x)};
}

// The largest difference of the cached forward from the full forward.
double cached_attention_error(const AttentionConfig& config, std::shared_ptr<AttentionPosition> position) {
  const auto [cached, full] = cached_attention(config, std::move(position));
  return max(abs(cached - full)).item();
}

TEST(KVCacheAttention, CachedForwardEqualsTheFullForwardForEveryScheme) {
  const AttentionConfig gqa{.dim = 32, .n_heads = 4, .n_kv_heads = 2, .causal = true};
  const auto rope = [](const AttentionConfig& c) {
    return make_attention_position({.kind = PositionKind::rope, .max_len = 16, .head_dim = c.dim / c.n_heads});
  };
  AttentionConfig nanochat = gqa;
  nanochat.qk_norm = true;
  AttentionConfig mha = gqa;
  mha.n_kv_heads = 0;
  Generator gen(5);
  const std::vector<std::tuple<const char*, AttentionConfig, std::shared_ptr<AttentionPosition>>> cases = {
      {"rope GQA", gqa, rope(gqa)},
      {"rope + QK-norm", nanochat, rope(nanochat)},
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

// Over an f16, bf16, q8_0 or q4_0 cache the decoding kernel reads the rows in place (a scheme with a score
// bias attends over the cache dequantised; the two agree to f32 rounding: ops' test
// Attention.OverAQuantizedCacheEqualsAttentionOverItsDequantizedValues). Both stay near the f32
// forward, as the cache type rounds: each stored value is within
// 2^-11 (f16) or 2^-9 (bf16) of itself relatively, and a Q8_0 value within d / 2 = max|x| / 254 of
// its block's largest magnitude (0.4 %); the output, a mix of rounded values and weights that
// rounded keys move by as little, moves by a like fraction of its scale: the bound is 5 times
// that fraction of the outputs' largest magnitude. A Q4_0 value is within d / 2 = max|x| / 16 of
// itself (6.25 %; only one of the sign opposite the block's max and within d / 2 of its magnitude,
// clamped to 7 d, is up to d away), so its bound is 5 / 16.
TEST(KVCacheAttention, AQuantizedCacheIsReadInPlaceAsTheDequantizedCacheWouldBe) {
  const AttentionConfig gqa{.dim = 64, .n_heads = 4, .n_kv_heads = 2, .head_dim = 32, .causal = true};
  const auto rope = [](const AttentionConfig& c) {
    return make_attention_position({.kind = PositionKind::rope, .max_len = 16, .head_dim = c.head_dim});
  };
  AttentionConfig nanochat = gqa;
  nanochat.qk_norm = true;
  AttentionConfig windowed = gqa;
  windowed.window = 4;
  const std::vector<std::tuple<const char*, AttentionConfig, std::shared_ptr<AttentionPosition>>> cases = {
      {"rope GQA", gqa, rope(gqa)},
      {"rope + QK-norm", nanochat, rope(nanochat)},
      {"rope, window 4", windowed, rope(windowed)},
      {"ALiBi", gqa, std::make_shared<AlibiBias>(4)},
      {"none", gqa, nullptr},
  };
  const std::vector<std::pair<QuantType, double>> types = {
      {QuantType::f16, 5 * 0x1p-11}, {QuantType::bf16, 5 * 0x1p-9}, {QuantType::q8_0, 5 / 254.0}, {QuantType::q4_0, 5 / 16.0}};
  for (const auto& [label, config, position] : cases) {
    for (const auto& [type, tolerance] : types) {
      const auto [cached, full] = cached_attention(config, position, type);
      const double rounding = max(abs(cached - full)).item();
      std::printf("  %-16s %-5s vs the f32 forward %.2e (outputs up to %.2f)\n", label, quant_type_name(type), rounding,
                  max(abs(full)).item());
      EXPECT_LE(rounding, tolerance * max(abs(full)).item()) << label << " " << quant_type_name(type);
      EXPECT_GT(rounding, 0.0) << label << " " << quant_type_name(type);  // the cache did round
    }
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
