#pragma once
// Helpers shared by the tests: tensor comparison with stated tolerances, error-message checks,
// and golden fixtures (safetensors files written by tools/golden/*.py).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "nanoformer/nanoformer.h"

namespace nf::testing {

// |actual - expected| <= atol + rtol |expected| elementwise (NaNs must match), same shape.
::testing::AssertionResult tensors_close(const Tensor& actual, const Tensor& expected, double atol = 1e-6,
                                         double rtol = 1e-5);
#define EXPECT_TENSOR_CLOSE(actual, expected, ...) EXPECT_TRUE(::nf::testing::tensors_close(actual, expected, ##__VA_ARGS__))

// fn must throw nf::Error whose message contains every one of `parts`.
::testing::AssertionResult throws_with(const std::function<void()>& fn, const std::vector<std::string>& parts);
#define EXPECT_THROW_WITH(stmt, ...) EXPECT_TRUE(::nf::testing::throws_with([&] { (void)(stmt); }, {__VA_ARGS__}))

// Calls fn(multi-index) for every position of `shape` in row-major order.
template <class F>
void for_each_index(const Shape& shape, F fn) {
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t i = 0; i < shape_numel(shape); ++i) {
    fn(idx);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

// A leaf f64 tensor with values drawn uniformly from [low, high), requiring grad (for gradcheck).
Tensor random_leaf(const Shape& shape, uint64_t seed, double low = -1.0, double high = 1.0);

// Runs autograd::gradcheck and reports its message on failure.
::testing::AssertionResult grad_ok(const autograd::TensorFn& f, const std::vector<Tensor>& inputs,
                                   const autograd::GradcheckOptions& options = {});
#define EXPECT_GRAD_OK(...) EXPECT_TRUE(::nf::testing::grad_ok(__VA_ARGS__))

// The presets (configs/*.json) of decoder language models, for the tests of DecoderLMConfig:
// configs/ also holds presets of other architectures.
std::vector<std::string> decoder_lm_presets();

}  // namespace nf::testing
