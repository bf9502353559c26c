// conv2d (im2col + GEMM): forward against a direct 7-loop convolution over stride, padding,
// dilation and groups; gradients against finite differences in f64; PyTorch's F.conv2d goldens;
// errors naming the option at fault.
#include "nanoformer/ops/conv.h"
#include "support/golden.h"
#include "support/testing.h"

namespace nf {
namespace {

using testing::Golden;
using testing::random_leaf;

// out[b, o, i, j] = bias[o] + sum_{c, m, n} x[b, g*C/G + c, i*s - p + m*d, j*s - p + n*d] w[o, c, m, n], in f64
Tensor direct_conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dOptions& o) {
  const int64_t B = x.size(0), H = x.size(2), W = x.size(3);
  const int64_t O = w.size(0), Cg = w.size(1), kh = w.size(2), kw = w.size(3), G = o.groups;
  const int64_t Ho = (H + 2 * o.padding[0] - o.dilation[0] * (kh - 1) - 1) / o.stride[0] + 1;
  const int64_t Wo = (W + 2 * o.padding[1] - o.dilation[1] * (kw - 1) - 1) / o.stride[1] + 1;
  Tensor out = zeros({B, O, Ho, Wo}, DType::f64);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t oc = 0; oc < O; ++oc)
      for (int64_t i = 0; i < Ho; ++i)
        for (int64_t j = 0; j < Wo; ++j) {
          double acc = bias.defined() ? bias.at({oc}) : 0.0;
          const int64_t group = oc / (O / G);
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t m = 0; m < kh; ++m)
              for (int64_t n = 0; n < kw; ++n) {
                const int64_t y = i * o.stride[0] - o.padding[0] + m * o.dilation[0];
                const int64_t z = j * o.stride[1] - o.padding[1] + n * o.dilation[1];
                if (y < 0 || y >= H || z < 0 || z >= W) continue;
                acc += x.at({b, group * Cg + c, y, z}) * w.at({oc, c, m, n});
              }
          out.set({b, oc, i, j}, acc);
        }
  return out;
}

struct ConvCase {
  Shape x, w;
  Conv2dOptions options;
  bool bias;
};

const std::vector<ConvCase> kCases = {
    {{2, 3, 6, 5}, {4, 3, 3, 3}, {}, true},
    {{1, 3, 7, 8}, {2, 3, 3, 2}, {.stride = {2, 3}, .padding = {1, 2}}, false},
    {{2, 2, 9, 7}, {3, 2, 3, 3}, {.padding = {2, 1}, .dilation = {2, 3}}, true},
    {{1, 4, 5, 6}, {6, 2, 2, 3}, {.stride = {1, 2}, .padding = {1, 1}, .groups = 2}, true},
    {{2, 3, 6, 6}, {3, 1, 3, 3}, {.stride = {2, 2}, .padding = {1, 1}, .groups = 3}, false},  // depthwise
    {{1, 2, 4, 4}, {3, 2, 1, 1}, {}, true},                                                   // 1x1
};

TEST(Conv2d, MatchesDirectConvolution) {
  uint64_t seed = 1;
  for (const ConvCase& c : kCases) {
    Tensor x = random_leaf(c.x, seed++), w = random_leaf(c.w, seed++);
    Tensor b = c.bias ? random_leaf({c.w[0]}, seed++) : Tensor();
    EXPECT_TENSOR_CLOSE(conv2d(x, w, b, c.options), direct_conv2d(x, w, b, c.options), 1e-12, 1e-12);
    const Tensor x32 = x.to(DType::f32), w32 = w.to(DType::f32), b32 = c.bias ? b.to(DType::f32) : Tensor();
    EXPECT_TENSOR_CLOSE(conv2d(x32, w32, b32, c.options), direct_conv2d(x, w, b, c.options), 1e-5, 1e-5);
  }
}

TEST(Conv2d, NonContiguousInput) {
  Tensor x = random_leaf({2, 5, 4, 3}, 20);
  Tensor xt = permute(x, {0, 3, 2, 1});  // (2, 3, 4, 5) strided
  Tensor w = random_leaf({2, 3, 2, 2}, 21);
  EXPECT_TENSOR_CLOSE(conv2d(xt, w, {}, {.padding = {1, 1}}), direct_conv2d(xt, w, {}, {.padding = {1, 1}}), 1e-12, 1e-12);
}

TEST(Conv2d, GradientsOfInputWeightAndBias) {
  uint64_t seed = 100;
  for (const ConvCase& c : kCases) {
    std::vector<Tensor> inputs{random_leaf(c.x, seed++), random_leaf(c.w, seed++)};
    if (c.bias) inputs.push_back(random_leaf({c.w[0]}, seed++));
    EXPECT_GRAD_OK(
        [&](const std::vector<Tensor>& in) { return conv2d(in[0], in[1], in.size() > 2 ? in[2] : Tensor(), c.options); },
        inputs);
  }
}

TEST(Conv2d, GoldenAgainstTorch) {
  const Golden golden("conv2d");
  for (const auto& [name, params] : golden.cases().items()) {
    SCOPED_TRACE(name);
    Conv2dOptions o;
    o.stride = params.at("stride").get<std::array<int64_t, 2>>();
    o.padding = params.at("padding").get<std::array<int64_t, 2>>();
    o.dilation = params.at("dilation").get<std::array<int64_t, 2>>();
    o.groups = params.at("groups").get<int64_t>();
    Tensor x = golden.input(name, "x"), w = golden.input(name, "weight");
    Tensor b = golden.has(name, "bias") ? golden.input(name, "bias") : Tensor();
    const bool f64 = x.dtype() == DType::f64;
    const double atol = f64 ? 1e-12 : 1e-5, rtol = f64 ? 1e-10 : 1e-5;
    Tensor out = conv2d(x, w, b, o);
    EXPECT_TENSOR_CLOSE(out, golden.get(name, "out"), atol, rtol);
    out.backward(golden.get(name, "grad_out"));
    EXPECT_TENSOR_CLOSE(x.grad(), golden.get(name, "grad_x"), atol, rtol);
    EXPECT_TENSOR_CLOSE(w.grad(), golden.get(name, "grad_weight"), atol, rtol);
    if (b.defined()) {
      EXPECT_TENSOR_CLOSE(b.grad(), golden.get(name, "grad_bias"), atol, rtol);
    }
  }
}

TEST(Conv2d, ErrorsNameTheOption) {
  Tensor x = zeros({1, 4, 5, 5});
  EXPECT_THROW_WITH(conv2d(x, zeros({2, 2, 3, 3}), {}, {.groups = 3}), "conv2d", "in_channels 4", "groups 3");
  EXPECT_THROW_WITH(conv2d(x, zeros({3, 2, 3, 3}), {}, {.groups = 2}), "conv2d", "out_channels 3", "groups 2");
  EXPECT_THROW_WITH(conv2d(x, zeros({2, 3, 3, 3})), "conv2d", "(2, 3, 3, 3)", "(1, 4, 5, 5)");
  EXPECT_THROW_WITH(conv2d(x, zeros({2, 4, 3, 3}), {}, {.stride = {0, 1}}), "conv2d", "stride 0");
  EXPECT_THROW_WITH(conv2d(x, zeros({2, 4, 3, 3}), {}, {.padding = {-1, 0}}), "conv2d", "padding -1");
  EXPECT_THROW_WITH(conv2d(x, zeros({2, 4, 3, 3}), {}, {.dilation = {1, 0}}), "conv2d", "dilation 0");
  EXPECT_THROW_WITH(conv2d(x, zeros({2, 4, 3, 3}), {}, {.dilation = {3, 3}}), "conv2d", "larger than the padded input");
  EXPECT_THROW_WITH(conv2d(x, zeros({2, 4, 3, 3}), zeros({3})), "conv2d", "bias (3)");
  EXPECT_THROW_WITH(conv2d(zeros({4, 5, 5}), zeros({2, 4, 3, 3})), "conv2d", "4-D", "(4, 5, 5)");
}

}  // namespace
}  // namespace nf
