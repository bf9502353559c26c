// LoRA on nn::Linear: PEFT-style names, frozen base, B = 0 start, golden against reference 000's
// formula (gradients of x, A and B; none for the base), merge, dropout, errors.
#include "support/module_golden.h"
#include "support/testing.h"
#include "nanoformer/nn/lora.h"

namespace nf::nn {
namespace {

using testing::Golden;

TEST(LoRA, NamesFreezingAndZeroStart) {
  Generator gen(1);
  Linear layer(6, 5, true, gen);
  const Tensor base_weight = layer.weight;
  layer.add_lora({.rank = 3, .alpha = 6.0}, gen);
  std::vector<std::string> names;
  for (const auto& [n, t] : layer.named_parameters()) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"weight", "bias", "lora_A.weight", "lora_B.weight"}));
  EXPECT_TRUE(layer.weight.shares_storage_with(base_weight));
  EXPECT_FALSE(layer.weight.requires_grad());
  EXPECT_FALSE(layer.bias.requires_grad());
  EXPECT_EQ(layer.lora_A->weight.shape(), (Shape{3, 6}));
  EXPECT_EQ(layer.lora_B->weight.shape(), (Shape{5, 3}));
  EXPECT_EQ(layer.num_parameters(/*trainable_only=*/true), 3 * 6 + 5 * 3);
  EXPECT_DOUBLE_EQ(layer.lora_scaling(), 2.0);
  EXPECT_GT(max(abs(layer.lora_A->weight)).item(), 0.0);
  EXPECT_LE(max(abs(layer.lora_A->weight)).item(), 1.0 / std::sqrt(6.0));  // kaiming-uniform, a = sqrt(5)
  Tensor x = randn({4, 6}, gen);
  EXPECT_TENSOR_CLOSE(layer(x), linear(x, layer.weight, layer.bias), 0, 0);  // B = 0
}

TEST(LoRA, GoldenAgainstReference000) {
  const Golden golden("lora");
  for (const auto& [name, p] : golden.cases().items()) {
    SCOPED_TRACE(name);
    Tensor x = golden.input(name, "x");
    const Tensor w = golden.get(name, "weight");
    Linear layer(w.size(1), w.size(0), golden.has(name, "bias"));
    layer.add_lora({.rank = p.at("rank"), .alpha = p.at("alpha")});
    testing::load_case_parameters(layer, golden, name);
    Tensor out = layer(x);
    EXPECT_TENSOR_CLOSE(out, golden.get(name, "out"), testing::kModuleAtol, testing::kModuleRtol);
    out.backward(golden.get(name, "grad_out"));
    EXPECT_TENSOR_CLOSE(x.grad(), golden.get(name, "grad_x"), testing::kModuleAtol, testing::kModuleRtol);
    testing::expect_parameter_grads(layer, golden, name);  // the frozen base gets none
  }
}

TEST(LoRA, MergeFoldsTheUpdateAndRemovesTheAdapter) {
  Generator gen(3);
  Linear layer(16, 12, true, gen);
  layer.add_lora({.rank = 4, .alpha = 8.0}, gen);
  {
    autograd::NoGradGuard no_grad;
    copy_into(layer.lora_B->weight, randn({12, 4}, gen));
  }
  const Tensor base_before = clone(layer.weight);
  const Tensor delta = mul(matmul(layer.lora_B->weight, layer.lora_A->weight), 2.0);  // (alpha / r) B A
  Tensor x = randn({5, 16}, gen);
  const Tensor adapted = layer(x);
  layer.merge_lora();
  EXPECT_FALSE(layer.has_lora());
  EXPECT_EQ(layer.named_parameters().size(), 2u);
  EXPECT_TRUE(layer.named_children().empty());
  EXPECT_TRUE(layer.weight.requires_grad());
  EXPECT_TENSOR_CLOSE(layer.weight, add(base_before, delta), 1e-6, 0);
  EXPECT_TENSOR_CLOSE(layer(x), adapted, 1e-5, 1e-5);
  EXPECT_THROW_WITH(layer.merge_lora(), "Linear(16, 12)", "without a LoRA adapter");
  layer.add_lora({.rank = 2, .alpha = 2.0}, gen);  // a merged layer takes a new adapter
  EXPECT_THROW_WITH(layer.add_lora({.rank = 2, .alpha = 2.0}, gen), "Linear(16, 12)", "already has a LoRA adapter");
}

TEST(LoRA, DropoutOnTheAdapterInputOnlyInTraining) {
  Generator gen(4);
  Linear layer(8, 6, false, gen);
  layer.add_lora({.rank = 2, .alpha = 2.0, .dropout = 0.5}, gen);
  ASSERT_NE(layer.lora_dropout, nullptr);
  {
    autograd::NoGradGuard no_grad;
    copy_into(layer.lora_B->weight, randn({6, 2}, gen));
  }
  Tensor x = randn({3, 8}, gen);
  // training: the adapter sees dropout(x) drawn from the layer's own seeded generator
  Dropout same(0.5, layer.lora_dropout->generator().seed());
  const Tensor expected = add(linear(x, layer.weight), linear(linear(same(x), layer.lora_A->weight), layer.lora_B->weight));
  EXPECT_TENSOR_CLOSE(layer(x), expected, 1e-6, 1e-6);
  layer.eval();
  const Tensor no_drop = add(linear(x, layer.weight), linear(linear(x, layer.lora_A->weight), layer.lora_B->weight));
  EXPECT_TENSOR_CLOSE(layer(x), no_drop, 1e-6, 1e-6);
}

TEST(LoRA, ErrorsNameTheValue) {
  Linear layer(4, 4);
  EXPECT_THROW_WITH(layer.add_lora({.rank = 0}), "LoRA", "rank 0");
  EXPECT_THROW_WITH(layer.add_lora({.rank = -2}), "LoRA", "rank -2");
  EXPECT_THROW_WITH(layer.add_lora({.rank = 2, .alpha = 0.0}), "LoRA", "alpha 0");
  EXPECT_THROW_WITH(layer.add_lora({.rank = 2, .alpha = -1.5}), "LoRA", "alpha -1.5");
  EXPECT_THROW_WITH(layer.add_lora({.rank = 2, .alpha = 1.0, .dropout = 1.0}), "LoRA", "dropout 1");
  EXPECT_FALSE(layer.has_lora());
  EXPECT_TRUE(layer.weight.requires_grad());
}

}  // namespace
}  // namespace nf::nn
