// LoRALinear: PEFT-style names, frozen base, B = 0 start, golden against reference 000's formula
// (gradients of x, A and B; none for the base), merge / unmerge, dropout, errors.
#include "support/module_golden.h"
#include "support/testing.h"
#include "nanoformer/nn/lora.h"

namespace nf::nn {
namespace {

using testing::Golden;

TEST(LoRALinear, NamesFreezingAndZeroStart) {
  Generator gen(1);
  LoRALinear layer(6, 5, {.rank = 3, .alpha = 6.0}, true, gen);
  std::vector<std::string> names;
  for (const auto& [n, t] : layer.named_parameters()) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"weight", "bias", "lora_A.weight", "lora_B.weight"}));
  EXPECT_EQ(layer.lora_A->weight.shape(), (Shape{3, 6}));
  EXPECT_EQ(layer.lora_B->weight.shape(), (Shape{5, 3}));
  EXPECT_EQ(layer.num_parameters(/*trainable_only=*/true), 3 * 6 + 5 * 3);
  EXPECT_DOUBLE_EQ(layer.scaling(), 2.0);
  EXPECT_GT(max(abs(layer.lora_A->weight)).item(), 0.0);
  EXPECT_LE(max(abs(layer.lora_A->weight)).item(), 1.0 / std::sqrt(6.0));  // kaiming-uniform, a = sqrt(5)
  Tensor x = randn({4, 6}, gen);
  EXPECT_TENSOR_CLOSE(layer(x), linear(x, layer.weight, layer.bias), 0, 0);  // B = 0
}

TEST(LoRALinear, WrapsAnExistingLinearSharingItsWeight) {
  Generator gen(2);
  Linear base(4, 3, false, gen);
  LoRALinear layer(base, {.rank = 2, .alpha = 1.0}, gen);
  EXPECT_TRUE(layer.weight.shares_storage_with(base.weight));
  EXPECT_FALSE(base.weight.requires_grad());
  EXPECT_FALSE(layer.bias.defined());
}

TEST(LoRALinear, GoldenAgainstReference000) {
  const Golden golden("lora");
  for (const auto& [name, p] : golden.cases().items()) {
    SCOPED_TRACE(name);
    Tensor x = golden.input(name, "x");
    const Tensor w = golden.get(name, "weight");
    LoRALinear layer(w.size(1), w.size(0), {.rank = p.at("rank"), .alpha = p.at("alpha")}, golden.has(name, "bias"));
    testing::load_case_parameters(layer, golden, name);
    Tensor out = layer(x);
    EXPECT_TENSOR_CLOSE(out, golden.get(name, "out"), testing::kModuleAtol, testing::kModuleRtol);
    out.backward(golden.get(name, "grad_out"));
    EXPECT_TENSOR_CLOSE(x.grad(), golden.get(name, "grad_x"), testing::kModuleAtol, testing::kModuleRtol);
    testing::expect_parameter_grads(layer, golden, name);  // the frozen base gets none
  }
}

TEST(LoRALinear, MergeEqualsUnmergedAndUnmergeRestoresTheBase) {
  Generator gen(3);
  LoRALinear layer(16, 12, {.rank = 4, .alpha = 8.0}, true, gen);
  {
    autograd::NoGradGuard no_grad;
    copy_into(layer.lora_B->weight, randn({12, 4}, gen));
  }
  const Tensor base_before = clone(layer.weight);
  Tensor x = randn({5, 16}, gen);
  const Tensor unmerged = layer(x);
  layer.merge();
  EXPECT_TRUE(layer.merged());
  EXPECT_TENSOR_CLOSE(layer(x), unmerged, 1e-5, 1e-5);
  EXPECT_GT(max(abs(sub(layer.weight, base_before))).item(), 1e-2);
  EXPECT_THROW_WITH(layer.merge(), "LoRALinear", "already merged");
  layer.unmerge();
  EXPECT_TENSOR_CLOSE(layer.weight, base_before, 1e-6, 0);
  EXPECT_TENSOR_CLOSE(layer(x), unmerged, 1e-5, 1e-5);
  EXPECT_THROW_WITH(layer.unmerge(), "LoRALinear", "not merged");
}

TEST(LoRALinear, DropoutOnTheLoRAInputOnlyInTraining) {
  Generator gen(4);
  LoRALinear layer(8, 6, {.rank = 2, .alpha = 2.0, .dropout = 0.5, .dropout_seed = 9}, false, gen);
  {
    autograd::NoGradGuard no_grad;
    copy_into(layer.lora_B->weight, randn({6, 2}, gen));
  }
  Tensor x = randn({3, 8}, gen);
  // training: the LoRA branch sees dropout(x) drawn from the layer's own seeded generator
  Dropout same(0.5, 9);
  const Tensor expected = add(linear(x, layer.weight), mul(linear(linear(same(x), layer.lora_A->weight), layer.lora_B->weight), 1.0));
  EXPECT_TENSOR_CLOSE(layer(x), expected, 1e-6, 1e-6);
  layer.eval();
  const Tensor no_drop = add(linear(x, layer.weight), linear(linear(x, layer.lora_A->weight), layer.lora_B->weight));
  EXPECT_TENSOR_CLOSE(layer(x), no_drop, 1e-6, 1e-6);
}

TEST(LoRALinear, ErrorsNameTheValue) {
  EXPECT_THROW_WITH(LoRALinear(4, 4, {.rank = 0}), "LoRALinear", "rank 0");
  EXPECT_THROW_WITH(LoRALinear(4, 4, {.rank = -2}), "LoRALinear", "rank -2");
  EXPECT_THROW_WITH(LoRALinear(4, 4, {.rank = 2, .alpha = 0.0}), "LoRALinear", "alpha 0");
  EXPECT_THROW_WITH(LoRALinear(4, 4, {.rank = 2, .alpha = -1.5}), "LoRALinear", "alpha -1.5");
  EXPECT_THROW_WITH(LoRALinear(4, 4, {.rank = 2, .alpha = 1.0, .dropout = 1.0}), "LoRALinear", "dropout 1");
}

}  // namespace
}  // namespace nf::nn
