// clip_grad_norm against torch.nn.utils.clip_grad_norm_ (tools/golden/fixtures_grad_clip.py): the
// returned total norm within 1e-6 relative and the clipped gradients within 1e-6, for a gentle
// clip, a hard one and none; a non-finite norm leaves the gradients alone.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>

#include "nanoformer/nanoformer.h"
#include "nanoformer/optim/grad_clip.h"
#include "support/golden.h"
#include "support/testing.h"

namespace nf::optim {
namespace {

constexpr int kParams = 3;

// "g1", "clipped2": the fixture's roles.
std::string role(const char* what, int i) {
  std::string r = what;
  r += std::to_string(i);
  return r;
}

void check_case(const std::string& name) {
  SCOPED_TRACE(name);
  const testing::Golden golden("grad_clip");
  std::vector<Tensor> params;
  for (int i = 0; i < kParams; ++i) {
    const Tensor g = golden.get(name, role("g", i));
    Tensor p = zeros(g.shape());
    p.set_requires_grad(true);
    p.set_grad(g);
    params.push_back(p);
  }
  const double total = clip_grad_norm(params, golden.cases().at(name).at("max_norm"));
  const double expected = golden.get(name, "total_norm").item();
  EXPECT_NEAR(total, expected, 1e-6 * expected);
  double worst = 0;
  for (int i = 0; i < kParams; ++i) {
    const Tensor expected_grad = golden.get(name, role("clipped", i));
    EXPECT_TENSOR_CLOSE(params[i].grad(), expected_grad, 1e-6, 0.0) << i;
    worst = std::max(worst, max(abs(params[i].grad() - expected_grad)).item());
  }
  std::cout << "[ clip " << name << " ] total norm relative diff " << std::fabs(total - expected) / expected
            << ", gradients max abs diff " << worst << "\n";
}

TEST(GradClip, ClipsAsTorch) { check_case("clipped"); }
TEST(GradClip, ClipsHardAsTorch) { check_case("clipped_hard"); }
TEST(GradClip, LeavesSmallGradientsAsTorch) { check_case("not_clipped"); }

TEST(GradClip, NonFiniteNormIsReturnedWithGradientsUntouched) {
  Tensor a = zeros({2}), b = zeros({3}), unused = zeros({2});
  for (Tensor* t : {&a, &b, &unused}) t->set_requires_grad(true);
  a.set_grad(Tensor::of({3.0, 4.0}, {2}));
  b.set_grad(Tensor::of({1.0, std::numeric_limits<double>::infinity(), 2.0}, {3}));
  EXPECT_TRUE(std::isinf(clip_grad_norm({a, b, unused}, 1.0)));
  EXPECT_EQ(a.grad().to_vector<float>(), (std::vector<float>{3.0f, 4.0f}));
  b.grad().set({1}, std::numeric_limits<double>::quiet_NaN());
  EXPECT_TRUE(std::isnan(clip_grad_norm({a, b}, 1.0)));
  EXPECT_EQ(a.grad().to_vector<float>(), (std::vector<float>{3.0f, 4.0f}));
  EXPECT_FALSE(unused.grad().defined());
}

TEST(GradClip, SkipsParametersWithoutGradientsAndRefusesBadMaxNorm) {
  Tensor a = zeros({2}), unused = zeros({4});
  a.set_requires_grad(true);
  unused.set_requires_grad(true);
  a.set_grad(Tensor::of({3.0, 4.0}, {2}));
  EXPECT_DOUBLE_EQ(clip_grad_norm({a, unused}, 10.0), 5.0);
  EXPECT_EQ(a.grad().to_vector<float>(), (std::vector<float>{3.0f, 4.0f}));
  EXPECT_THROW_WITH(clip_grad_norm({a}, 0.0), "max_norm 0");
}

}  // namespace
}  // namespace nf::optim
