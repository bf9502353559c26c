// index_add and topk, the two ops Mixture-of-Experts routing is built from: forward against naive
// loops, gradients against finite differences, errors.
#include <cmath>

#include "nanoformer/ops/topk.h"
#include "support/testing.h"

namespace nf {
namespace {

using testing::for_each_index;
using testing::random_leaf;

// out = x; out[.., index[k], ..] += src[.., k, ..], in f64
Tensor naive_index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  Tensor out = x.to(DType::f64).clone();
  for_each_index(src.shape(), [&](const std::vector<int64_t>& p) {
    std::vector<int64_t> dst = p;
    dst[dim] = static_cast<int64_t>(index.at({p[dim]}));
    out.set(dst, out.at(dst) + src.at(p));
  });
  return out;
}

TEST(IndexAdd, MatchesNaiveAlongEveryDimWithRepeats) {
  Tensor x = random_leaf({3, 4, 5}, 1);
  for (int64_t dim = 0; dim < 3; ++dim) {
    Tensor index = Tensor::of({2, 0, 2, 1}, {4}, DType::i64);
    Shape s = x.shape();
    s[dim] = 4;
    Tensor src = random_leaf(s, 2 + dim);
    EXPECT_TENSOR_CLOSE(index_add(x, dim, index, src), naive_index_add(x, dim, index, src), 1e-12, 0);
  }
}

TEST(IndexAdd, GradientsOfInputAndSource) {
  Tensor x = random_leaf({5, 3}, 3), src = random_leaf({4, 3}, 4);
  Tensor index = Tensor::of({4, 1, 4, 0}, {4}, DType::i32);
  EXPECT_GRAD_OK([&](const std::vector<Tensor>& in) { return index_add(in[0], 0, index, in[1]); }, {x, src});
  Tensor repeats = Tensor::of({2, 0, 2}, {3}, DType::i64);  // along dim 1, from a transposed source
  EXPECT_GRAD_OK([&](const std::vector<Tensor>& in) { return index_add(in[0], 1, repeats, in[1].t()); },
                 {random_leaf({4, 3}, 6), random_leaf({3, 4}, 5)});
}

TEST(IndexAdd, Errors) {
  Tensor x = zeros({4, 3});
  EXPECT_THROW_WITH(index_add(x, 0, Tensor::of({0, 4}, {2}, DType::i64), zeros({2, 3})), "index_add", "index 4",
                    "[0, 4)");
  EXPECT_THROW_WITH(index_add(x, 0, Tensor::of({0, 1}, {2}, DType::i64), zeros({3, 3})), "index_add", "(3, 3)",
                    "(2, 3)");
  EXPECT_THROW_WITH(index_add(x, 0, Tensor::of({0, 1}, {2}, DType::i64), zeros({2, 3}, DType::f64)), "index_add",
                    "f64");
}

TEST(TopK, LargestFirstWithTiesToLowerIndex) {
  Tensor x = Tensor::of({0.5, 2.0, -1.0, 2.0, 3.0, 0.0, 1.0, 1.0}, {2, 4});
  TopK r = topk(x, 2);
  EXPECT_EQ(r.indices.to_vector<int64_t>(), (std::vector<int64_t>{1, 3, 0, 2}));
  EXPECT_TENSOR_CLOSE(r.values, Tensor::of({2.0, 2.0, 3.0, 1.0}, {2, 2}), 0, 0);
  Tensor nan = Tensor::of({1.0, std::nan(""), 2.0}, {3});
  EXPECT_EQ(topk(nan, 2).indices.to_vector<int64_t>(), (std::vector<int64_t>{1, 2}));
}

TEST(TopK, MatchesFullSortAlongEveryDim) {
  Tensor x = random_leaf({4, 6, 5}, 7);
  for (int64_t dim = 0; dim < 3; ++dim) {
    const int64_t k = x.size(dim) - 1;
    TopK r = topk(x, k, dim);
    Shape s = x.shape();
    s[dim] = k;
    ASSERT_EQ(r.values.shape(), s);
    for_each_index(s, [&](const std::vector<int64_t>& p) {
      std::vector<int64_t> q = p;
      // the j-th value is the one with exactly j larger entries along dim (values are distinct)
      int64_t larger = 0;
      for (int64_t i = 0; i < x.size(dim); ++i) {
        q[dim] = i;
        larger += x.at(q) > r.values.at(p);
      }
      EXPECT_EQ(larger, p[dim]);
      q[dim] = static_cast<int64_t>(r.indices.at(p));
      EXPECT_EQ(x.at(q), r.values.at(p));
    });
  }
}

TEST(TopK, GradientReachesSelectedPositionsOnly) {
  Tensor x = random_leaf({3, 6}, 8);
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return topk(in[0], 3).values; }, {x});
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return topk(in[0].t(), 2, 0).values; }, {random_leaf({5, 4}, 9)});
}

TEST(TopK, Errors) {
  EXPECT_THROW_WITH(topk(zeros({2, 3}), 4), "topk", "k 4", "(2, 3)");
  EXPECT_THROW_WITH(topk(zeros({2, 3}, DType::i64), 1), "topk", "i64");
}

}  // namespace
}  // namespace nf
