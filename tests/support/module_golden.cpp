#include "support/module_golden.h"

#include "support/testing.h"

namespace nf::testing {

void load_module_case(nn::Module& module, const Golden& golden, const std::string& case_name) {
  nn::StateDict state;
  for (const auto& [name, p] : module.state_dict()) {
    ASSERT_TRUE(golden.has(case_name, name)) << golden.name() << " case " << case_name << " has no parameter " << name;
    state[name] = golden.get(case_name, name);
  }
  module.load_state_dict(state);
}

void check_module_case(nn::Module& module, const Golden& golden, const std::string& case_name, const ModuleCase& spec,
                       const std::function<Tensor(const std::vector<Tensor>&)>& run) {
  SCOPED_TRACE(golden.name() + " case " + case_name);
  try {
    load_module_case(module, golden, case_name);
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
    for (const auto& [name, p] : module.named_parameters()) {
      SCOPED_TRACE("gradient of parameter " + name);
      ASSERT_TRUE(golden.has(case_name, "grad_" + name));
      ASSERT_TRUE(p.grad().defined());
      EXPECT_TENSOR_CLOSE(p.grad(), golden.get(case_name, "grad_" + name), spec.atol, spec.rtol);
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw: " << e.what();
  }
}

}  // namespace nf::testing
