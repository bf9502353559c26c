#include "support/module_golden.h"

#include "support/testing.h"

namespace nf::testing {

void load_case_parameters(nn::Module& m, const Golden& golden, const std::string& case_name) {
  nn::StateDict state;
  for (const auto& [name, p] : m.named_parameters()) state[name] = golden.get(case_name, name);
  m.load_state_dict(state, /*strict=*/false);  // parameters only: buffers keep their values
}

void expect_parameter_grads(const nn::Module& m, const Golden& golden, const std::string& case_name, double atol,
                            double rtol) {
  for (const auto& [name, p] : m.named_parameters()) {
    SCOPED_TRACE("gradient of " + name);
    if (!golden.has(case_name, "grad_" + name)) {
      EXPECT_FALSE(p.grad().defined());
      continue;
    }
    ASSERT_TRUE(p.grad().defined());
    EXPECT_TENSOR_CLOSE(p.grad(), golden.get(case_name, "grad_" + name), atol, rtol);
  }
}

void check_module_case(nn::Module& module, const Golden& golden, const std::string& case_name, const ModuleCase& spec,
                       const std::function<Tensor(const std::vector<Tensor>&)>& run) {
  SCOPED_TRACE(golden.name() + " case " + case_name);
  try {
    load_case_parameters(module, golden, case_name);
    module.zero_grad();
    std::vector<Tensor> inputs;
    for (const std::string& role : spec.inputs)
      inputs.push_back(golden.has(case_name, "grad_" + role) ? golden.input(case_name, role) : golden.get(case_name, role));
    const Tensor out = run(inputs);
    EXPECT_TENSOR_CLOSE(out, golden.get(case_name, "out"), spec.atol, spec.rtol);
    out.backward(golden.get(case_name, "grad_out"));
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!golden.has(case_name, "grad_" + spec.inputs[i])) continue;
      SCOPED_TRACE("gradient of input " + spec.inputs[i]);
      EXPECT_TENSOR_CLOSE(inputs[i].grad(), golden.get(case_name, "grad_" + spec.inputs[i]), spec.atol, spec.rtol);
    }
    expect_parameter_grads(module, golden, case_name, spec.atol, spec.rtol);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw: " << e.what();
  }
}

}  // namespace nf::testing
