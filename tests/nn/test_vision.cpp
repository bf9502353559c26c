// nn::Conv2d (names, init, errors) and the ViT PatchEmbedding of reference 000: golden against a
// PyTorch version written from 000, equality with a Conv2d of kernel = stride = patch, errors.
#include "support/module_golden.h"
#include "support/testing.h"
#include "nanoformer/nn/conv.h"
#include "nanoformer/nn/patch_embed.h"

namespace nf::nn {
namespace {

using testing::Golden;

TEST(Conv2dModule, NamesShapesAndTorchInitBounds) {
  Generator gen(3);
  Conv2d conv(6, 4, {3, 2}, {.groups = 2}, true, gen);
  auto params = conv.named_parameters();
  ASSERT_EQ(params.size(), 2u);
  EXPECT_EQ(params[0].first, "weight");
  EXPECT_EQ(params[0].second.shape(), (Shape{4, 3, 3, 2}));
  EXPECT_EQ(params[1].first, "bias");
  const double bound = 1.0 / std::sqrt(3.0 * 3 * 2);  // fan_in = in/groups * kh * kw
  EXPECT_LE(max(abs(conv.weight)).item(), bound);
  EXPECT_GT(max(abs(conv.weight)).item(), 0.8 * bound);
  EXPECT_LE(max(abs(conv.bias)).item(), bound);
  Tensor x = randn({2, 6, 5, 4}, gen);
  EXPECT_TENSOR_CLOSE(conv(x), conv2d(x, conv.weight, conv.bias, {.groups = 2}), 0, 0);
  EXPECT_FALSE(Conv2d(6, 4, {1, 1}, {}, false).bias.defined());
}

TEST(Conv2dModule, ErrorsNameTheOption) {
  EXPECT_THROW_WITH(Conv2d(6, 4, {3, 3}, {.groups = 4}), "Conv2d", "in_channels 6", "groups 4");
  EXPECT_THROW_WITH(Conv2d(6, 4, {3, 3}, {.groups = 3}), "Conv2d", "out_channels 4", "groups 3");
  EXPECT_THROW_WITH(Conv2d(6, 4, {0, 3}), "Conv2d", "kernel_size 0x3");
  EXPECT_THROW_WITH(Conv2d(6, 4, {3, 3}, {.stride = {1, 0}}), "Conv2d", "stride 0");
  EXPECT_THROW_WITH(Conv2d(6, 4, {3, 3}, {.dilation = {0, 1}}), "Conv2d", "dilation 0");
  EXPECT_THROW_WITH(Conv2d(6, 4, {3, 3})(zeros({1, 5, 8, 8})), "Conv2d", "(1, 5, 8, 8)");
}

TEST(PatchEmbedding, GoldenAgainstReference000) {
  const Golden golden("patch_embed");
  for (const auto& [name, p] : golden.cases().items()) {
    SCOPED_TRACE(name);
    PatchEmbedding pe(p.at("img_size"), p.at("patch_size"), p.at("in_channels"), p.at("embed_dim"));
    testing::load_case_parameters(pe, golden, name);
    Tensor x = golden.input(name, "x");
    Tensor out = pe(x);
    EXPECT_EQ(pe.num_patches(), out.size(1));
    EXPECT_TENSOR_CLOSE(out, golden.get(name, "out"), testing::kModuleAtol, testing::kModuleRtol);
    out.backward(golden.get(name, "grad_out"));
    EXPECT_TENSOR_CLOSE(x.grad(), golden.get(name, "grad_x"), testing::kModuleAtol, testing::kModuleRtol);
    testing::expect_parameter_grads(pe, golden, name);
  }
}

TEST(PatchEmbedding, EqualsConvWithKernelAndStrideOfThePatch) {
  Generator gen(5);
  PatchEmbedding pe(12, 4, 3, 7, gen);
  Tensor x = randn({2, 3, 12, 12}, gen);
  // proj.weight (D, C*P*P) flattened as (channel, row, column) is a conv weight (D, C, P, P)
  Tensor conv = conv2d(x, pe.proj->weight.reshape({7, 3, 4, 4}), pe.proj->bias, {.stride = {4, 4}});  // (B, D, 3, 3)
  Tensor as_tokens = transpose(flatten(conv, 2), 1, 2);  // (B, 9, D)
  EXPECT_TENSOR_CLOSE(pe(x), as_tokens, 1e-5, 1e-5);
}

TEST(PatchEmbedding, Errors) {
  EXPECT_THROW_WITH(PatchEmbedding(32, 5, 3, 8), "PatchEmbedding", "patch_size 5", "img_size 32");
  EXPECT_THROW_WITH(PatchEmbedding(32, 8, 3, 8)(zeros({1, 3, 32, 16})), "PatchEmbedding", "(1, 3, 32, 16)");
}

}  // namespace
}  // namespace nf::nn
