// scaled_dot_product_attention against F.scaled_dot_product_attention (tools/golden/fixtures_attention.py):
// every case of the "attention" and "attention_window" (sliding windows, as torch's equivalent bool
// mask) fixtures, with both kernels, outputs and gradients of q, k, v and of an additive mask. Tolerance |ours - torch| <= 1e-5 + 1e-5 |torch| in f32 (blocked softmax and
// BLAS tile products sum in another order than torch's math backend, a few ulps apart),
// 1e-12 + 1e-10 |torch| in f64.
#include "support/golden.h"
#include "support/testing.h"

namespace nf {
namespace {

using testing::Golden;

void check_case(const Golden& golden, const std::string& name, AttentionKernel kernel) {
  SCOPED_TRACE(name + (kernel == AttentionKernel::fused ? " (fused)" : " (plain)"));
  const auto& params = golden.cases()[name];
  const Tensor q = golden.input(name, "q"), k = golden.input(name, "k"), v = golden.input(name, "v");
  AttentionOptions options{.causal = params["causal"].get<bool>(), .kernel = kernel};
  if (golden.has(name, "mask")) {
    options.mask = golden.has(name, "grad_mask") ? golden.input(name, "mask") : golden.get(name, "mask");
  }
  if (golden.has(name, "key_padding")) options.key_padding = golden.get(name, "key_padding");
  if (!params["scale"].is_null()) options.scale = params["scale"].get<double>();
  options.window = params.value("window", int64_t{0});

  const Tensor out = scaled_dot_product_attention(q, k, v, options);
  const bool wide = q.dtype() == DType::f64;
  const double atol = wide ? 1e-12 : 1e-5, rtol = wide ? 1e-10 : 1e-5;
  EXPECT_TENSOR_CLOSE(out, golden.get(name, "out"), atol, rtol);
  out.backward(golden.get(name, "grad_out"));
  EXPECT_TENSOR_CLOSE(q.grad(), golden.get(name, "grad_q"), atol, rtol);
  EXPECT_TENSOR_CLOSE(k.grad(), golden.get(name, "grad_k"), atol, rtol);
  EXPECT_TENSOR_CLOSE(v.grad(), golden.get(name, "grad_v"), atol, rtol);
  if (golden.has(name, "grad_mask")) {
    EXPECT_TENSOR_CLOSE(options.mask.grad(), golden.get(name, "grad_mask"), atol, rtol);
  }
}

TEST(AttentionGolden, EveryCaseBothKernels) {
  const Golden golden("attention");
  ASSERT_GE(golden.cases().size(), 10u);
  for (const auto& [name, params] : golden.cases().items()) {
    check_case(golden, name, AttentionKernel::fused);
    check_case(golden, name, AttentionKernel::plain);
  }
}

TEST(AttentionGolden, SlidingWindowEveryCaseBothKernels) {
  const Golden golden("attention_window");
  ASSERT_GE(golden.cases().size(), 10u);
  for (const auto& [name, params] : golden.cases().items()) {
    ASSERT_GT(params["window"].get<int64_t>(), 0) << name;
    check_case(golden, name, AttentionKernel::fused);
    check_case(golden, name, AttentionKernel::plain);
  }
}

}  // namespace
}  // namespace nf
