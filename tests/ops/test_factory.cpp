// Factories: constants, ranges (as torch.arange) and eye; seeded random draws: reproducibility,
// stream offsets, independence from the thread count, distribution statistics within bounds
// derived from their standard errors, the Philox known-answer vectors, and errors.
#include <cmath>

#include "support/testing.h"

namespace nf {
namespace {

// ---- constants ----

TEST(Factory, ConstantsInEveryDtype) {
  for (DType dt : {DType::f32, DType::f64, DType::bf16, DType::f16, DType::i32, DType::i64}) {
    Tensor z = zeros({2, 3}, dt), o = ones({2, 3}, dt), f = full({2, 3}, 7, dt);
    EXPECT_EQ(z.shape(), (Shape{2, 3}));
    EXPECT_EQ(o.dtype(), dt);
    EXPECT_TRUE(f.is_contiguous());
    EXPECT_EQ(z.to_vector<double>(), std::vector<double>(6, 0.0)) << dtype_name(dt);
    EXPECT_EQ(o.to_vector<double>(), std::vector<double>(6, 1.0)) << dtype_name(dt);
    EXPECT_EQ(f.to_vector<double>(), std::vector<double>(6, 7.0)) << dtype_name(dt);
  }
  EXPECT_EQ(full({3}, 2.5, DType::f64).to_vector<double>(), (std::vector<double>{2.5, 2.5, 2.5}));
  EXPECT_EQ(full({2}, 1, DType::boolean).to_vector<int>(), (std::vector<int>{1, 1}));
  EXPECT_EQ(zeros({}).shape(), Shape{});
  EXPECT_EQ(zeros({}).numel(), 1);
  EXPECT_EQ(ones({0, 3}).numel(), 0);
  EXPECT_FALSE(zeros({2}).requires_grad());
}

TEST(Factory, LikeVariantsCopyShapeAndDtypeNotLayout) {
  Tensor x = zeros({3, 2}, DType::f64).t();  // (2, 3), non-contiguous
  for (const Tensor& t : {zeros_like(x), ones_like(x), full_like(x, -4.0)}) {
    EXPECT_EQ(t.shape(), (Shape{2, 3}));
    EXPECT_EQ(t.dtype(), DType::f64);
    EXPECT_TRUE(t.is_contiguous());
    EXPECT_FALSE(t.shares_storage_with(x));
  }
  EXPECT_EQ(full_like(x, -4.0).to_vector<double>(), std::vector<double>(6, -4.0));
  EXPECT_EQ(ones_like(Tensor::of({5, 6}, {2}, DType::i32)).to_vector<int32_t>(), (std::vector<int32_t>{1, 1}));
}

TEST(Factory, EmptyLikeKeepsTheMemoryOrderOfDenseTensors) {
  // a transposed view of a (2, 5, 3, 4) tensor: dense, so the result has its strides
  const Tensor bthd = zeros({2, 5, 3, 4});
  const Tensor view = bthd.transpose(1, 2);
  const Tensor like = empty_like(view);
  EXPECT_EQ(like.shape(), view.shape());
  EXPECT_EQ(like.strides(), view.strides());
  EXPECT_FALSE(like.shares_storage_with(view));
  EXPECT_TRUE(like.transpose(1, 2).is_contiguous());
  // size-1 dims with any stride do not break density
  const Tensor one = bthd.narrow(0, 0, 1).transpose(1, 2);
  EXPECT_EQ(empty_like(one).transpose(1, 2).strides(), contiguous_strides({1, 5, 3, 4}));
  // not dense (every other column): contiguous
  const Tensor stepped = zeros({4, 6}, DType::f64).slice(1, 0, 6, 2);
  const Tensor from_stepped = empty_like(stepped);
  EXPECT_TRUE(from_stepped.is_contiguous());
  EXPECT_EQ(from_stepped.dtype(), DType::f64);
  EXPECT_TRUE(empty_in_order({3, 0}, {1, 3}).is_contiguous());
  EXPECT_EQ(empty_in_order({}, {}).numel(), 1);
  EXPECT_THROW_WITH(empty_in_order({2, 3}, {1}), "empty_in_order", "1 strides for shape (2, 3)");
}

// ---- ranges ----

TEST(Arange, IntegerSteps) {
  EXPECT_EQ(arange(5).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(arange(5).dtype(), DType::i64);
  EXPECT_EQ(arange(2, 11, 3).to_vector<int64_t>(), (std::vector<int64_t>{2, 5, 8}));
  EXPECT_EQ(arange(0, 10, 3).to_vector<int64_t>(), (std::vector<int64_t>{0, 3, 6, 9}));
  EXPECT_EQ(arange(-2, 2).to_vector<int64_t>(), (std::vector<int64_t>{-2, -1, 0, 1}));
  EXPECT_EQ(arange(4, DType::i32).dtype(), DType::i32);
}

TEST(Arange, FloatingStepsFollowTorch) {
  // torch.arange(0, 1, 0.1) has 10 elements, element i = 0 + 0.1 i computed in double
  Tensor t = arange(0, 1, 0.1, DType::f32);
  ASSERT_EQ(t.shape(), (Shape{10}));
  for (int64_t i = 0; i < 10; ++i) {
    EXPECT_EQ(t.at({i}), static_cast<double>(static_cast<float>(0.1 * static_cast<double>(i))));
  }
  EXPECT_EQ(arange(1, 2.5, 0.5, DType::f64).to_vector<double>(), (std::vector<double>{1.0, 1.5, 2.0}));
  EXPECT_EQ(arange(0.5, 2.0, 0.5, DType::f64).to_vector<double>(), (std::vector<double>{0.5, 1.0, 1.5}));
  EXPECT_EQ(arange(0, 1.01, 0.25, DType::f64).to_vector<double>(), (std::vector<double>{0, 0.25, 0.5, 0.75, 1.0}));
}

TEST(Arange, NegativeStepsAndEmptyRanges) {
  EXPECT_EQ(arange(5, 0, -2).to_vector<int64_t>(), (std::vector<int64_t>{5, 3, 1}));
  EXPECT_EQ(arange(1, 0, -0.25, DType::f64).to_vector<double>(), (std::vector<double>{1.0, 0.75, 0.5, 0.25}));
  EXPECT_EQ(arange(3, 3).numel(), 0);
  EXPECT_EQ(arange(3, 3, -1).numel(), 0);
  EXPECT_EQ(arange(0).shape(), (Shape{0}));
}

TEST(Arange, Errors) {
  EXPECT_THROW_WITH(arange(0, 5, 0), "arange", "step", "non-zero");
  EXPECT_THROW_WITH(arange(5, 0), "arange", "wrong side", "5", "0");       // torch raises here too
  EXPECT_THROW_WITH(arange(0, 5, -1), "arange", "wrong side", "-1");
  EXPECT_THROW_WITH(arange(0, INFINITY, 1), "arange", "unsupported range");
  EXPECT_THROW_WITH(arange(0, 1, NAN), "arange", "unsupported range");
}

TEST(Eye, IdentityMatrices) {
  Tensor e = eye(3);
  EXPECT_EQ(e.shape(), (Shape{3, 3}));
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(e.at({i, j}), i == j ? 1.0 : 0.0);
  EXPECT_EQ(eye(2, DType::i64).to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 0, 1}));
  EXPECT_EQ(eye(0).shape(), (Shape{0, 0}));
}

// ---- Philox ----

// Random123's kat_vectors for philox4x32-10. Counter words c0..c3 map to counter_lo = c0 | c1 << 32
// and counter_hi = c2 | c3 << 32; key words k0, k1 to key = k0 | k1 << 32.
TEST(Philox, Random123KnownAnswers) {
  using Words = std::array<uint32_t, 4>;
  EXPECT_EQ(philox4x32(0, 0, 0), (Words{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32(~0ull, ~0ull, ~0ull), (Words{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32(0x85a308d3243f6a88ull, 0x0370734413198a2eull, 0x299f31d0a4093822ull),
            (Words{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

// ---- reproducibility ----

TEST(Random, SameSeedSameValuesDifferentSeedDifferentValues) {
  Generator a(42), b(42), c(43);
  const Tensor ra = randn({1000}, a), rb = randn({1000}, b), rc = randn({1000}, c);
  EXPECT_TENSOR_CLOSE(ra, rb, 0, 0);
  const std::vector<float> va = ra.to_vector<float>(), vc = rc.to_vector<float>();
  int equal = 0;
  for (size_t i = 0; i < va.size(); ++i) equal += va[i] == vc[i];
  EXPECT_LE(equal, 1);
  Generator d(42), e(42);
  EXPECT_TENSOR_CLOSE(randint(0, 100, {50}, d), randint(0, 100, {50}, e), 0, 0);
  EXPECT_TENSOR_CLOSE(bernoulli({50}, 0.5, d), bernoulli({50}, 0.5, e), 0, 0);
}

TEST(Random, DrawsAdvanceTheOffsetAndContinueOneStream) {
  Generator g(7);
  const Tensor first = rand({1000}, g);
  EXPECT_EQ(g.offset(), 1000u);
  const Tensor second = rand({1000}, g);
  EXPECT_EQ(g.offset(), 2000u);
  const std::vector<float> v1 = first.to_vector<float>(), v2 = second.to_vector<float>();
  int equal = 0;
  for (size_t i = 0; i < v1.size(); ++i) equal += v1[i] == v2[i];
  EXPECT_LE(equal, 1);  // a 24-bit uniform repeats by chance with probability 2^-24 per pair
  // two draws of 1000 are one draw of 2000 split in two; the offset alone locates the second
  Generator whole(7);
  const Tensor both = rand({2000}, whole);
  EXPECT_TENSOR_CLOSE(both.narrow(0, 0, 1000), first, 0, 0);
  EXPECT_TENSOR_CLOSE(both.narrow(0, 1000, 1000), second, 0, 0);
  Generator jumped(0);
  jumped.set_state(7, 1000);
  EXPECT_TENSOR_CLOSE(rand({1000}, jumped), second, 0, 0);
}

TEST(Random, NormalInPlaceDrawsWhatNormalReturns) {
  Generator a(11), b(11);
  const Tensor drawn = normal({37, 5}, 0.5, 2.0, a);
  const Tensor in_place = zeros({37, 5});
  normal_(in_place, 0.5, 2.0, b);
  EXPECT_TENSOR_CLOSE(in_place, drawn, 0, 0);
  EXPECT_EQ(b.offset(), a.offset());
  EXPECT_THROW_WITH(normal_(zeros({4, 3}).t(), 0.0, 1.0, b), "normal_", "contiguous", "(3, 4)");
  EXPECT_THROW_WITH(normal_(zeros({3}, DType::i64), 0.0, 1.0, b), "normal_", "i64", "floating");
  EXPECT_EQ(b.offset(), a.offset());  // failed draws consume nothing
}

TEST(Random, SkippedInitReservesTheSameCountersAndDrawsIntegersAsAlways) {
  Generator a(5), b(5);
  const Tensor untouched = full({64}, 7.0);
  {
    const SkipRandomInitGuard skip;
    (void)uniform({10, 3}, -1, 1, b);
    (void)randn({4}, b);
    normal_(untouched, 0.0, 1.0, b);
    EXPECT_TENSOR_CLOSE(randint(0, 100, {6}, b), (void(uniform({10, 3}, -1, 1, a)), void(randn({4}, a)),
                                                   void(normal({64}, 0.0, 1.0, a)), randint(0, 100, {6}, a)),
                        0, 0);
  }
  EXPECT_TENSOR_CLOSE(untouched, full({64}, 7.0), 0, 0);  // no values drawn under the guard
  EXPECT_EQ(b.offset(), a.offset());
  EXPECT_TENSOR_CLOSE(randn({8}, b), randn({8}, a), 0, 0);  // and after it, the same stream
}

TEST(Random, ResultsDoNotDependOnTheThreadCount) {
  const int saved = num_threads();
  std::vector<std::vector<Tensor>> runs;
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    Generator g(11);
    runs.push_back({rand({150000}, g), randn({150000}, g, DType::f64), randint(-5, 1000, {150000}, g),
                    bernoulli({150000}, 0.25, g), normal({150000}, 1.0, 3.0, g)});
  }
  set_num_threads(saved);
  for (size_t i = 0; i < runs[0].size(); ++i) EXPECT_TENSOR_CLOSE(runs[1][i], runs[0][i], 0, 0) << "draw " << i;
}

// ---- statistics: sample moments within 5 standard errors of the exact ones ----

constexpr int64_t kDraws = 200000;

struct Moments {
  double mean = 0, var = 0, min = INFINITY, max = -INFINITY;
};
Moments moments(const Tensor& t) {
  const std::vector<double> v = t.to_vector<double>();
  Moments m;
  for (double x : v) {
    m.mean += x;
    m.min = std::min(m.min, x);
    m.max = std::max(m.max, x);
  }
  m.mean /= static_cast<double>(v.size());
  for (double x : v) m.var += (x - m.mean) * (x - m.mean);
  m.var /= static_cast<double>(v.size() - 1);
  return m;
}

// Standard errors over n draws: of the mean, sqrt(var / n); of the sample variance,
// sqrt((mu4 - var^2) / n) with mu4 the fourth central moment.
double se_mean(double var) { return std::sqrt(var / kDraws); }
double se_var(double mu4, double var) { return std::sqrt((mu4 - var * var) / kDraws); }

TEST(RandomStatistics, Uniform) {
  Generator g(100);
  for (DType dt : {DType::f32, DType::f64}) {
    const Moments m = moments(rand({kDraws}, g, dt));
    EXPECT_GE(m.min, 0.0);
    EXPECT_LT(m.max, 1.0);
    // U(0, 1): var 1/12, mu4 1/80
    EXPECT_NEAR(m.mean, 0.5, 5 * se_mean(1.0 / 12));
    EXPECT_NEAR(m.var, 1.0 / 12, 5 * se_var(1.0 / 80, 1.0 / 12));
  }
  // U(-2, 3): width w = 5, var w^2/12, mu4 w^4/80
  const Moments m = moments(uniform({kDraws}, -2, 3, g, DType::f64));
  EXPECT_GE(m.min, -2.0);
  EXPECT_LT(m.max, 3.0);
  EXPECT_NEAR(m.mean, 0.5, 5 * se_mean(25.0 / 12));
  EXPECT_NEAR(m.var, 25.0 / 12, 5 * se_var(625.0 / 80, 25.0 / 12));
}

TEST(RandomStatistics, Normal) {
  Generator g(101);
  for (DType dt : {DType::f32, DType::f64}) {
    const Tensor z = randn({kDraws}, g, dt);
    const Moments m = moments(z);
    // N(0, 1): var 1, mu4 3
    EXPECT_NEAR(m.mean, 0.0, 5 * se_mean(1.0));
    EXPECT_NEAR(m.var, 1.0, 5 * se_var(3.0, 1.0));
    // the shape, not just two moments: P(|z| < 1) = erf(1/sqrt 2) = 0.682689...
    const double p = std::erf(1.0 / std::sqrt(2.0));
    int64_t inside = 0;
    for (double x : z.to_vector<double>()) inside += std::fabs(x) < 1.0;
    EXPECT_NEAR(static_cast<double>(inside) / kDraws, p, 5 * se_mean(p * (1 - p)));
  }
  // N(3, 2^2): var 4, mu4 3 * 16
  const Moments m = moments(normal({kDraws}, 3.0, 2.0, g, DType::f64));
  EXPECT_NEAR(m.mean, 3.0, 5 * se_mean(4.0));
  EXPECT_NEAR(m.var, 4.0, 5 * se_var(48.0, 4.0));
}

TEST(RandomStatistics, Bernoulli) {
  Generator g(102);
  for (double p : {0.3, 0.5, 0.97}) {
    const Tensor b = bernoulli({kDraws}, p, g);
    const Moments m = moments(b);
    EXPECT_EQ(m.min, 0.0);
    EXPECT_EQ(m.max, 1.0);
    for (float x : b.to_vector<float>()) ASSERT_TRUE(x == 0.0f || x == 1.0f);
    EXPECT_NEAR(m.mean, p, 5 * se_mean(p * (1 - p)));
  }
  EXPECT_EQ(moments(bernoulli({1000}, 0.0, g)).max, 0.0);
  EXPECT_EQ(moments(bernoulli({1000}, 1.0, g)).min, 1.0);
  EXPECT_EQ(bernoulli({4}, 0.5, g, DType::f64).dtype(), DType::f64);
}

TEST(RandomStatistics, RandintCoversItsRangeEvenly) {
  Generator g(103);
  for (DType dt : {DType::i64, DType::i32}) {
    const Tensor r = randint(-3, 4, {kDraws}, g, dt);
    EXPECT_EQ(r.dtype(), dt);
    // each of the k = 7 values: count ~ Binomial(n, 1/7)
    std::vector<int64_t> counts(7, 0);
    for (int64_t v : r.to_vector<int64_t>()) {
      ASSERT_TRUE(v >= -3 && v < 4) << v;
      ++counts[static_cast<size_t>(v + 3)];
    }
    const double p = 1.0 / 7, expected = kDraws * p, sd = std::sqrt(kDraws * p * (1 - p));
    for (int64_t c : counts) EXPECT_NEAR(static_cast<double>(c), expected, 5 * sd);
  }
  // a wide range: uniform over [0, 2^40), var ~ w^2 / 12
  const double w = std::ldexp(1.0, 40);
  const Moments m = moments(randint(0, int64_t{1} << 40, {kDraws}, g));
  EXPECT_GE(m.min, 0.0);
  EXPECT_LT(m.max, w);
  EXPECT_NEAR(m.mean, w / 2, 5 * se_mean(w * w / 12));
  EXPECT_EQ(randint(5, 6, {10}, g).to_vector<int64_t>(), std::vector<int64_t>(10, 5));
}

TEST(Random, Errors) {
  Generator g(1);
  EXPECT_THROW_WITH(randint(5, 5, {3}, g), "randint", "empty range", "[5, 5)");
  EXPECT_THROW_WITH(randint(5, 2, {3}, g), "randint", "empty range", "[5, 2)");
  EXPECT_THROW_WITH(randint(0, 5, {3}, g, DType::f32), "randint", "f32");
  EXPECT_THROW_WITH(bernoulli({3}, -0.1, g), "bernoulli", "-0.1", "[0, 1]");
  EXPECT_THROW_WITH(bernoulli({3}, 1.5, g), "bernoulli", "1.5", "[0, 1]");
  EXPECT_THROW_WITH(bernoulli({3}, NAN, g), "bernoulli", "[0, 1]");
  EXPECT_THROW_WITH(normal({3}, 0.0, -1.0, g), "normal", "std", "-1");
  EXPECT_THROW_WITH(uniform({3}, 2.0, 1.0, g), "uniform", "2", "1");
  EXPECT_THROW_WITH(rand({3}, g, DType::i64), "i64", "floating");
  EXPECT_EQ(g.offset(), 0u);  // failed draws consume nothing
}

}  // namespace
}  // namespace nf
