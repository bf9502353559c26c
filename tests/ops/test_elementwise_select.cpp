// Comparisons (bool results, no gradient), where and masked_fill: forward against naive loops
// over broadcast indices, gradients against finite differences, and errors.
#include <cmath>
#include <limits>

#include "ops/naive_elementwise.h"
#include "support/testing.h"

namespace nf {
namespace {

using namespace nf::testing;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<bool> bools(const Tensor& t) {
  const std::vector<uint8_t> bytes = t.to_vector<uint8_t>();
  return std::vector<bool>(bytes.begin(), bytes.end());
}

// ---- comparisons ----

struct CompareCase {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&)> op;
  Fn2 ref;
};
const std::vector<CompareCase> kCompare = {
    {"eq", [](const Tensor& a, const Tensor& b) { return eq(a, b); }, [](double x, double y) { return double(x == y); }},
    {"ne", [](const Tensor& a, const Tensor& b) { return ne(a, b); }, [](double x, double y) { return double(x != y); }},
    {"lt", [](const Tensor& a, const Tensor& b) { return lt(a, b); }, [](double x, double y) { return double(x < y); }},
    {"le", [](const Tensor& a, const Tensor& b) { return le(a, b); }, [](double x, double y) { return double(x <= y); }},
    {"gt", [](const Tensor& a, const Tensor& b) { return gt(a, b); }, [](double x, double y) { return double(x > y); }},
    {"ge", [](const Tensor& a, const Tensor& b) { return ge(a, b); }, [](double x, double y) { return double(x >= y); }},
};

TEST(Compare, BroadcastMatchesNaiveForEveryDtype) {
  // small integers so that ties occur; NaN compares unequal to everything, itself included
  const Tensor a = Tensor::of({0, 1, 2, 1, kNaN, 2, 0, 0, 1, 2, 2, 1}, {2, 3, 2}, DType::f64);
  const Tensor b = Tensor::of({1, 1, 2, 0, kNaN, 0}, {3, 2}, DType::f64);
  const Tensor row = Tensor::of({1, 0}, {2}, DType::f64);
  for (const CompareCase& c : kCompare) {
    SCOPED_TRACE(c.name);
    const Tensor out = c.op(a, b);
    EXPECT_EQ(out.dtype(), DType::boolean);
    EXPECT_TENSOR_CLOSE(out, naive_binary(a, b, c.ref), 0.0, 0.0);
    EXPECT_TENSOR_CLOSE(c.op(a.to(DType::f32), b.to(DType::f32)), naive_binary(a, b, c.ref), 0.0, 0.0);
    EXPECT_TENSOR_CLOSE(c.op(a.transpose(0, 2), row), naive_binary(a.transpose(0, 2), row, c.ref), 0.0, 0.0);
    const Tensor ai = Tensor::of({0, 1, 2, 1, 5, 2}, {3, 2}, DType::i32), bi = Tensor::of({1, 2}, {2}, DType::i32);
    EXPECT_TENSOR_CLOSE(c.op(ai, bi), naive_binary(ai, bi, c.ref), 0.0, 0.0);
    EXPECT_TENSOR_CLOSE(c.op(ai.to(DType::i64), bi.to(DType::i64)), naive_binary(ai, bi, c.ref), 0.0, 0.0);
    const Tensor m = Tensor::of({0, 1, 1, 0}, {2, 2}, DType::boolean), n = Tensor::of({1, 1}, {2}, DType::boolean);
    EXPECT_TENSOR_CLOSE(c.op(m, n), naive_binary(m, n, c.ref), 0.0, 0.0);
  }
}

TEST(Compare, ScalarOverloads) {
  const Tensor x = Tensor::of({-1, 0, 2.5, 3, kNaN}, {5}, DType::f64);
  EXPECT_EQ(bools(eq(x, 2.5)), (std::vector<bool>{false, false, true, false, false}));
  EXPECT_EQ(bools(lt(x, 2.5)), (std::vector<bool>{true, true, false, false, false}));
  EXPECT_EQ(bools(gt(x, 2.5)), (std::vector<bool>{false, false, false, true, false}));
  // the scalar takes the tensor's dtype: 0.1 compares as 0.1f against an f32 tensor (as PyTorch)
  EXPECT_EQ(bools(eq(Tensor::of({0.1}, {1}), 0.1)), (std::vector<bool>{true}));
  // an integer tensor against a fractional scalar compares exactly, not against a truncated scalar
  const Tensor i = Tensor::of({1, 2, 3}, {3}, DType::i64);
  EXPECT_EQ(bools(lt(i, 2.5)), (std::vector<bool>{true, true, false}));
  EXPECT_EQ(bools(gt(i, 2.5)), (std::vector<bool>{false, false, true}));
  EXPECT_EQ(bools(eq(i, 2.5)), (std::vector<bool>{false, false, false}));
  EXPECT_EQ(bools(eq(i, 2.0)), (std::vector<bool>{false, true, false}));
  EXPECT_EQ(bools(lt(i.to(DType::i32), 1e12)), (std::vector<bool>{true, true, true}));
  const Tensor mask = Tensor::of({0, 1}, {2}, DType::boolean);
  EXPECT_EQ(bools(eq(mask, 1.0)), (std::vector<bool>{false, true}));
  EXPECT_EQ(bools(eq(mask, 0.5)), (std::vector<bool>{false, false}));
}

TEST(Compare, ResultsCarryNoGradient) {
  const Tensor a = random_leaf({2, 3}, 1), b = random_leaf({3}, 2);
  for (const CompareCase& c : kCompare) {
    const Tensor out = c.op(a, b);
    EXPECT_FALSE(out.requires_grad()) << c.name;
    EXPECT_EQ(out.grad_fn(), nullptr) << c.name;
  }
  EXPECT_FALSE(lt(a, 0.0).requires_grad());
}

TEST(Compare, ErrorsNameOpShapesAndDtypes) {
  for (const CompareCase& c : kCompare) {
    EXPECT_THROW_WITH(c.op(zeros({2, 3}), zeros({4, 5})), c.name, "(2, 3)", "(4, 5)");
    EXPECT_THROW_WITH(c.op(zeros({2, 3}), zeros({2, 3}, DType::i64)), c.name, "f32", "i64");
  }
  EXPECT_THROW_WITH(lt(zeros({2}, DType::bf16), zeros({2}, DType::bf16)), "lt", "bf16");
}

// ---- where ----

// out = cond ? a : b over the three-way broadcast shape, in f64
Tensor naive_where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  const Shape shape = naive_broadcast(naive_broadcast(cond.shape(), a.shape()), b.shape());
  Tensor out = zeros(shape, DType::f64);
  for (const Index& idx : indices_of(shape)) {
    const bool c = cond.at(operand_index(cond.shape(), idx)) != 0.0;
    out.set(idx, c ? a.at(operand_index(a.shape(), idx)) : b.at(operand_index(b.shape(), idx)));
  }
  return out;
}

Tensor random_mask(const Shape& shape, uint64_t seed) {
  Generator gen(seed);
  return bernoulli(shape, 0.5, gen, DType::boolean);
}

TEST(Where, ThreeWayBroadcastMatchesNaive) {
  const Tensor cond = random_mask({2, 1, 4}, 10);
  const Tensor a = randn_f64({3, 1}, 11), b = randn_f64({4}, 12);
  EXPECT_EQ(where(cond, a, b).shape(), (Shape{2, 3, 4}));
  EXPECT_TENSOR_CLOSE(where(cond, a, b), naive_where(cond, a, b), 0.0, 0.0);
  EXPECT_TENSOR_CLOSE(where(cond, a.to(DType::f32), b.to(DType::f32)), naive_where(cond, a.to(DType::f32), b.to(DType::f32)), 0.0, 0.0);
  // non-contiguous operands and a 0-dim scalar branch
  const Tensor at = randn_f64({4, 3}, 13).t(), c2 = random_mask({4, 3}, 14).t();
  EXPECT_TENSOR_CLOSE(where(c2, at, Tensor::scalar(-1.0, DType::f64)), naive_where(c2, at, Tensor::scalar(-1.0, DType::f64)), 0.0, 0.0);
  // any dtype: selection moves bits
  const Tensor ia = Tensor::of({1, 2, 3}, {3}, DType::i64), ib = Tensor::of({-1}, {1}, DType::i64);
  const Tensor c3 = Tensor::of({1, 0, 1}, {3}, DType::boolean);
  EXPECT_EQ(where(c3, ia, ib).to_vector<int64_t>(), (std::vector<int64_t>{1, -1, 3}));
  EXPECT_EQ(where(c3, ia.to(DType::bf16), ib.to(DType::bf16)).to_vector<double>(), (std::vector<double>{1, -1, 3}));
  EXPECT_EQ(bools(where(c3, c3, Tensor::of({1}, {1}, DType::boolean))), (std::vector<bool>{true, true, true}));
}

TEST(Where, GradientsGoToTheSelectedBranchSummedOverBroadcast) {
  const Tensor cond = random_mask({2, 3, 4}, 20);
  auto f = [cond](const std::vector<Tensor>& in) { return where(cond, in[0], in[1]); };
  EXPECT_GRAD_OK(f, {random_leaf({2, 3, 4}, 21), random_leaf({2, 3, 4}, 22)});
  EXPECT_GRAD_OK(f, {random_leaf({3, 1}, 23), random_leaf({4}, 24)});
  EXPECT_GRAD_OK(f, {random_leaf({}, 25), random_leaf({2, 1, 4}, 26)});
  const Tensor cond_small = random_mask({3, 1}, 27);
  EXPECT_GRAD_OK([cond_small](const std::vector<Tensor>& in) { return where(cond_small, in[0].t(), in[1]); },
                 {random_leaf({4, 3}, 28), random_leaf({1, 4}, 29)});
  // explicit: a (scalar) collects dout where cond, b where not
  Tensor a = Tensor::of({0}, {}, DType::f64).set_requires_grad(), b = zeros({4}, DType::f64).set_requires_grad();
  sum(where(Tensor::of({1, 0, 1, 1}, {4}, DType::boolean), a, b)).backward();
  EXPECT_EQ(a.grad().item(), 3.0);
  EXPECT_EQ(b.grad().to_vector<double>(), (std::vector<double>{0, 1, 0, 0}));
}

TEST(Where, ErrorsNameOpShapesAndDtypes) {
  const Tensor c = zeros({2, 3}, DType::boolean);
  EXPECT_THROW_WITH(where(c, zeros({4, 5}), zeros({2, 3})), "where", "(2, 3)", "(4, 5)");
  EXPECT_THROW_WITH(where(zeros({4, 5}, DType::boolean), zeros({2, 3}), zeros({2, 3})), "where", "(4, 5)", "(2, 3)");
  EXPECT_THROW_WITH(where(c, zeros({2, 3}), zeros({2, 3}, DType::f64)), "where", "f32", "f64");
  EXPECT_THROW_WITH(where(zeros({2, 3}), zeros({2, 3}), zeros({2, 3})), "where", "cond", "bool", "f32");
}

// ---- masked_fill ----

TEST(MaskedFill, BroadcastMaskMatchesNaive) {
  const Tensor x = randn_f64({2, 3, 4}, 30), mask = random_mask({3, 1}, 31);
  const Tensor expected = naive_where(mask, Tensor::scalar(-5.0, DType::f64), x);
  EXPECT_TENSOR_CLOSE(masked_fill(x, mask, -5.0), expected, 0.0, 0.0);
  const Tensor x32 = x.to(DType::f32);
  EXPECT_TENSOR_CLOSE(masked_fill(x32, mask, -5.0), naive_where(mask, Tensor::scalar(-5.0, DType::f64), x32), 0.0, 0.0);
  const Tensor xt = x.transpose(0, 2);  // (4, 3, 2), non-contiguous
  const Tensor m2 = random_mask({4, 1, 2}, 32);
  EXPECT_TENSOR_CLOSE(masked_fill(xt, m2, 9.0), naive_where(m2, Tensor::scalar(9.0, DType::f64), xt), 0.0, 0.0);
  // -inf fill of an attention-style causal mask, and integer / bool inputs
  const Tensor causal = Tensor::of({0, 1, 0, 0}, {2, 2}, DType::boolean);
  const std::vector<float> filled = masked_fill(ones({2, 2}), causal, -INFINITY).to_vector<float>();
  EXPECT_EQ(filled, (std::vector<float>{1, -INFINITY, 1, 1}));
  EXPECT_EQ(masked_fill(Tensor::of({1, 2}, {2}, DType::i32), causal.select(0, 0), 7).to_vector<int32_t>(),
            (std::vector<int32_t>{1, 7}));
  EXPECT_EQ(bools(masked_fill(causal, causal, 0)), (std::vector<bool>{false, false, false, false}));
}

TEST(MaskedFill, GradientIsZeroWhereFilled) {
  const Tensor mask = random_mask({3, 1}, 40);
  EXPECT_GRAD_OK([mask](const std::vector<Tensor>& in) { return masked_fill(in[0], mask, 3.0); }, {random_leaf({2, 3, 4}, 41)});
  EXPECT_GRAD_OK([mask](const std::vector<Tensor>& in) { return masked_fill(in[0].t(), mask, 3.0); }, {random_leaf({4, 3}, 42)});
  Tensor x = zeros({3}, DType::f64).set_requires_grad();
  sum(masked_fill(x, Tensor::of({0, 1, 0}, {3}, DType::boolean), 5.0)).backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{1, 0, 1}));
}

TEST(MaskedFill, ErrorsNameOpShapesAndDtypes) {
  EXPECT_THROW_WITH(masked_fill(zeros({2, 3}), zeros({4, 5}, DType::boolean), 0.0), "masked_fill", "(2, 3)", "(4, 5)");
  // the mask may not enlarge the input
  EXPECT_THROW_WITH(masked_fill(zeros({3}), zeros({2, 3}, DType::boolean), 0.0), "masked_fill", "(3)", "(2, 3)");
  EXPECT_THROW_WITH(masked_fill(zeros({2, 3}), zeros({2, 3}), 0.0), "masked_fill", "mask", "bool", "f32");
  EXPECT_THROW_WITH(masked_fill(zeros({2, 3}, DType::i32), zeros({2, 3}, DType::boolean), -INFINITY), "masked_fill", "-inf",
                    "i32", "(2, 3)");
  EXPECT_THROW_WITH(masked_fill(zeros({2}, DType::i64), zeros({2}, DType::boolean), 1e19), "masked_fill", "i64");
}

}  // namespace
}  // namespace nf
