// index_select, gather and scatter_add against naive element loops, their gradients against finite
// differences (repeated indices, non-contiguous inputs), and their errors.
#include "support/testing.h"

namespace nf {
namespace {

using testing::for_each_index;

using testing::random_leaf;


Tensor randn64(const Shape& shape, uint64_t seed) {
  Generator gen(seed);
  return randn(shape, gen, DType::f64);
}

Tensor ids(const std::vector<double>& values, const Shape& shape, DType dtype = DType::i64) {
  return Tensor::of(values, shape, dtype);
}

// out[.., k, ..] = x[.., index[k], ..], in f64
Tensor naive_index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  Shape shape = x.shape();
  shape[dim] = index.numel();
  Tensor out = zeros(shape, DType::f64);
  for_each_index(shape, [&](const std::vector<int64_t>& p) {
    std::vector<int64_t> src = p;
    src[dim] = static_cast<int64_t>(index.at({p[dim]}));
    out.set(p, x.at(src));
  });
  return out;
}

// out[p] = x[p with p[dim] := index[p]], in f64
Tensor naive_gather(const Tensor& x, int64_t dim, const Tensor& index) {
  Tensor out = zeros(index.shape(), DType::f64);
  for_each_index(index.shape(), [&](const std::vector<int64_t>& p) {
    std::vector<int64_t> src = p;
    src[dim] = static_cast<int64_t>(index.at(p));
    out.set(p, x.at(src));
  });
  return out;
}

// out = x; out[p with p[dim] := index[p]] += src[p] for p over index.shape, in f64
Tensor naive_scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  Tensor out = x.to(DType::f64).clone();
  for_each_index(index.shape(), [&](const std::vector<int64_t>& p) {
    std::vector<int64_t> dst = p;
    dst[dim] = static_cast<int64_t>(index.at(p));
    out.set(dst, out.at(dst) + src.at(p));
  });
  return out;
}

TEST(IndexSelect, MatchesNaiveAlongEveryDimWithRepeats) {
  Tensor x = randn64({3, 4, 5}, 1);
  for (int64_t dim = 0; dim < 3; ++dim) {
    for (DType it : {DType::i64, DType::i32}) {
      Tensor index = ids({2, 0, 2, 1, 2}, {5}, it);
      EXPECT_TENSOR_CLOSE(index_select(x, dim, index), naive_index_select(x, dim, index), 0, 0);
    }
  }
  Tensor index = ids({1, 1}, {2});
  EXPECT_TENSOR_CLOSE(index_select(x, -1, index), naive_index_select(x, 2, index), 0, 0);
  EXPECT_EQ(index_select(x, 1, ids({}, {0})).shape(), (Shape{3, 0, 5}));
}

TEST(IndexSelect, NonContiguousInputsAndOtherDtypes) {
  Tensor x = randn64({5, 4, 3}, 2).permute({2, 0, 1});  // (3, 5, 4)
  ASSERT_FALSE(x.is_contiguous());
  Tensor index = ids({4, 0, 3, 4, 1, 2, 0}, {7});
  EXPECT_TENSOR_CLOSE(index_select(x, 1, index), naive_index_select(x, 1, index), 0, 0);
  Tensor strided_index = ids({0, 9, 2, 9, 1, 9}, {6}).slice(0, 0, 6, 2);  // values 0, 2, 1
  EXPECT_TENSOR_CLOSE(index_select(x, 0, strided_index), naive_index_select(x, 0, strided_index), 0, 0);
  Tensor tokens = ids({10, 11, 12, 13, 14, 15}, {2, 3});
  EXPECT_EQ(index_select(tokens, 1, ids({2, 0}, {2})).to_vector<int64_t>(), (std::vector<int64_t>{12, 10, 15, 13}));
  Tensor big = randn64({300, 200}, 3).to(DType::f32);
  Generator gen(4);
  Tensor many = randint(0, 300, {500}, gen);
  EXPECT_TENSOR_CLOSE(index_select(big, 0, many), naive_index_select(big, 0, many).to(DType::f32), 0, 0);
}

TEST(IndexSelect, GradientsAddRepeatedRows) {
  Tensor x = random_leaf({4, 3}, 5);
  Tensor index = ids({3, 0, 3, 3}, {4});
  EXPECT_GRAD_OK([&](const std::vector<Tensor>& in) { return index_select(in[0], 0, index); }, {x});
  EXPECT_GRAD_OK([&](const std::vector<Tensor>& in) { return index_select(in[0].t(), 1, index); }, {x});
  Tensor index32 = ids({1, 1, 0, 2, 1}, {5}, DType::i32);
  EXPECT_GRAD_OK([&](const std::vector<Tensor>& in) { return index_select(in[0].t(), 0, index32); }, {x});
  Tensor y = random_leaf({2, 5, 3}, 6);
  EXPECT_GRAD_OK([&](const std::vector<Tensor>& in) { return index_select(in[0], 1, index); }, {y});
}

TEST(IndexSelect, ErrorsNameOpIndexAndRange) {
  EXPECT_THROW_WITH(index_select(zeros({3, 5}), 1, ids({1, 5}, {2})), "index_select", "index 5", "[0, 5)", "dim 1",
                    "(3, 5)");
  EXPECT_THROW_WITH(index_select(zeros({3, 5}), 0, ids({-1}, {1})), "index_select", "index -1", "[0, 3)");
  EXPECT_THROW_WITH(index_select(zeros({3, 5}), 0, ids({0, 1}, {1, 2})), "index_select", "1-D", "(1, 2)", "(3, 5)");
  EXPECT_THROW_WITH(index_select(zeros({3, 5}), 0, Tensor::of({0}, {1})), "index_select", "f32", "i64");
  EXPECT_THROW_WITH(index_select(zeros({3, 5}), 2, ids({0}, {1})), "index_select", "dim 2");
  EXPECT_THROW_WITH(index_select(zeros({0, 5}), 0, ids({0}, {1})), "index_select", "index 0", "[0, 0)");
}

TEST(Gather, MatchesNaiveAlongEveryDim) {
  Tensor x = randn64({3, 4, 5}, 10);
  Generator gen(11);
  for (int64_t dim = 0; dim < 3; ++dim) {
    Shape index_shape{2, 3, 4};
    index_shape[dim] = 6;  // larger than x along dim, smaller elsewhere
    for (DType it : {DType::i64, DType::i32}) {
      Tensor index = randint(0, x.shape()[dim], index_shape, gen, it);
      EXPECT_TENSOR_CLOSE(gather(x, dim, index), naive_gather(x, dim, index), 0, 0);
    }
  }
}

TEST(Gather, NonContiguousInputAndIndex) {
  Generator gen(12);
  Tensor x = randn64({5, 4}, 13).t();                        // (4, 5)
  Tensor index = randint(0, 5, {3, 4}, gen).t();             // (4, 3), non-contiguous
  EXPECT_TENSOR_CLOSE(gather(x, 1, index), naive_gather(x, 1, index), 0, 0);
  Tensor picks = randint(0, 4, {2, 5}, gen);
  EXPECT_TENSOR_CLOSE(gather(x, 0, picks), naive_gather(x, 0, picks), 0, 0);
  Tensor big = randn64({256, 300}, 14);                      // large enough to run threaded
  Tensor big_index = randint(0, 300, {256, 150}, gen);
  EXPECT_TENSOR_CLOSE(gather(big, 1, big_index), naive_gather(big, 1, big_index), 0, 0);
}

TEST(Gather, GradientsScatterBackWithRepeats) {
  Tensor x = random_leaf({3, 4}, 15);
  Tensor index = ids({0, 0, 3, 1, 1, 1, 2, 2, 0}, {3, 3});
  EXPECT_GRAD_OK([&](const std::vector<Tensor>& in) { return gather(in[0], 1, index); }, {x});
  Tensor rows = ids({2, 2, 0, 1, 2, 2}, {2, 3});
  EXPECT_GRAD_OK([&](const std::vector<Tensor>& in) { return gather(in[0].t(), 0, rows.t()); }, {x});
}

TEST(Gather, Errors) {
  EXPECT_THROW_WITH(gather(zeros({3, 4}), 1, ids({0, 1}, {2})), "gather", "(2)", "(3, 4)", "number of dims");
  EXPECT_THROW_WITH(gather(zeros({3, 4}), 1, ids({0, 0, 0, 0}, {4, 1})), "gather", "(4, 1)", "(3, 4)", "dim 0");
  EXPECT_THROW_WITH(gather(zeros({3, 4}), 1, ids({0, 4}, {1, 2})), "gather", "index 4", "[0, 4)", "dim 1", "(3, 4)");
  EXPECT_THROW_WITH(gather(zeros({3, 4}), 0, ids({-2}, {1, 1}, DType::i32)), "gather", "index -2", "[0, 3)");
}

TEST(ScatterAdd, MatchesNaiveWithRepeatedTargets) {
  Generator gen(20);
  Tensor x = randn64({3, 4, 5}, 21);
  for (int64_t dim = 0; dim < 3; ++dim) {
    Shape index_shape{2, 3, 4};
    index_shape[dim] = 7;
    Tensor index = randint(0, x.shape()[dim], index_shape, gen);
    Tensor src = randn64(index_shape, 22);
    EXPECT_TENSOR_CLOSE(scatter_add(x, dim, index, src), naive_scatter_add(x, dim, index, src), 1e-12, 1e-12);
  }
  // src larger than index: only index's extent of src is used; x is not modified
  Tensor x0 = x.clone();
  Tensor index = ids({0, 0, 2, 2, 1, 0}, {2, 3, 1});
  Tensor src = randn64({2, 4, 3}, 23).transpose(1, 2);  // (2, 3, 4), non-contiguous
  EXPECT_TENSOR_CLOSE(scatter_add(x, 1, index, src), naive_scatter_add(x, 1, index, src), 1e-12, 1e-12);
  EXPECT_TENSOR_CLOSE(x, x0, 0, 0);
  Tensor counts = scatter_add(zeros({4}, DType::i64), 0, ids({1, 3, 1, 1}, {4}), ones({4}, DType::i64));
  EXPECT_EQ(counts.to_vector<int64_t>(), (std::vector<int64_t>{0, 3, 0, 1}));
}

TEST(ScatterAdd, LargeThreadedScatterMatchesNaive) {
  Generator gen(24);
  Tensor x = randn64({64, 700}, 25);
  Tensor index = randint(0, 64, {50, 700}, gen);
  Tensor src = randn64({50, 700}, 26);
  EXPECT_TENSOR_CLOSE(scatter_add(x, 0, index, src), naive_scatter_add(x, 0, index, src), 1e-12, 1e-12);
}

// index_select's backward (index_add) and gather's (scatter_add) sum repeated targets in a fixed
// order, so their f32 results are bitwise equal for any thread count.
TEST(IndexingBackward, IndependentOfThreadCount) {
  Generator gen(30);
  Tensor x = zeros({64, 900}).set_requires_grad(true);
  Tensor rows = randint(0, 64, {400}, gen), cols = randint(0, 900, {64, 2000}, gen);
  Tensor g_rows = randn({400, 900}, gen), g_cols = randn({64, 2000}, gen);
  const int saved = num_threads();
  std::vector<Tensor> by_rows, by_cols;
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    x.zero_grad();
    index_select(x, 0, rows).backward(g_rows);
    by_rows.push_back(x.grad());
    x.zero_grad();
    gather(x, 1, cols).backward(g_cols);
    by_cols.push_back(x.grad());
  }
  set_num_threads(saved);
  for (size_t i = 1; i < by_rows.size(); ++i) {
    EXPECT_TENSOR_CLOSE(by_rows[i], by_rows[0], 0, 0);
    EXPECT_TENSOR_CLOSE(by_cols[i], by_cols[0], 0, 0);
  }
  EXPECT_TENSOR_CLOSE(by_cols[0], naive_scatter_add(zeros({64, 900}), 1, cols, g_cols).to(DType::f32), 1e-5, 1e-5);
}

TEST(ScatterAdd, GradientsForInputAndSource) {
  Tensor x = random_leaf({3, 4}, 27), src = random_leaf({2, 5}, 28);
  Tensor index = ids({3, 3, 0, 1, 1, 1}, {2, 3});  // src's (2, 5) is larger than index: zeros beyond
  EXPECT_GRAD_OK([&](const std::vector<Tensor>& in) { return scatter_add(in[0], 1, index, in[1]); }, {x, src});
  Tensor src_t = random_leaf({3, 2}, 29);
  Tensor rows = ids({2, 2, 0, 2}, {2, 2});
  EXPECT_GRAD_OK([&](const std::vector<Tensor>& in) { return scatter_add(in[0].t(), 0, rows, in[1].t()); },
                 {x, src_t});
}

TEST(ScatterAdd, Errors) {
  EXPECT_THROW_WITH(scatter_add(zeros({3, 4}), 1, ids({0, 4}, {1, 2}), zeros({1, 2})), "scatter_add", "index 4",
                    "[0, 4)", "(3, 4)");
  EXPECT_THROW_WITH(scatter_add(zeros({3, 4}), 1, ids({0, 1, 2}, {1, 3}), zeros({1, 2})), "scatter_add", "(1, 3)",
                    "(1, 2)", "src");
  EXPECT_THROW_WITH(scatter_add(zeros({3, 4}), 1, ids({0, 1}, {1, 2}), zeros({1, 2}, DType::f64)), "scatter_add",
                    "f64", "f32");
  EXPECT_THROW_WITH(scatter_add(zeros({3, 4}), 0, ids({0}, {1}), zeros({1})), "scatter_add", "(1)", "(3, 4)");
  EXPECT_THROW_WITH(scatter_add(zeros({3, 4}), 2, ids({0}, {1, 1}), zeros({1, 1})), "scatter_add", "dim 2");
}

}  // namespace
}  // namespace nf
