// embedding: row lookup against a naive loop, its gradient with repeated ids (finite differences
// and exact sums), determinism of the backward across thread counts, and errors.
#include "support/testing.h"

namespace nf {
namespace {

using testing::random_leaf;

// out[n, :] = weight[ids[n], :] over the flattened ids, in f64
Tensor naive_embedding(const Tensor& weight, const Tensor& ids) {
  const std::vector<int64_t> flat = ids.to_vector<int64_t>();
  const int64_t D = weight.shape()[1];
  Tensor out = zeros({static_cast<int64_t>(flat.size()), D}, DType::f64);
  for (size_t n = 0; n < flat.size(); ++n)
    for (int64_t j = 0; j < D; ++j) out.set({static_cast<int64_t>(n), j}, weight.at({flat[n], j}));
  Shape shape = ids.shape();
  shape.push_back(D);
  return out.reshape(shape);
}

// dweight[v, :] = sum over n with ids[n] = v of grad[n, :], in f64
Tensor naive_embedding_backward(const Tensor& grad, const Tensor& ids, int64_t V) {
  const std::vector<int64_t> flat = ids.to_vector<int64_t>();
  const int64_t D = grad.shape().back();
  const Tensor g = grad.reshape({-1, D});
  Tensor out = zeros({V, D}, DType::f64);
  for (size_t n = 0; n < flat.size(); ++n)
    for (int64_t j = 0; j < D; ++j) out.set({flat[n], j}, out.at({flat[n], j}) + g.at({static_cast<int64_t>(n), j}));
  return out;
}

TEST(Embedding, LooksUpRowsForAnyIdShapeAndIdType) {
  Generator gen(1);
  Tensor weight = randn({10, 6}, gen);
  for (DType it : {DType::i64, DType::i32}) {
    Tensor ids = Tensor::of({3, 0, 9, 3, 7, 1}, {2, 3}, it);
    Tensor out = embedding(weight, ids);
    ASSERT_EQ(out.shape(), (Shape{2, 3, 6}));
    EXPECT_TENSOR_CLOSE(out, naive_embedding(weight, ids).to(DType::f32), 0, 0);
  }
  Tensor scalar_id = Tensor::of({4}, {}, DType::i64);
  EXPECT_TENSOR_CLOSE(embedding(weight, scalar_id), weight.select(0, 4), 0, 0);
  EXPECT_EQ(embedding(weight, Tensor::of({}, {2, 0}, DType::i64)).shape(), (Shape{2, 0, 6}));
}

TEST(Embedding, NonContiguousWeightAndIdsAndLargeLookups) {
  Generator gen(2);
  Tensor weight = randn({6, 10}, gen, DType::f64).t();  // (10, 6), transposed
  Tensor ids = randint(0, 10, {5, 4}, gen).t();           // (4, 5), transposed
  EXPECT_TENSOR_CLOSE(embedding(weight, ids), naive_embedding(weight, ids), 0, 0);
  Tensor big = randn({1000, 64}, gen);
  Tensor tokens = randint(0, 1000, {8, 256}, gen, DType::i32);
  EXPECT_TENSOR_CLOSE(embedding(big, tokens), naive_embedding(big, tokens).to(DType::f32), 0, 0);
}

TEST(Embedding, GradientWithRepeatedIds) {
  Tensor weight = random_leaf({5, 3}, 3);
  Tensor ids = Tensor::of({4, 1, 4, 4, 0, 1}, {3, 2}, DType::i64);  // rows 2 and 3 never used
  EXPECT_GRAD_OK([&](const std::vector<Tensor>& in) { return embedding(in[0], ids); }, {weight});
  Tensor wt = random_leaf({3, 5}, 4);
  EXPECT_GRAD_OK([&](const std::vector<Tensor>& in) { return embedding(in[0].t(), ids.t()); }, {wt});
}

TEST(Embedding, BackwardIsExactAndIndependentOfThreadCount) {
  Generator gen(5);
  const int64_t V = 1200, D = 96;  // enough rows for several threads
  Tensor weight = zeros({V, D}).set_requires_grad(true);
  Tensor ids = randint(0, 800, {64, 128}, gen);  // ~10 repeats per id; the last 400 rows unused
  Tensor upstream = randn({64, 128, D}, gen);
  const int saved = num_threads();
  std::vector<Tensor> grads;
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    weight.zero_grad();
    embedding(weight, ids).backward(upstream);
    grads.push_back(weight.grad());
  }
  set_num_threads(saved);
  EXPECT_TENSOR_CLOSE(grads[1], grads[0], 0, 0);  // bitwise equal
  EXPECT_TENSOR_CLOSE(grads[2], grads[0], 0, 0);
  // f32 sums of ~10 terms against an f64 reference
  EXPECT_TENSOR_CLOSE(grads[0], naive_embedding_backward(upstream, ids, V).to(DType::f32), 1e-5, 1e-5);
}

TEST(Embedding, ErrorsNameIdsAndRange) {
  Tensor weight = zeros({50, 8});
  EXPECT_THROW_WITH(embedding(weight, Tensor::of({1, 2, 3, 50}, {2, 2}, DType::i64)), "embedding", "index 50",
                    "[0, 50)", "(50, 8)", "(2, 2)");
  EXPECT_THROW_WITH(embedding(weight, Tensor::of({-1}, {1}, DType::i32)), "embedding", "index -1", "[0, 50)");
  EXPECT_THROW_WITH(embedding(zeros({50}), Tensor::of({1}, {1}, DType::i64)), "embedding", "2-D", "(50)");
  EXPECT_THROW_WITH(embedding(weight, Tensor::of({1}, {1})), "embedding", "f32", "i64");
}

}  // namespace
}  // namespace nf
