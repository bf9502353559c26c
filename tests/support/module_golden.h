#pragma once
// Golden checks for whole modules. A fixture case stores every parameter under its state-dict name
// ("<case>.attn.q_proj.weight") and, where PyTorch computed one, its gradient as
// "<case>.grad_<name>"; the helpers load the parameters into our module by name and compare.
#include <functional>
#include <string>
#include <vector>

#include "nanoformer/nn/module.h"
#include "support/golden.h"

namespace nf::testing {

// f32 module goldens: |ours - torch| <= 1e-5 + 1e-5 |torch| (the bound for unit-scale inputs).
inline constexpr double kModuleAtol = 1e-5, kModuleRtol = 1e-5;

// Copies every parameter of `m` from the case (strict: the fixture must name them all).
void load_case_parameters(nn::Module& m, const Golden& golden, const std::string& case_name);

// Each parameter's gradient equals the fixture's; a parameter without one there (frozen) has none.
void expect_parameter_grads(const nn::Module& m, const Golden& golden, const std::string& case_name,
                            double atol = kModuleAtol, double rtol = kModuleRtol);

struct ModuleCase {
  std::vector<std::string> inputs;  // roles passed to `run`, in order (leaves where the fixture has their gradient)
  double atol = kModuleAtol, rtol = kModuleRtol;
};

// Loads the parameters, runs `run(inputs)`, compares "out", back-propagates "grad_out" and compares
// "grad_<input>" for every input and the gradient of every parameter.
void check_module_case(nn::Module& module, const Golden& golden, const std::string& case_name, const ModuleCase& spec,
                       const std::function<Tensor(const std::vector<Tensor>&)>& run);

}  // namespace nf::testing
