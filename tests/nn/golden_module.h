#pragma once
// Module golden cases: a fixture case stores every parameter under its state_dict name
// ("<case>.experts.0.w1.weight") and its gradient as "<case>.grad_<name>" when PyTorch computed one.
#include <string>

#include "nanoformer/nn/module.h"
#include "support/golden.h"
#include "support/testing.h"

namespace nf::testing {

// f32 module goldens: |ours - torch| <= 1e-5 + 1e-5 |torch|.
inline constexpr double kModuleAtol = 1e-5, kModuleRtol = 1e-5;

// Copies every parameter of `m` from the case (strict: the fixture must name them all).
inline void load_case_parameters(nn::Module& m, const Golden& golden, const std::string& name) {
  nn::StateDict state;
  for (const auto& [param, tensor] : m.named_parameters()) state[param] = golden.get(name, param);
  m.load_state_dict(state);
}

// Each parameter's gradient equals the fixture's; a parameter without one in the fixture has none.
inline void expect_parameter_grads(const nn::Module& m, const Golden& golden, const std::string& name) {
  for (const auto& [param, tensor] : m.named_parameters()) {
    SCOPED_TRACE("gradient of " + param);
    if (!golden.has(name, "grad_" + param)) {
      EXPECT_FALSE(tensor.grad().defined());
      continue;
    }
    ASSERT_TRUE(tensor.grad().defined());
    EXPECT_TENSOR_CLOSE(tensor.grad(), golden.get(name, "grad_" + param), kModuleAtol, kModuleRtol);
  }
}

}  // namespace nf::testing
