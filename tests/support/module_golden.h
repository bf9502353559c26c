#pragma once
// Golden checks for whole modules: load a module's parameters from a fixture case whose roles carry
// our dotted parameter names ("attn.q_proj.weight"), run the module, and compare the output and the
// gradients of every parameter and every differentiable input with PyTorch's.
#include <functional>
#include <string>
#include <vector>

#include "nanoformer/nn/module.h"
#include "support/golden.h"

namespace nf::testing {

struct ModuleCase {
  std::vector<std::string> inputs;  // roles passed to `run`, in order (leaves where the fixture has their gradient)
  double atol = 1e-5, rtol = 1e-5;  // the fp32 bound: 1e-5 relative plus 1e-5 absolute
};

// Every parameter of `module` must be in the case (a missing one fails the test, naming it).
void load_module_case(nn::Module& module, const Golden& golden, const std::string& case_name);

// Loads the parameters, runs `run(inputs)`, compares "out", back-propagates "grad_out" and compares
// "grad_<input>" and "grad_<parameter>" for every one the fixture holds (all parameters must have one).
void check_module_case(nn::Module& module, const Golden& golden, const std::string& case_name, const ModuleCase& spec,
                       const std::function<Tensor(const std::vector<Tensor>&)>& run);

}  // namespace nf::testing
