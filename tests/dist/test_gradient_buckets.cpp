// Gradient buckets (dist/gradient_buckets.h) on two ranks in one process (support/fake_communicator.h,
// one thread per rank):
// - buckets hold consecutive parameters, last first, up to the byte limit (one alone when larger);
// - when gradients become final in different orders on the two ranks, and when a parameter is
//   reached on one rank only, the ranks still start the same all-reduces in the same order, and
//   every gradient is the sum of the ranks' gradients;
// - a parameter no rank reached keeps no gradient; one reached only by an earlier micro-batch
//   (accumulation) contributes what it accumulated.
#include <functional>
#include <thread>

#include "nanoformer/autograd/grad_ready_hook.h"
#include "nanoformer/dist/gradient_buckets.h"
#include "nanoformer/nanoformer.h"
#include "support/fake_communicator.h"
#include "support/testing.h"

namespace nf {
namespace {

// Runs body(rank) on one thread per rank; rethrows the first exception a rank threw.
void on_each_rank(testing::FakeRanks& ranks, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> failures(static_cast<size_t>(ranks.size()));
  for (int r = 0; r < ranks.size(); ++r)
    threads.emplace_back([&, r] {
      try {
        body(r);
      } catch (...) {
        failures[static_cast<size_t>(r)] = std::current_exception();
      }
    });
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : failures)
    if (e) std::rethrow_exception(e);
}

// Four parameters of distinct sizes (so a mismatched pair of all-reduces shows), each a leaf.
struct Params {
  std::vector<Tensor> p;
  Params() {
    for (int64_t k = 0; k < 4; ++k) p.push_back(full({k + 2}, 0.5f).set_requires_grad(true));
  }
};

// loss = sum_k in `order` of sum(c_k p_k) with c_k = coefficient(rank, k): grad p_k = c_k.
float coefficient(int rank, size_t k) { return static_cast<float>(1 + rank * 10 + static_cast<int>(k)); }
Tensor weighted_sum(const Params& ps, int rank, const std::vector<size_t>& order) {
  Tensor loss;
  for (size_t k : order) {
    const Tensor term = sum(mul(ps.p[k], coefficient(rank, k)));
    loss = loss.defined() ? add(loss, term) : term;
  }
  return loss;
}

// The order in which the leaves' gradients become final in one backward of `loss`.
std::vector<size_t> ready_order(const Params& ps, const Tensor& loss) {
  std::vector<size_t> order;
  for (size_t k = 0; k < ps.p.size(); ++k) autograd::set_grad_ready_hook(ps.p[k], [&order, k] { order.push_back(k); });
  loss.backward();
  for (const Tensor& p : ps.p) {
    autograd::clear_grad_ready_hook(p);
    p.zero_grad();
  }
  return order;
}

TEST(GradientBuckets, HoldConsecutiveParametersLastFirstUpToTheLimit) {
  testing::FakeRanks ranks(2);
  std::vector<Tensor> p;
  for (int64_t n : {3, 5, 7, 2, 20}) p.push_back(zeros({n}).set_requires_grad(true));
  const dist::GradientBuckets buckets(p, ranks.rank(0), 8 * sizeof(float));
  ASSERT_EQ(buckets.num_buckets(), 4u);
  EXPECT_EQ(buckets.bucket_parameters(0), (std::vector<size_t>{4}));  // larger than the limit: alone
  EXPECT_EQ(buckets.bucket_parameters(1), (std::vector<size_t>{3}));  // 2 + 7 > 8
  EXPECT_EQ(buckets.bucket_parameters(2), (std::vector<size_t>{2}));  // 7 + 5 > 8
  EXPECT_EQ(buckets.bucket_parameters(3), (std::vector<size_t>{1, 0}));  // 5 + 3 = 8
  // one process: nothing to reduce
  EXPECT_EQ(dist::GradientBuckets(p, *dist::single_process(), 8).num_buckets(), 0u);
}

// Rank 0 sums its terms in the order 0 1 2 3, rank 1 in `rank1_order`; `bucket_values` floats per bucket.
void expect_sums_in_one_order(const std::vector<size_t>& rank1_order, int64_t bucket_bytes) {
  testing::FakeRanks ranks(2);
  std::vector<Params> params(2);
  const std::vector<std::vector<size_t>> orders = {{0, 1, 2, 3}, rank1_order};
  on_each_rank(ranks, [&](int r) {
    const Params& ps = params[static_cast<size_t>(r)];
    dist::GradientBuckets buckets(ps.p, ranks.rank(r), bucket_bytes);
    buckets.arm();
    weighted_sum(ps, r, orders[static_cast<size_t>(r)]).backward();
    buckets.finish();
  });
  EXPECT_TRUE(ranks.errors().empty()) << ranks.errors().front();
  EXPECT_EQ(ranks.started_by(0), ranks.started_by(1));
  for (int r = 0; r < 2; ++r)
    for (size_t k = 0; k < 4; ++k) {
      SCOPED_TRACE("rank " + std::to_string(r) + ", parameter " + std::to_string(k));
      float expected = 0;
      for (int from = 0; from < 2; ++from) {
        const auto& used = orders[static_cast<size_t>(from)];
        if (std::find(used.begin(), used.end(), k) != used.end()) expected += coefficient(from, k);
      }
      const Tensor g = params[static_cast<size_t>(r)].p[k].grad();
      ASSERT_TRUE(g.defined());
      EXPECT_TENSOR_CLOSE(g, full({static_cast<int64_t>(k) + 2}, expected), 0.0, 0.0);
    }
}

TEST(GradientBuckets, ReduceInOneOrderWhateverOrderGradientsArriveIn) {
  // the premise: the two ranks' gradients become final in different orders
  const Params probe;
  const auto forward_order = ready_order(probe, weighted_sum(probe, 0, {0, 1, 2, 3}));
  const auto reverse_order = ready_order(probe, weighted_sum(probe, 1, {3, 2, 1, 0}));
  ASSERT_NE(forward_order, reverse_order);
  expect_sums_in_one_order({3, 2, 1, 0}, sizeof(float));       // one parameter per bucket
  expect_sums_in_one_order({3, 2, 1, 0}, 7 * sizeof(float));   // two per bucket
}

TEST(GradientBuckets, AParameterOneRankDidNotReachContributesZeros) {
  // rank 1 never uses parameter 2 (an expert that got no tokens there): its bucket must still be
  // reduced in its place, not at the end
  const Params probe;
  const auto order = ready_order(probe, weighted_sum(probe, 1, {3, 1, 0}));
  ASSERT_EQ(order.size(), 4u) << "the hook of an unreachable leaf runs too";
  EXPECT_EQ(order.front(), 2u) << "an unreachable leaf is final as backward begins";
  expect_sums_in_one_order({3, 1, 0}, sizeof(float));
}

TEST(GradientBuckets, AParameterNoRankReachedKeepsNoGradient) {
  testing::FakeRanks ranks(2);
  std::vector<Params> params(2);
  on_each_rank(ranks, [&](int r) {
    const Params& ps = params[static_cast<size_t>(r)];
    dist::GradientBuckets buckets(ps.p, ranks.rank(r), sizeof(float));
    buckets.arm();
    weighted_sum(ps, r, r == 0 ? std::vector<size_t>{0, 3} : std::vector<size_t>{3, 0}).backward();
    buckets.finish();
  });
  EXPECT_TRUE(ranks.errors().empty());
  for (const Params& ps : params) {
    EXPECT_TRUE(ps.p[0].grad().defined());
    EXPECT_FALSE(ps.p[1].grad().defined()) << "an optimizer would step (decay) what one process leaves alone";
    EXPECT_FALSE(ps.p[2].grad().defined());
    EXPECT_TENSOR_CLOSE(ps.p[3].grad(), full({5}, coefficient(0, 3) + coefficient(1, 3)), 0.0, 0.0);
  }
}

TEST(GradientBuckets, AnEarlierMicroBatchsGradientIsReducedWhenTheLastDoesNotReachIt) {
  // accumulation: micro-batch 1 reaches parameters 0 and 1, micro-batch 2 (armed) only 1 on rank 0
  // and 0, 1 on rank 1
  testing::FakeRanks ranks(2);
  std::vector<Params> params(2);
  on_each_rank(ranks, [&](int r) {
    const Params& ps = params[static_cast<size_t>(r)];
    dist::GradientBuckets buckets(ps.p, ranks.rank(r), sizeof(float));
    weighted_sum(ps, r, {0, 1}).backward();
    buckets.arm();
    weighted_sum(ps, r, r == 0 ? std::vector<size_t>{1} : std::vector<size_t>{1, 0}).backward();
    buckets.finish();
  });
  EXPECT_TRUE(ranks.errors().empty());
  EXPECT_EQ(ranks.started_by(0), ranks.started_by(1));
  // p0: rank 0 once, rank 1 twice; p1: both twice
  const float p0 = coefficient(0, 0) + 2 * coefficient(1, 0), p1 = 2 * (coefficient(0, 1) + coefficient(1, 1));
  for (const Params& ps : params) {
    EXPECT_TENSOR_CLOSE(ps.p[0].grad(), full({2}, p0), 0.0, 0.0);
    EXPECT_TENSOR_CLOSE(ps.p[1].grad(), full({3}, p1), 0.0, 0.0);
    EXPECT_FALSE(ps.p[2].grad().defined());
  }
}

}  // namespace
}  // namespace nf
