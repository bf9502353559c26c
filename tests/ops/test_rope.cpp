// The fused rotary embedding against a naive f64 rotation written from the layout formulas, against
// the unfused composition of our ops, on strided (B, T, H, D) views, with offsets; its tables;
// finite-difference gradients of the fused and unfused forms; and its errors.
#include <cmath>

#include "support/testing.h"

namespace nf {
namespace {

using testing::random_leaf;

constexpr RopeLayout kLayouts[] = {RopeLayout::interleaved, RopeLayout::half, RopeLayout::half_negative};

// y = R x channel pair by channel pair, in f64, angle(t, i) = t theta^(-2i/D) at t = offset + row.
Tensor naive_rope(const Tensor& x, double theta, int64_t offset, RopeLayout layout) {
  const int64_t D = x.size(-1), half = D / 2;
  Tensor y = zeros(x.shape(), DType::f64);
  testing::for_each_index(x.shape(), [&](const std::vector<int64_t>& idx) {
    const int64_t t = idx[idx.size() - 2], j = idx.back();
    const bool interleaved = layout == RopeLayout::interleaved;
    // (first, second) channel of the pair holding j, and the pair's frequency index i
    const int64_t i = interleaved ? j / 2 : j % half;
    const int64_t first = interleaved ? 2 * i : i, second = interleaved ? 2 * i + 1 : i + half;
    if (j != first) return;
    const double angle = static_cast<double>(offset + t) * std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(D));
    const double c = std::cos(angle), s = layout == RopeLayout::half_negative ? -std::sin(angle) : std::sin(angle);
    std::vector<int64_t> a = idx, b = idx;
    b.back() = second;
    const double xa = x.at(a), xb = x.at(b);
    y.set(a, xa * c - xb * s);  // (a, b) -> (a c - b s, a s + b c)
    y.set(b, xa * s + xb * c);
  });
  return y;
}

Tensor randn_f32(const Shape& shape, uint64_t seed) {
  Generator gen(seed);
  return randn(shape, gen);
}

TEST(Rope, TablesFollowTheFormula) {
  const RopeTables t = rope_tables(9, 6, 500.0, 2.0, DType::f64);
  ASSERT_EQ(t.cos.shape(), (Shape{9, 3}));
  for (int64_t p = 0; p < 9; ++p) {
    for (int64_t i = 0; i < 3; ++i) {
      const double angle = (p / 2.0) * std::pow(500.0, -2.0 * i / 6.0);  // (t / s) theta^(-2i/D)
      EXPECT_DOUBLE_EQ(t.cos.at({p, i}), std::cos(angle));
      EXPECT_DOUBLE_EQ(t.sin.at({p, i}), std::sin(angle));
    }
  }
  EXPECT_EQ(rope_tables(4, 8, 1e4).cos.dtype(), DType::f32);
}

TEST(Rope, EveryLayoutMatchesNaiveRotation) {
  const RopeTables t64 = rope_tables(20, 8, 1e4, 1.0, DType::f64);
  const RopeTables t32 = rope_tables(20, 8, 1e4, 1.0, DType::f32);
  Generator gen(1);
  const Tensor x64 = randn({2, 3, 5, 8}, gen, DType::f64);
  for (RopeLayout layout : kLayouts) {
    SCOPED_TRACE(rope_layout_name(layout));
    for (int64_t offset : {0, 4, 15}) {
      const Tensor want = naive_rope(x64, 1e4, offset, layout);
      EXPECT_TENSOR_CLOSE(rope(x64, t64.cos, t64.sin, offset, layout), want, 1e-14, 1e-13);
      EXPECT_TENSOR_CLOSE(rope(x64.to(DType::f32), t32.cos, t32.sin, offset, layout), want, 1e-6, 1e-5);
    }
  }
}

TEST(Rope, FusedEqualsUnfusedComposition) {
  const RopeTables t = rope_tables(64, 16, 1e6);
  const Tensor x = randn_f32({3, 4, 33, 16}, 2);
  for (RopeLayout layout : kLayouts) {
    SCOPED_TRACE(rope_layout_name(layout));
    EXPECT_TENSOR_CLOSE(rope(x, t.cos, t.sin, 31, layout), rope_unfused(x, t.cos, t.sin, 31, layout), 1e-6, 1e-6);
  }
}

TEST(Rope, ThreadPiecesSplittingAMatrixMatchUnfused) {
  // 5 matrices of 1001 rows: above the parallel grain, so pieces start and end inside a matrix
  const RopeTables t = rope_tables(1100, 16, 1e4);
  const Tensor x = randn_f32({5, 1001, 16}, 8);
  const Tensor strided = randn_f32({1001, 5, 16}, 9).transpose(0, 1);
  for (RopeLayout layout : kLayouts) {
    SCOPED_TRACE(rope_layout_name(layout));
    EXPECT_TENSOR_CLOSE(rope(x, t.cos, t.sin, 50, layout), rope_unfused(x, t.cos, t.sin, 50, layout), 1e-6, 1e-6);
    EXPECT_TENSOR_CLOSE(rope(strided, t.cos, t.sin, 3, layout), rope_unfused(strided, t.cos, t.sin, 3, layout), 1e-6, 1e-6);
  }
}

TEST(Rope, StridedBTHDViewNeedsNoCopyAndMatches) {
  // q projected as (B, T, H, D) and seen as (B, H, T, D) through a transpose view
  const RopeTables t = rope_tables(16, 8, 1e4, 1.0, DType::f64);
  Generator gen(3);
  const Tensor bthd = randn({2, 6, 3, 8}, gen, DType::f64);
  const Tensor view = bthd.transpose(1, 2);
  ASSERT_FALSE(view.is_contiguous());
  for (RopeLayout layout : kLayouts) {
    const Tensor y = rope(view, t.cos, t.sin, 2, layout);
    EXPECT_TRUE(y.is_contiguous());
    EXPECT_TENSOR_CLOSE(y, naive_rope(view.contiguous(), 1e4, 2, layout), 1e-14, 1e-13);
  }
  // channels strided too (a column slice): copied first, same result
  const Tensor wide = randn({2, 3, 4, 16}, gen, DType::f64);
  const Tensor cols = wide.slice(3, 0, 16, 2);
  EXPECT_TENSOR_CLOSE(rope(cols, t.cos, t.sin, 1, RopeLayout::half), naive_rope(cols.contiguous(), 1e4, 1, RopeLayout::half),
                      1e-14, 1e-13);
}

TEST(Rope, DecoderStepEqualsRowOfFullSequence) {
  const RopeTables t = rope_tables(32, 8, 1e4);
  const Tensor x = randn_f32({2, 3, 10, 8}, 4);
  for (RopeLayout layout : kLayouts) {
    const Tensor full = rope(x, t.cos, t.sin, 0, layout);
    for (int64_t step : {0, 6, 9}) {
      const Tensor one = rope(x.narrow(2, step, 1), t.cos, t.sin, step, layout);
      EXPECT_TENSOR_CLOSE(one, full.narrow(2, step, 1), 0.0, 0.0);
    }
  }
}

// A continuous-batching step: each batch row at its own position, in one call, exactly as each row
// alone; also through a (B, T, H, D) view, and its gradient the inverse rotation row by row.
TEST(Rope, BatchRowsAtTheirOwnPositionsEqualEachRowAlone) {
  const RopeTables t = rope_tables(32, 8, 1e4);
  const std::vector<int64_t> offsets{0, 17, 5};
  const Tensor x = randn_f32({3, 4, 2, 8}, 6), bthd = randn_f32({3, 2, 4, 8}, 7).transpose(1, 2);
  for (RopeLayout layout : kLayouts) {
    for (const Tensor& input : {x, bthd}) {
      const Tensor together = rope(input, t.cos, t.sin, offsets, layout);
      for (int64_t b = 0; b < 3; ++b)
        EXPECT_TENSOR_CLOSE(together.narrow(0, b, 1), rope(input.narrow(0, b, 1), t.cos, t.sin, offsets[static_cast<size_t>(b)], layout),
                            0.0, 0.0) << rope_layout_name(layout) << " row " << b;
    }
  }
  const RopeTables t64 = rope_tables(32, 8, 1e4, 1.0, DType::f64);
  EXPECT_GRAD_OK([&](const std::vector<Tensor>& in) { return rope(in[0], t64.cos, t64.sin, offsets, RopeLayout::half); },
                 {random_leaf({3, 2, 2, 8}, 8)});
  EXPECT_THROW_WITH(rope(x, t.cos, t.sin, std::vector<int64_t>{0, 1}, RopeLayout::half), "2 offsets", "(3, 4, 2, 8)",
                    "one per batch row");
  EXPECT_THROW_WITH(rope(x, t.cos, t.sin, std::vector<int64_t>{0, 31, 1}, RopeLayout::half), "positions 31 .. 32",
                    "32 rows");
}

TEST(Rope, RotationPreservesNormsAndBackwardIsInverse) {
  const RopeTables t = rope_tables(8, 6, 100.0, 1.0, DType::f64);
  Tensor x = random_leaf({2, 2, 5, 6}, 5);
  for (RopeLayout layout : kLayouts) {
    const Tensor y = rope(x, t.cos, t.sin, 3, layout);
    EXPECT_TENSOR_CLOSE(sum(y * y, {-1}), sum(x * x, {-1}), 1e-14, 1e-13);
    // d/dx sum(y * g) = R^T g: with g = y the gradient is x itself
    y.backward(y.detach());
    EXPECT_TENSOR_CLOSE(x.grad(), x.detach(), 1e-14, 1e-13);
    x.zero_grad();
  }
}

TEST(Rope, FusedGradientsAreExact) {
  const RopeTables t = rope_tables(12, 6, 50.0, 1.5, DType::f64);
  const Tensor x = random_leaf({2, 3, 4, 6}, 6);
  const Tensor bthd = random_leaf({2, 4, 3, 6}, 7);
  for (RopeLayout layout : kLayouts) {
    SCOPED_TRACE(rope_layout_name(layout));
    EXPECT_GRAD_OK([&](const std::vector<Tensor>& in) { return rope(in[0], t.cos, t.sin, 5, layout); }, {x});
    EXPECT_GRAD_OK([&](const std::vector<Tensor>& in) { return rope(in[0].transpose(1, 2), t.cos, t.sin, 0, layout); },
                   {bthd});
    EXPECT_GRAD_OK([&](const std::vector<Tensor>& in) { return rope_unfused(in[0], t.cos, t.sin, 5, layout); }, {x});
  }
}

TEST(Rope, BackwardThroughATransposedViewCopiesNothing) {
  // q projected as (B, T, H, D), rotated as (B, H, T, D): the gradient comes back in the
  // projection's order, so neither the view's backward nor the leaf's accumulation copies
  const RopeTables t = rope_tables(16, 8, 1e4, 1.0, DType::f64);
  const Tensor bthd = random_leaf({2, 6, 3, 8}, 8);
  const bool was_profiling = profile::enabled();
  profile::set_enabled(true);
  profile::reset();
  const Tensor y = rope(bthd.transpose(1, 2), t.cos, t.sin, 1, RopeLayout::interleaved);
  y.backward(y.detach());  // g = y: the gradient is the input itself (a rotation's inverse)
  const std::vector<profile::Entry> ops = profile::entries();
  profile::set_enabled(was_profiling);
  for (const auto& op : ops) EXPECT_EQ(op.name.find("copy"), std::string::npos) << op.name;
  EXPECT_TENSOR_CLOSE(bthd.grad(), bthd.detach(), 1e-14, 1e-13);
  EXPECT_TRUE(bthd.grad().is_contiguous());
}

TEST(Rope, Errors) {
  const RopeTables t = rope_tables(8, 6, 1e4);
  EXPECT_THROW_WITH(rope(zeros({1, 2, 3, 7}), t.cos, t.sin, 0, RopeLayout::half), "rope", "head size D 7 is odd");
  EXPECT_THROW_WITH(rope(zeros({1, 2, 3, 8}), t.cos, t.sin, 0, RopeLayout::half), "rope", "(8, 3)", "D 8");
  EXPECT_THROW_WITH(rope(zeros({1, 2, 5, 6}), t.cos, t.sin, 4, RopeLayout::half), "rope", "positions 4 .. 8", "8 rows");
  EXPECT_THROW_WITH(rope(zeros({1, 2, 3, 6}, DType::f64), t.cos, t.sin, 0, RopeLayout::interleaved), "rope", "f32", "f64");
  EXPECT_THROW_WITH(rope(zeros({6}), t.cos, t.sin, 0, RopeLayout::half), "rope", "(..., T, D)");
  EXPECT_THROW_WITH(rope_unfused(zeros({2, 3, 5}), t.cos, t.sin, 0, RopeLayout::half), "rope_unfused", "odd");
  EXPECT_THROW_WITH(rope_tables(8, 5, 1e4), "rope_tables", "head size 5");
  EXPECT_THROW_WITH(rope_tables(8, 6, 0.0), "rope_tables", "theta 0");
  EXPECT_THROW_WITH(rope_tables(8, 6, 1e4, -2.0), "rope_tables", "position_divisor -2");
}

}  // namespace
}  // namespace nf
