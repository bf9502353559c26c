// scaled_dot_product_attention: the fused kernel equals the plain composition forward and backward
// (MHA, GQA, MQA, causal and not, masks of every kind, T = 1, Tq != Tk, T across tile borders,
// decoding's few-query kernel, strided inputs, dropout), f64 finite-difference gradients of the fused kernel, fully masked rows,
// errors, attention over a KV cache stored as f16, bf16, Q8_0 or Q4_0, and the fused kernel's memory at long T.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/cpu/attention/attention.h"  // the tile sizes, to choose lengths across tile borders
#include "support/attention_parity.h"
#include "support/testing.h"

namespace nf {
namespace {

using testing::random_leaf;
using testing::AttentionResult;
using testing::expect_fused_equals_plain;
using testing::kTile;
using testing::random_mask;
using testing::randn_leaf;
using testing::run_attention;

struct Geometry {
  const char* name;
  int64_t B, H, Hkv, Tq, Tk, D;
};

// MHA, GQA, MQA; T = 1; Tq != Tk both ways; lengths on, below and above the tile size.
const Geometry kGeometries[] = {
    {"mha", 2, 3, 3, kTile + 6, kTile + 6, 16},
    {"gqa", 1, 6, 2, 2 * kTile + 3, 2 * kTile + 3, 8},
    {"mqa", 2, 4, 1, 33, 150, 8},
    {"one_token", 2, 2, 2, 1, 1, 4},
    {"one_query_many_keys", 1, 4, 2, 1, kTile + 1, 8},
    {"cache_decode", 1, 2, 1, 5, kTile + 9, 8},
    {"more_queries_than_keys", 1, 2, 2, kTile + 10, 7, 8},
    {"exact_tiles", 1, 2, 2, 2 * kTile, 2 * kTile, 8},
    // decoding's kernel (ops/cpu/attention/attention_decode.h: f32, Tq x H / Hkv <= 16): head dims of 1, 2, 4
    // and 8 vector widths and one that is none, key counts off multiples of 4
    {"decode_gqa_d64", 2, 8, 2, 1, 133, 64},
    {"decode_mha_d128", 1, 3, 3, 2, 70, 128},
    {"decode_chunk_d32", 1, 4, 1, 3, 19, 32},
    {"decode_d16", 1, 2, 2, 1, 6, 16},
    {"decode_d24", 1, 2, 1, 1, 10, 24},
};

class FusedVsPlain : public ::testing::TestWithParam<Geometry> {
 protected:
  Tensor q_, k_, v_;
  void SetUp() override {
    const Geometry& g = GetParam();
    q_ = randn_leaf({g.B, g.H, g.Tq, g.D}, 1);
    k_ = randn_leaf({g.B, g.Hkv, g.Tk, g.D}, 2);
    v_ = randn_leaf({g.B, g.Hkv, g.Tk, g.D}, 3);
  }
};

TEST_P(FusedVsPlain, Unmasked) { expect_fused_equals_plain(q_, k_, v_, {}); }

TEST_P(FusedVsPlain, Causal) { expect_fused_equals_plain(q_, k_, v_, {.causal = true}); }

TEST_P(FusedVsPlain, KeyPaddingAndBoolMaskWithCausal) {
  const Geometry& g = GetParam();
  AttentionOptions options{.causal = true,
                           .mask = random_mask({g.H, g.Tq, g.Tk}, 4, 0.8),
                           .key_padding = random_mask({g.B, g.Tk}, 5, 0.7)};
  expect_fused_equals_plain(q_, k_, v_, options);
}

TEST_P(FusedVsPlain, AdditiveMaskWithGradient) {
  const Geometry& g = GetParam();
  AttentionOptions options{.mask = randn_leaf({g.B, 1, g.Tq, g.Tk}, 6), .scale = 0.3};
  expect_fused_equals_plain(q_, k_, v_, options);
}

TEST_P(FusedVsPlain, DropoutDrawsTheSameMask) {
  expect_fused_equals_plain(q_, k_, v_, {.causal = true, .dropout_p = 0.3}, 17);
}

TEST_P(FusedVsPlain, F64) {
  const Geometry& g = GetParam();
  const Tensor q = random_leaf({g.B, g.H, g.Tq, g.D}, 7), k = random_leaf({g.B, g.Hkv, g.Tk, g.D}, 8),
               v = random_leaf({g.B, g.Hkv, g.Tk, g.D}, 9);
  expect_fused_equals_plain(q, k, v, {.causal = true, .key_padding = random_mask({g.B, g.Tk}, 10, 0.8)});
}

INSTANTIATE_TEST_SUITE_P(Attention, FusedVsPlain, ::testing::ValuesIn(kGeometries),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Attention, StridedInputsAsAModuleProducesThem) {
  // q, k, v as (B, T, H, D) projections viewed (B, H, T, D): rows strided, not contiguous
  const Tensor q = randn_leaf({2, kTile + 3, 4, 8}, 11), k = randn_leaf({2, kTile + 3, 2, 8}, 12),
               v = randn_leaf({2, kTile + 3, 2, 8}, 13);
  std::vector<Tensor> outs, grads;
  for (AttentionKernel kernel : {AttentionKernel::plain, AttentionKernel::fused}) {
    for (const Tensor& t : {q, k, v}) t.zero_grad();
    const Tensor out = scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                                    {.causal = true, .kernel = kernel});
    out.backward(ones(out.shape()));
    outs.push_back(out.detach());
    for (const Tensor& t : {q, k, v}) grads.push_back(t.grad());
  }
  EXPECT_TENSOR_CLOSE(outs[1], outs[0], 1e-5, 1e-5);
  for (size_t i = 0; i < 3; ++i) EXPECT_TENSOR_CLOSE(grads[3 + i], grads[i], 1e-5, 1e-5);
}

TEST(Attention, ProjectionLayoutsCopyNothingForwardOrBackward) {
  // As a module uses it: (B, T, H, D) projections seen as (B, H, T, D), the output seen back as
  // (B, T, H * D). The fused output is a (B, T, H, D) buffer and the gradients keep their inputs'
  // order, so no step copies; the values equal the plain composition's.
  const int64_t B = 2, T = kTile + 3, H = 4, Hkv = 2, D = 8;
  const Tensor q = randn_leaf({B, T, H, D}, 21), k = randn_leaf({B, T, Hkv, D}, 22), v = randn_leaf({B, T, Hkv, D}, 23);
  Generator gen(24);
  const Tensor w = randn({B, T, H * D}, gen);
  std::vector<Tensor> results;
  for (AttentionKernel kernel : {AttentionKernel::plain, AttentionKernel::fused}) {
    for (const Tensor& t : {q, k, v}) t.zero_grad();
    const bool was_profiling = profile::enabled();
    profile::set_enabled(true);
    profile::reset();
    const Tensor out = scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                                    {.causal = true, .kernel = kernel});
    const Tensor y = out.transpose(1, 2).reshape({B, T, H * D});
    sum(y * w).backward();
    const std::vector<profile::Entry> ops = profile::entries();
    profile::set_enabled(was_profiling);
    if (kernel == AttentionKernel::fused) {
      EXPECT_TRUE(out.transpose(1, 2).is_contiguous());
      for (const auto& op : ops) EXPECT_EQ(op.name.find("copy"), std::string::npos) << op.name;
      for (const Tensor& t : {q, k, v}) EXPECT_TRUE(t.grad().is_contiguous());
    }
    results.insert(results.end(), {y.detach(), q.grad(), k.grad(), v.grad()});
  }
  for (size_t i = 0; i < 4; ++i) EXPECT_TENSOR_CLOSE(results[4 + i], results[i], 1e-5, 1e-5);
}

TEST(Attention, MatchesNaiveSoftmaxFormula) {
  // out_i = sum_j softmax_j(q_i . k_j / sqrt(D)) v_j, written out in f64 loops
  const Tensor q = random_leaf({1, 1, 3, 4}, 14), k = random_leaf({1, 1, 5, 4}, 15), v = random_leaf({1, 1, 5, 4}, 16);
  const Tensor out = scaled_dot_product_attention(q, k, v);
  for (int64_t i = 0; i < 3; ++i) {
    std::vector<double> w(5);
    double total = 0;
    for (int64_t j = 0; j < 5; ++j) {
      double s = 0;
      for (int64_t d = 0; d < 4; ++d) s += q.at({0, 0, i, d}) * k.at({0, 0, j, d});
      total += w[j] = std::exp(s / 2.0);
    }
    for (int64_t d = 0; d < 4; ++d) {
      double o = 0;
      for (int64_t j = 0; j < 5; ++j) o += w[j] / total * v.at({0, 0, j, d});
      EXPECT_NEAR(out.at({0, 0, i, d}), o, 1e-12);
    }
  }
}

// ---- f64 gradient checks of the fused kernel ----

TEST(AttentionGradcheck, CausalGqaAcrossTiles) {
  const Tensor q = random_leaf({1, 2, kTile + 5, 3}, 20), k = random_leaf({1, 1, kTile + 5, 3}, 21),
               v = random_leaf({1, 1, kTile + 5, 3}, 22);
  EXPECT_GRAD_OK([](const std::vector<Tensor>& x) { return scaled_dot_product_attention(x[0], x[1], x[2], {.causal = true}); },
                 {q, k, v});
}

TEST(AttentionGradcheck, MasksAndCrossAttention) {
  const Tensor q = random_leaf({2, 2, 4, 3}, 23), k = random_leaf({2, 2, 9, 3}, 24), v = random_leaf({2, 2, 9, 3}, 25);
  const Tensor bias = random_leaf({2, 1, 4, 9}, 26);
  const Tensor keep = random_mask({1, 2, 4, 9}, 27, 0.7), padding = random_mask({2, 9}, 28, 0.8);
  EXPECT_GRAD_OK(
      [&](const std::vector<Tensor>& x) {
        return scaled_dot_product_attention(x[0], x[1], x[2], {.key_padding = padding, .scale = 0.7}) +
               scaled_dot_product_attention(x[0], x[1], x[2], {.mask = keep}) +
               scaled_dot_product_attention(x[0], x[1], x[2], {.causal = true, .mask = x[3]});
      },
      {q, k, v, bias});
}

TEST(AttentionGradcheck, Dropout) {
  const Tensor q = random_leaf({1, 2, 6, 3}, 29), k = random_leaf({1, 2, 7, 3}, 30), v = random_leaf({1, 2, 7, 3}, 31);
  EXPECT_GRAD_OK(
      [](const std::vector<Tensor>& x) {
        Generator gen(5);  // the same mask at every evaluation
        return scaled_dot_product_attention(x[0], x[1], x[2], {.dropout_p = 0.4}, gen);
      },
      {q, k, v});
}

// ---- fully masked rows: zeros forward, zero gradient ----

TEST(Attention, FullyMaskedRowsGiveZerosAndNoGradient) {
  for (AttentionKernel kernel : {AttentionKernel::fused, AttentionKernel::plain}) {
    const Tensor q = randn_leaf({1, 2, 4, 8}, 32), k = randn_leaf({1, 2, 6, 8}, 33), v = randn_leaf({1, 2, 6, 8}, 34);
    Tensor keep = ones({4, 6}, DType::boolean);
    for (int64_t j = 0; j < 6; ++j) keep.set({2, j}, 0.0);  // query 2 sees nothing
    const AttentionResult r = run_attention(kernel, q, k, v, {.mask = keep, .kernel = kernel});
    for (int64_t h = 0; h < 2; ++h) {
      for (int64_t d = 0; d < 8; ++d) {
        EXPECT_EQ(r.out.at({0, h, 2, d}), 0.0);
        EXPECT_EQ(r.dq.at({0, h, 2, d}), 0.0);
      }
    }
    EXPECT_TRUE(std::isfinite(sum(r.dk).item()) && std::isfinite(sum(r.dv).item()));
  }
}

// ---- the weights ----

TEST(Attention, WithWeightsReturnsTheSoftmaxRows) {
  const Tensor q = randn_leaf({1, 2, 5, 4}, 35), k = randn_leaf({1, 1, 5, 4}, 36), v = randn_leaf({1, 1, 5, 4}, 37);
  const AttentionWithWeights r = scaled_dot_product_attention_with_weights(q, k, v, {.causal = true});
  EXPECT_EQ(r.weights.shape(), Shape({1, 2, 5, 5}));
  EXPECT_TENSOR_CLOSE(sum(r.weights, {-1}), ones({1, 2, 5}), 1e-6, 1e-6);
  EXPECT_EQ(r.weights.at({0, 1, 1, 2}), 0.0);  // causal: query 1 does not see key 2
  EXPECT_TENSOR_CLOSE(r.out, scaled_dot_product_attention(q, k, v, {.causal = true}), 1e-6, 1e-5);
}

// ---- errors ----

TEST(Attention, ErrorsNameShapesAndValues) {
  const Tensor q = zeros({2, 4, 5, 8}), k = zeros({2, 3, 6, 8}), v = zeros({2, 3, 6, 8});
  EXPECT_THROW_WITH(scaled_dot_product_attention(q, k, v), "scaled_dot_product_attention", "4 heads", "3 heads",
                    "(2, 4, 5, 8)", "(2, 3, 6, 8)");
  const Tensor k2 = zeros({2, 2, 6, 8});
  EXPECT_THROW_WITH(scaled_dot_product_attention(q, k2, zeros({2, 2, 7, 8})), "same shape", "(2, 2, 7, 8)");
  EXPECT_THROW_WITH(scaled_dot_product_attention(q, zeros({2, 2, 6, 4}), zeros({2, 2, 6, 4})), "head size",
                    "(2, 2, 6, 4)");
  EXPECT_THROW_WITH(scaled_dot_product_attention(zeros({4, 5, 8}), k2, k2), "4-D", "(4, 5, 8)");
  EXPECT_THROW_WITH(scaled_dot_product_attention(q, k2, k2, {.mask = zeros({3, 5, 6})}), "mask", "(3, 5, 6)",
                    "(2, 4, 5, 6)");
  EXPECT_THROW_WITH(scaled_dot_product_attention(q, k2, k2, {.mask = zeros({5, 6}, DType::i64)}), "mask", "i64");
  EXPECT_THROW_WITH(scaled_dot_product_attention(q, k2, k2, {.key_padding = ones({2, 5}, DType::boolean)}),
                    "key_padding", "(2, 6)", "(2, 5)");
  EXPECT_THROW_WITH(scaled_dot_product_attention(q, k2, k2, {.dropout_p = 1.0}), "dropout_p = 1");
  EXPECT_THROW_WITH(scaled_dot_product_attention(q, k2.to(DType::f64), k2), "f32", "f64");
}

// ---- over a KV cache's rows, of any type (ops/kv_storage.h) ----

// Decoding's kernel reads f32, f16, bf16, Q8_0 and Q4_0 rows where they are stored and equals
// attention over the same keys and values read back as f32, up to f32 rounding: a dequantised value
// d q (Q8_0) or d (q - 8) (Q4_0) is exact in f32 (an 11-bit d times an integer of at most 8 bits), so
// the two differ only in the order of the sums and in the block's d multiplying its sum instead of
// each value. A score's error is then at most D 2^-24 sum |q_i k_i| and, rounding errors being of
// random sign, about sqrt(D) 2^-24 of it: 5e-6 for D = 128 unit-normal rows once scaled by 1 /
// sqrt(D); the outputs, softmax-weighted means of unit-normal values, move by as little: hence 1e-5
// absolute and relative. Head dims of 1, 2, 4 blocks and 3 (no register-held path),
// GQA, MQA, a chunk of 3 queries, a sliding window, a cache with more columns and rows than are
// read, and a prefill-sized chunk (80 query rows per KV head) that attends over f32 rows in place
// and over the others dequantised (f64 rows, which decoding's kernel does not read, always).
TEST(Attention, OverAQuantizedCacheEqualsAttentionOverItsDequantizedValues) {
  const Geometry geometries[] = {
      {"decode_gqa_d64", 2, 8, 2, 1, 133, 64}, {"decode_mha_d128", 1, 3, 3, 2, 70, 128},
      {"decode_chunk_d32", 1, 4, 1, 3, 19, 32}, {"decode_d96", 1, 2, 1, 1, 10, 96},
      {"prefill_chunk_d32", 1, 4, 2, 40, 50, 32},
  };
  const AttentionOptions options[] = {{.causal = true}, {.causal = true, .window = 7}, {.scale = 0.3}};
  for (const QuantType type :
       {QuantType::f32, QuantType::f64, QuantType::f16, QuantType::bf16, QuantType::q8_0, QuantType::q4_0}) {
    for (const Geometry& g : geometries) {
      // the cache holds one row and 5 columns more than attention reads
      const KVStorage k(type, g.B + 1, g.Hkv, g.Tk + 5, g.D), v(type, g.B + 1, g.Hkv, g.Tk + 5, g.D);
      Generator gen(7);
      k.write(0, randn({g.B + 1, g.Hkv, g.Tk + 5, g.D}, gen));
      v.write(0, randn({g.B + 1, g.Hkv, g.Tk + 5, g.D}, gen));
      const Tensor q = randn({g.B, g.H, g.Tq, g.D}, gen);
      const Tensor keys = k.read(g.B, 0, g.Tk), values = v.read(g.B, 0, g.Tk);
      for (const AttentionOptions& o : options) {
        const Tensor got = scaled_dot_product_attention(q, k, v, g.Tk, o);
        const Tensor want = scaled_dot_product_attention(q, keys, values, o);
        EXPECT_TENSOR_CLOSE(got, want, 1e-5, 1e-5) << quant_type_name(type) << " " << g.name << " window " << o.window;
      }
    }
  }
  const KVStorage k(QuantType::q8_0, 1, 2, 8, 32);
  EXPECT_THROW_WITH(scaled_dot_product_attention(zeros({2, 4, 1, 32}), k, k, 8), "2 rows of 1", "(2, 4, 1, 32)");
  EXPECT_THROW_WITH(scaled_dot_product_attention(zeros({1, 4, 1, 32}), k, k, 9), "9 keys of a cache of 8 columns");
  EXPECT_THROW_WITH(scaled_dot_product_attention(zeros({1, 4, 1, 32}), k, k, 8, {.dropout_p = 0.1}), "no mask",
                    "dropout");
  EXPECT_THROW_WITH(KVStorage(QuantType::q8_0, 1, 2, 8, 48), "q8_0", "blocks of 32", "head_dim 48");
  EXPECT_THROW_WITH(KVStorage(QuantType::q4_0, 1, 2, 8, 48), "q4_0", "blocks of 32", "head_dim 48");
}

// Continuous batching's step: the rows of several caches (their own lengths, rows and types)
// attend in one call, each row exactly as in a call over its cache alone.
TEST(Attention, OverSeveralCachesEqualsEachCacheAlone) {
  struct Cache {
    QuantType type;
    int64_t rows, length;
  };
  const Cache shapes[] = {{QuantType::f16, 1, 37}, {QuantType::q8_0, 2, 5}, {QuantType::f32, 1, 130}, {QuantType::q4_0, 1, 1}};
  const int64_t H = 8, Hkv = 2, D = 64;
  for (const int64_t Tq : {1, 3}) {
    for (const AttentionOptions& o : {AttentionOptions{.causal = true}, AttentionOptions{.causal = true, .window = 4}}) {
      Generator gen(11);
      std::vector<KVStorage> keys, values;
      std::vector<CachedKV> caches;
      std::vector<Tensor> queries;
      for (const Cache& c : shapes) {
        keys.emplace_back(c.type, c.rows, Hkv, c.length + Tq + 3, D);
        values.emplace_back(c.type, c.rows, Hkv, c.length + Tq + 3, D);
        keys.back().write(0, randn({c.rows, Hkv, c.length + Tq + 3, D}, gen));
        values.back().write(0, randn({c.rows, Hkv, c.length + Tq + 3, D}, gen));
        queries.push_back(randn({c.rows, H, Tq, D}, gen));
      }
      for (size_t i = 0; i < keys.size(); ++i) caches.push_back({&keys[i], &values[i], shapes[i].length + Tq, shapes[i].rows});
      const Tensor together = scaled_dot_product_attention(cat(queries, 0), caches, o);
      int64_t row = 0;
      for (size_t i = 0; i < keys.size(); ++i) {
        const Tensor alone = scaled_dot_product_attention(queries[i], keys[i], values[i], caches[i].length, o);
        EXPECT_TENSOR_CLOSE(narrow(together, 0, row, shapes[i].rows), alone, 0.0, 0.0)
            << quant_type_name(shapes[i].type) << " cache " << i << ", Tq " << Tq << ", window " << o.window;
        row += shapes[i].rows;
      }
      // a chunk longer than decoding's rows: each cache through the fused kernel, still as alone
      if (Tq == 3) {
        const Tensor q = randn({5, H, 5, D}, gen);
        std::vector<CachedKV> longer = caches;
        for (CachedKV& c : longer) c.length += 2;
        const Tensor got = scaled_dot_product_attention(q, longer, o);
        EXPECT_TENSOR_CLOSE(narrow(got, 0, 1, 2),
                            scaled_dot_product_attention(narrow(q, 0, 1, 2), keys[1], values[1], longer[1].length, o), 0.0, 0.0);
      }
    }
  }
  KVStorage k(QuantType::f16, 1, 2, 8, 32);
  const CachedKV two[] = {{&k, &k, 8, 1}, {&k, &k, 4, 1}};
  EXPECT_THROW_WITH(scaled_dot_product_attention(zeros({3, 4, 1, 32}), two), "the caches hold 2 rows of q's 3");
  EXPECT_THROW_WITH(scaled_dot_product_attention(zeros({2, 4, 1, 32}), std::span<const CachedKV>{}), "no caches");
}

// ---- memory ----

size_t peak_of_forward_backward(AttentionKernel kernel) {
  const Shape shape{1, 8, 4096, 64};
  Tensor q = randn_leaf(shape, 40), k = randn_leaf(shape, 41), v = randn_leaf(shape, 42);
  const Tensor grad_out = ones(shape);
  memory::reset_peak();
  const size_t before = memory::current_bytes();
  scaled_dot_product_attention(q, k, v, {.causal = true, .kernel = kernel}).backward(grad_out);
  return memory::peak_bytes() - before;
}

TEST(Attention, FusedUsesFarLessMemoryAtLongT) {
  const size_t fused = peak_of_forward_backward(AttentionKernel::fused);
  const size_t plain = peak_of_forward_backward(AttentionKernel::plain);
  std::printf("peak bytes above inputs, (1, 8, 4096, 64) causal forward+backward: fused %zu, plain %zu\n", fused, plain);
  EXPECT_LT(fused * 4, plain);
  EXPECT_LT(fused, size_t{64} << 20);  // O(T D), no (T, T) matrix: 8 MiB per (1, 8, 4096, 64) f32 tensor
}

}  // namespace
}  // namespace nf
