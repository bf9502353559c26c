// cat, stack, split and chunk against naive element loops, their gradients against finite
// differences (including non-contiguous inputs and pieces whose gradients accumulate), and errors.
#include "support/testing.h"

namespace nf {
namespace {

using testing::for_each_index;

using testing::random_leaf;
using Fn = autograd::TensorFn;


// out[.., j, ..] = inputs[i][.., j - offset_i, ..] for the input i whose range along dim holds j, in f64
Tensor naive_cat(const std::vector<Tensor>& inputs, int64_t dim) {
  Shape shape = inputs[0].shape();
  shape[dim] = 0;
  for (const Tensor& t : inputs) shape[dim] += t.shape()[dim];
  Tensor out = zeros(shape, DType::f64);
  for_each_index(shape, [&](const std::vector<int64_t>& idx) {
    std::vector<int64_t> src = idx;
    size_t i = 0;
    while (src[dim] >= inputs[i].shape()[dim]) src[dim] -= inputs[i++].shape()[dim];
    out.set(idx, inputs[i].at(src));
  });
  return out;
}

Tensor randn64(const Shape& shape, uint64_t seed) {
  Generator gen(seed);
  return randn(shape, gen, DType::f64);
}

TEST(Cat, MatchesNaiveAlongEveryDim) {
  for (int64_t dim = 0; dim < 3; ++dim) {
    Shape a{2, 3, 4}, b{2, 3, 4}, c{2, 3, 4};
    b[dim] = 1;
    c[dim] = 5;
    std::vector<Tensor> in{randn64(a, 1), randn64(b, 2), randn64(c, 3)};
    EXPECT_TENSOR_CLOSE(cat(in, dim), naive_cat(in, dim), 0, 0);
    EXPECT_TENSOR_CLOSE(cat(in, dim - 3), naive_cat(in, dim), 0, 0);  // negative dim
  }
}

TEST(Cat, NonContiguousMixedLayoutsAndEmptyPieces) {
  Tensor a = randn64({4, 3}, 4).t();                  // (3, 4) transposed
  Tensor b = randn64({3, 10}, 5).slice(1, 1, 9, 2);   // (3, 4) strided
  Tensor c = randn64({3, 2}, 6);
  Tensor empty = zeros({3, 0}, DType::f64);
  ASSERT_FALSE(a.is_contiguous());
  ASSERT_FALSE(b.is_contiguous());
  std::vector<Tensor> in{a, empty, b, c};
  EXPECT_TENSOR_CLOSE(cat(in, 1), naive_cat(in, 1), 0, 0);
  EXPECT_TENSOR_CLOSE(cat({a.contiguous(), b}, 0), naive_cat({a, b}, 0), 0, 0);
  EXPECT_EQ(cat({empty, empty}, 1).shape(), (Shape{3, 0}));
}

TEST(Cat, LargeInputsRunInParallelAndKeepOtherDtypes) {
  Tensor a = randn64({64, 300, 8}, 7), b = randn64({64, 200, 8}, 8);
  Tensor out = cat({a, b}, 1);
  EXPECT_TENSOR_CLOSE(out.narrow(1, 0, 300), a, 0, 0);
  EXPECT_TENSOR_CLOSE(out.narrow(1, 300, 200), b, 0, 0);
  Tensor rows = cat({a, b.narrow(1, 0, 150), a}, 1);  // threads split rows mid-block
  EXPECT_TENSOR_CLOSE(rows, naive_cat({a, b.narrow(1, 0, 150), a}, 1), 0, 0);
  Tensor flat = cat({a.reshape({-1}), b.reshape({-1})}, 0);  // one outer row split across threads
  EXPECT_TENSOR_CLOSE(flat.narrow(0, 0, a.numel()), a.reshape({-1}), 0, 0);
  EXPECT_TENSOR_CLOSE(flat.narrow(0, a.numel(), b.numel()), b.reshape({-1}), 0, 0);
  Tensor ids = cat({Tensor::of({1, 2}, {2}, DType::i64), Tensor::of({7}, {1}, DType::i64)}, 0);
  EXPECT_EQ(ids.dtype(), DType::i64);
  EXPECT_EQ(ids.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 7}));
  Tensor mask = cat({Tensor::of({1, 0}, {1, 2}, DType::boolean), Tensor::of({0, 1}, {1, 2}, DType::boolean)}, 0);
  EXPECT_EQ(mask.to_vector<int>(), (std::vector<int>{1, 0, 0, 1}));
}

TEST(Cat, GradientsSliceTheUpstreamGradient) {
  Tensor a = random_leaf({2, 3}, 10), b = random_leaf({4, 2}, 11), c = random_leaf({2, 1}, 12);
  // b enters transposed (non-contiguous); c is used twice, so its gradients add up
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return cat({in[0], in[1].t(), in[2], in[2]}, 1); }, {a, b, c});
  Tensor d = random_leaf({1, 3}, 13);
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return cat({in[0], in[1]}, 0); }, {a, d});
  // only some inputs require grad
  Tensor constant = randn64({2, 3}, 14);
  EXPECT_GRAD_OK([&](const std::vector<Tensor>& in) { return cat({constant, in[0]}, 0); }, {a});
}

TEST(Cat, ErrorsNameOpShapesAndDims) {
  EXPECT_THROW_WITH(cat({}, 0), "cat", "non-empty");
  EXPECT_THROW_WITH(cat({zeros({2, 3}), zeros({4, 5})}, 0), "cat", "(2, 3)", "(4, 5)", "dim 0");
  EXPECT_THROW_WITH(cat({zeros({2, 3}), zeros({2, 3, 1})}, 1), "cat", "(2, 3)", "(2, 3, 1)");
  EXPECT_THROW_WITH(cat({zeros({2, 3}), zeros({2, 3}, DType::f64)}, 0), "cat", "f32", "f64");
  EXPECT_THROW_WITH(cat({zeros({2, 3}), zeros({2, 3})}, 2), "cat", "dim 2");
  EXPECT_THROW_WITH(cat({zeros({}), zeros({})}, 0), "cat", "zero-dimensional");
  EXPECT_THROW_WITH(cat({zeros({2}), Tensor()}, 0), "cat", "tensor 1", "undefined");
}

TEST(Stack, MatchesNaiveAtEveryPosition) {
  Tensor a = randn64({2, 3}, 20), b = randn64({2, 3}, 21), c = randn64({3, 2}, 22).t();
  for (int64_t dim = 0; dim <= 2; ++dim) {
    Tensor s = stack({a, b, c}, dim);
    Shape expected{2, 3};
    expected.insert(expected.begin() + dim, 3);
    ASSERT_EQ(s.shape(), expected);
    for_each_index(expected, [&](const std::vector<int64_t>& idx) {
      std::vector<int64_t> src = idx;
      const int64_t which = src[dim];
      src.erase(src.begin() + dim);
      const Tensor& t = which == 0 ? a : which == 1 ? b : c;
      EXPECT_EQ(s.at(idx), t.at(src));
    });
  }
  EXPECT_EQ(stack({a, b}, -1).shape(), (Shape{2, 3, 2}));
}

TEST(Stack, GradientsAndErrors) {
  Tensor a = random_leaf({2, 3}, 23), b = random_leaf({3, 2}, 24);
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return stack({in[0], in[1].t(), in[0]}, 1); }, {a, b});
  EXPECT_THROW_WITH(stack({zeros({2, 3}), zeros({3, 2})}, 0), "stack", "(2, 3)", "(3, 2)");
  EXPECT_THROW_WITH(stack({zeros({2, 3}), zeros({2, 3})}, 3), "stack", "dim 3");
  EXPECT_THROW_WITH(stack({}, 0), "stack", "non-empty");
  EXPECT_THROW_WITH(stack({zeros({2}), zeros({2}, DType::i64)}, 0), "stack", "f32", "i64");
}

std::vector<int64_t> sizes_along(const std::vector<Tensor>& pieces, int64_t dim) {
  std::vector<int64_t> sizes;
  for (const Tensor& p : pieces) sizes.push_back(p.shape()[dim]);
  return sizes;
}

// Every piece is a view of x holding x's elements from its offset on.
void expect_views_of(const Tensor& x, const std::vector<Tensor>& pieces, int64_t dim) {
  int64_t offset = 0;
  for (const Tensor& p : pieces) {
    EXPECT_TRUE(p.numel() == 0 || p.shares_storage_with(x));
    for_each_index(p.shape(), [&](const std::vector<int64_t>& idx) {
      std::vector<int64_t> src = idx;
      src[dim] += offset;
      EXPECT_EQ(p.at(idx), x.at(src));
    });
    offset += p.shape()[dim];
  }
  EXPECT_EQ(offset, x.shape()[dim]);
}

TEST(Split, BySizeLeavesASmallerLastPiece) {
  Tensor x = randn64({3, 10}, 30);
  auto pieces = split(x, 4, 1);
  EXPECT_EQ(sizes_along(pieces, 1), (std::vector<int64_t>{4, 4, 2}));
  expect_views_of(x, pieces, 1);
  EXPECT_EQ(sizes_along(split(x, 5, -1), 1), (std::vector<int64_t>{5, 5}));
  EXPECT_EQ(sizes_along(split(x, 20, 1), 1), (std::vector<int64_t>{10}));
  EXPECT_EQ(sizes_along(split(x, 1, 0), 0), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(sizes_along(split(zeros({0, 2}), 3, 0), 0), (std::vector<int64_t>{0}));  // as torch.split
  Tensor t = randn64({10, 3}, 31).t();  // non-contiguous input
  expect_views_of(t, split(t, 3, 1), 1);
}

TEST(Split, BySizesListIncludingEmptyPieces) {
  Tensor x = randn64({6, 2}, 32);
  auto pieces = split(x, std::vector<int64_t>{1, 0, 3, 2}, 0);
  EXPECT_EQ(sizes_along(pieces, 0), (std::vector<int64_t>{1, 0, 3, 2}));
  expect_views_of(x, pieces, 0);
}

TEST(Split, Errors) {
  EXPECT_THROW_WITH(split(zeros({4, 6}), std::vector<int64_t>{2, 3}, 1), "split", "(2, 3)", "sum to 5", "(4, 6)", "6");
  EXPECT_THROW_WITH(split(zeros({4, 6}), std::vector<int64_t>{7, -1}, 1), "split", "negative", "(7, -1)");
  EXPECT_THROW_WITH(split(zeros({4, 6}), 0, 1), "split", "split_size", "(4, 6)");
  EXPECT_THROW_WITH(split(zeros({4, 6}), 2, 2), "split", "dim 2");
  EXPECT_THROW_WITH(split(zeros({}), 1, 0), "split", "zero-dimensional");
}

TEST(Chunk, FollowsTorchChunkSizes) {
  auto sizes = [](int64_t n, int64_t chunks) { return sizes_along(chunk(zeros({2, n}), chunks, 1), 1); };
  EXPECT_EQ(sizes(5, 4), (std::vector<int64_t>{2, 2, 1}));
  EXPECT_EQ(sizes(6, 4), (std::vector<int64_t>{2, 2, 2}));  // fewer chunks than asked
  EXPECT_EQ(sizes(10, 3), (std::vector<int64_t>{4, 4, 2}));
  EXPECT_EQ(sizes(9, 3), (std::vector<int64_t>{3, 3, 3}));
  EXPECT_EQ(sizes(2, 5), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(sizes(0, 3), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(sizes(7, 1), (std::vector<int64_t>{7}));
  Tensor x = randn64({7, 3}, 33);
  expect_views_of(x, chunk(x, 3, 0), 0);
  EXPECT_THROW_WITH(chunk(zeros({2, 3}), 0, 1), "chunk", "chunks", "(2, 3)");
  EXPECT_THROW_WITH(chunk(zeros({2, 3}), 2, -3), "chunk", "dim -3");
}

TEST(Split, GradientsOfSeveralPiecesAccumulateIntoTheInput) {
  Tensor x = random_leaf({6, 4}, 40);
  // pieces used in a different order, one twice, one not at all
  EXPECT_GRAD_OK(
      [](const std::vector<Tensor>& in) {
        auto p = split(in[0], 2, 0);
        return cat({p[2] * 2.0, p[0], p[0] * p[2]}, 0);
      },
      {x});
  EXPECT_GRAD_OK(
      [](const std::vector<Tensor>& in) {
        auto p = chunk(in[0].t(), 3, 1);  // (4, 6) non-contiguous, three (4, 2) pieces
        return p[0] * p[1] + p[1];
      },
      {x});

  // exact values: d/dx [sum(a) + 2 sum(a) + 3 sum(b)] over pieces a = rows 0-1 and b = rows 4-5
  Tensor y = zeros({6, 4}, DType::f64).set_requires_grad(true);
  auto p = split(y, std::vector<int64_t>{2, 2, 2}, 0);
  Tensor loss = sum(p[0]) + sum(p[0] * 2.0) + sum(p[2] * 3.0);
  loss.backward();
  for_each_index({6, 4}, [&](const std::vector<int64_t>& idx) {
    EXPECT_EQ(y.grad().at(idx), idx[0] < 2 ? 3.0 : idx[0] < 4 ? 0.0 : 3.0) << shape_str(idx);
  });
}

}  // namespace
}  // namespace nf
