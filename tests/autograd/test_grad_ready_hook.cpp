// Gradient-ready hooks (autograd/grad_ready_hook.h): a leaf's hook runs once per backward, when
// its gradient is final, before backward reaches the leaves nearer the input.
#include <thread>
#include <vector>

#include "nanoformer/autograd/grad_ready_hook.h"
#include "support/testing.h"

namespace nf {
namespace {

// A chain x -> tanh(w1 x) -> w2 h (w2 used twice): backward reaches w2 before w1.
struct Chain {
  Tensor x = Tensor::of({0.5, -1.0, 2.0}, {3}, DType::f64);
  Tensor w1 = Tensor::of({0.3, -0.2, 0.1}, {3}, DType::f64).set_requires_grad(true);
  Tensor w2 = Tensor::of({1.5, 0.5, -0.7}, {3}, DType::f64).set_requires_grad(true);
  Tensor loss() const {
    const Tensor h = tanh(w1 * x);
    return sum(w2 * h + w2 * w2);
  }
};

TEST(GradReadyHook, RunsOncePerBackwardWithTheFinalGradientBeforeEarlierLeaves) {
  Chain c;
  std::vector<std::string> order;
  std::vector<double> w2_grad_seen;
  bool w1_grad_defined_when_w2_ready = true;
  autograd::set_grad_ready_hook(c.w2, [&] {
    order.push_back("w2");
    w2_grad_seen = c.w2.grad().to_vector<double>();
    w1_grad_defined_when_w2_ready = c.w1.grad().defined();
  });
  autograd::set_grad_ready_hook(c.w1, [&] { order.push_back("w1"); });
  c.loss().backward();
  EXPECT_EQ(order, (std::vector<std::string>{"w2", "w1"}));
  // w2 reaches its accumulator through two edges; the hook saw the sum of both
  EXPECT_EQ(w2_grad_seen, c.w2.grad().to_vector<double>());
  EXPECT_FALSE(w1_grad_defined_when_w2_ready) << "w2's hook ran after w1's gradient was made: no overlap possible";

  c.w1.zero_grad();
  c.w2.zero_grad();
  c.loss().backward();
  EXPECT_EQ(order.size(), 4u) << "each hook runs once per backward";

  autograd::clear_grad_ready_hook(c.w1);
  autograd::clear_grad_ready_hook(c.w2);
  c.loss().backward();
  EXPECT_EQ(order.size(), 4u) << "a cleared hook still ran";
}

TEST(GradReadyHook, ALeafTheBackwardCannotReachIsReadyFirst) {
  Chain c;
  const Tensor unused = Tensor::of({1.0}, {1}, DType::f64).set_requires_grad(true);
  std::vector<std::string> order;
  autograd::set_grad_ready_hook(c.w1, [&] { order.push_back("w1"); });
  autograd::set_grad_ready_hook(unused, [&] { order.push_back("unused"); });
  c.loss().backward();
  EXPECT_EQ(order, (std::vector<std::string>{"unused", "w1"}));
  EXPECT_FALSE(unused.grad().defined());
  autograd::clear_grad_ready_hook(c.w1);
  autograd::clear_grad_ready_hook(unused);
}

TEST(GradReadyHook, BelongsToTheThreadThatSetIt) {
  Chain c;
  int runs = 0;
  autograd::set_grad_ready_hook(c.w1, [&] { ++runs; });
  std::thread([&] { c.loss().backward(); }).join();  // the same leaves, another thread: not its hooks
  EXPECT_EQ(runs, 0);
  c.loss().backward();
  EXPECT_EQ(runs, 1);
  autograd::clear_grad_ready_hook(c.w1);
}

TEST(GradReadyHook, RefusesANonLeaf) {
  Tensor a = Tensor::of({1, 2}, {2}, DType::f64).set_requires_grad(true);
  const Tensor b = a * 2.0;
  EXPECT_THROW(autograd::set_grad_ready_hook(b, [] {}), Error);
}

}  // namespace
}  // namespace nf
