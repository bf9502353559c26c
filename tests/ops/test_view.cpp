// View ops: shapes/strides, shared storage, copies where needed, gradients, and errors.
#include "support/testing.h"

namespace nf {
namespace {

using testing::random_leaf;
using Fn = autograd::TensorFn;

Tensor iota(const Shape& shape) { return arange(0, static_cast<double>(shape_numel(shape)), 1, DType::f32).reshape(shape); }

TEST(View, ReshapeInfersOneDimAndViewsWhenPossible) {
  Tensor x = iota({2, 3, 4});
  Tensor r = x.reshape({4, -1});
  EXPECT_EQ(r.shape(), (Shape{4, 6}));
  EXPECT_TRUE(r.shares_storage_with(x));
  Tensor t = x.transpose(1, 2);          // (2, 4, 3), not contiguous
  Tensor merged = t.reshape({2, 12});    // cannot be a view
  EXPECT_FALSE(merged.shares_storage_with(x));
  EXPECT_EQ(merged.at({0, 1}), 4.0);     // t[0, 0, 1] = x[0, 1, 0]
  Tensor split = t.reshape({2, 2, 2, 3});  // splitting a dim is still a view
  EXPECT_TRUE(split.shares_storage_with(x));
  EXPECT_EQ(split.at({1, 1, 0, 2}), x.at({1, 2, 2}));
}

TEST(View, ViewRefusesIncompatibleStrides) {
  Tensor t = iota({2, 3}).t();
  EXPECT_THROW_WITH(t.view({6}), "view", "(3, 2)", "(6)", "reshape");
  EXPECT_THROW_WITH(iota({2, 3}).reshape({4, -1}), "reshape", "(2, 3)", "(4, -1)");
  EXPECT_THROW_WITH(iota({2, 3}).reshape({-1, -1}), "reshape", "only one -1");
}

TEST(View, PermuteNarrowSliceSelectSqueeze) {
  Tensor x = iota({2, 3, 4});
  Tensor p = x.permute({2, 0, 1});
  EXPECT_EQ(p.shape(), (Shape{4, 2, 3}));
  EXPECT_EQ(p.at({3, 1, 2}), x.at({1, 2, 3}));
  Tensor s = x.slice(2, 1, 4, 2);  // columns 1, 3
  EXPECT_EQ(s.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(s.at({1, 2, 1}), x.at({1, 2, 3}));
  EXPECT_EQ(x.slice(1, -2, 3).shape(), (Shape{2, 2, 4}));
  EXPECT_EQ(x.select(1, -1).shape(), (Shape{2, 4}));
  EXPECT_EQ(x.select(1, -1).at({1, 0}), x.at({1, 2, 0}));
  EXPECT_EQ(x.unsqueeze(1).shape(), (Shape{2, 1, 3, 4}));
  EXPECT_EQ(x.unsqueeze(-1).shape(), (Shape{2, 3, 4, 1}));
  EXPECT_EQ(x.unsqueeze(1).squeeze().shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(x.squeeze(0).shape(), (Shape{2, 3, 4}));  // not size 1: unchanged
  EXPECT_EQ(x.flatten(1).shape(), (Shape{2, 12}));
  EXPECT_EQ(x.flatten().shape(), (Shape{24}));
}

TEST(View, ExpandBroadcastsWithZeroStride) {
  Tensor x = iota({3, 1});
  Tensor e = x.expand({2, 3, 4});
  EXPECT_EQ(e.strides(), (Shape{0, 1, 0}));
  EXPECT_EQ(e.at({1, 2, 3}), 2.0);
  EXPECT_EQ(x.expand({-1, 5}).shape(), (Shape{3, 5}));
  EXPECT_THROW_WITH(x.expand({2, 4}), "expand", "(3, 1)", "(2, 4)");
}

TEST(View, ErrorsNameOpAndShape) {
  Tensor x = iota({2, 3});
  EXPECT_THROW_WITH(x.transpose(0, 2), "transpose", "dim 2");
  EXPECT_THROW_WITH(x.permute({0, 0}), "permute", "repeated");
  EXPECT_THROW_WITH(x.permute({0}), "permute", "(2, 3)");
  EXPECT_THROW_WITH(x.narrow(1, 2, 2), "narrow", "(2, 3)");
  EXPECT_THROW_WITH(x.select(0, 2), "select", "(2, 3)");
  EXPECT_THROW_WITH(broadcast_shapes({2, 3}, {4, 3}, "add"), "add", "(2, 3)", "(4, 3)");
  EXPECT_THROW_WITH(copy_into(zeros({2}), zeros({3})), "copy_into", "(2)", "(3)");
}

TEST(View, Gradients) {
  Tensor x = random_leaf({2, 3, 4}, 1);
  const std::vector<Fn> fns = {
      [](const std::vector<Tensor>& in) { return in[0].reshape({4, 6}); },
      [](const std::vector<Tensor>& in) { return in[0].transpose(0, 2).reshape({-1}); },
      [](const std::vector<Tensor>& in) { return in[0].permute({1, 2, 0}); },
      [](const std::vector<Tensor>& in) { return in[0].narrow(2, 1, 2); },
      [](const std::vector<Tensor>& in) { return in[0].slice(1, 0, 3, 2); },
      [](const std::vector<Tensor>& in) { return in[0].select(0, 1); },
      [](const std::vector<Tensor>& in) { return in[0].select(2, 0).unsqueeze(0).expand({3, 2, 3}); },
      [](const std::vector<Tensor>& in) { return in[0].unsqueeze(1).squeeze(1).flatten(0, 1); },
  };
  for (size_t i = 0; i < fns.size(); ++i) EXPECT_GRAD_OK(fns[i], {x}) << "case " << i;
}

TEST(View, ContiguousCloneAndConversionGradients) {
  Tensor x = random_leaf({3, 4}, 2);
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return in[0].t().contiguous(); }, {x});
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return in[0].clone() * in[0]; }, {x});
}

TEST(View, CopyIntoConvertsAndHandlesLayouts) {
  Tensor dst = zeros({3, 2}, DType::f64);
  copy_into(dst, iota({2, 3}).t());
  EXPECT_EQ(dst.to_vector<double>(), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  Tensor half = zeros({2, 3}, DType::bf16);
  copy_into(half.t(), iota({3, 2}));
  EXPECT_EQ(half.to_vector<double>(), (std::vector<double>{0, 2, 4, 1, 3, 5}));
}

}  // namespace
}  // namespace nf
