// Norms, feed-forward activations and feed-forward modules against PyTorch (fixtures written by
// tools/golden/fixtures_norms.py): every case runs on PyTorch's inputs, compares the output,
// back-propagates PyTorch's upstream gradient and compares the gradient of every input and, for
// the modules, of every parameter by its state-dict name. Cases and their arguments come from the
// fixtures' metadata, so a case added to the generator is tested here without editing this file.
#include <functional>
#include <map>

#include "support/golden.h"
#include "support/testing.h"

namespace nf {
namespace {

using testing::Golden;
using json = nlohmann::json;

// |ours - torch| <= atol + rtol |torch|. f32: the libraries differ by a few ulps per step (summation
// order over rows of at most 100 and hidden sizes of at most 40, the vectorised exp of silu/gelu);
// 1e-5 relative is ~80 ulps, and 1e-5 absolute covers results that cancel to near zero (the
// gradients of a norm's input sum to ~0 along the row). f64: the same argument at 2^-53.
struct Tolerance {
  double atol, rtol;
};
Tolerance tolerance_for(DType dtype) { return dtype == DType::f64 ? Tolerance{1e-12, 1e-10} : Tolerance{1e-5, 1e-5}; }

// The case's differentiable inputs as leaves, by role.
using Inputs = std::map<std::string, Tensor>;
Inputs inputs_of(const Golden& golden, const std::string& name, const std::vector<std::string>& roles) {
  Inputs in;
  for (const std::string& role : roles) {
    if (golden.has(name, role)) in[role] = golden.input(name, role);
  }
  return in;
}

// Compares out, back-propagates grad_out, then compares grad_<role> for every (role, tensor) given.
void expect_matches(const Golden& golden, const std::string& name, const Tensor& out,
                    const std::vector<std::pair<std::string, Tensor>>& differentiable) {
  const Tensor expected = golden.get(name, "out");
  const Tolerance tol = tolerance_for(expected.dtype());
  EXPECT_EQ(out.dtype(), expected.dtype());
  EXPECT_TENSOR_CLOSE(out, expected, tol.atol, tol.rtol);
  out.backward(golden.get(name, "grad_out"));
  for (const auto& [role, t] : differentiable) {
    SCOPED_TRACE("gradient of " + role);
    ASSERT_TRUE(t.grad().defined());
    EXPECT_TENSOR_CLOSE(t.grad(), golden.get(name, "grad_" + role), tol.atol, tol.rtol);
  }
}

// Runs op on every case of `fixture` whose "op" is `op_name`; fails when there is none.
void check_op_cases(const std::string& fixture, const std::string& op_name, const std::vector<std::string>& roles,
                    const std::function<Tensor(const Inputs&, const json&)>& op) {
  const Golden golden(fixture);
  int checked = 0;
  for (const auto& [name, params] : golden.cases().items()) {
    if (params.at("op") != op_name) continue;
    SCOPED_TRACE(fixture + " case " + name);
    const Inputs in = inputs_of(golden, name, roles);
    std::vector<std::pair<std::string, Tensor>> differentiable(in.begin(), in.end());
    expect_matches(golden, name, op(in, params), differentiable);
    ++checked;
  }
  EXPECT_GT(checked, 0) << fixture << ": no case of " << op_name;
}

Tensor maybe(const Inputs& in, const std::string& role) {
  auto it = in.find(role);
  return it == in.end() ? Tensor() : it->second;
}

TEST(NormsGolden, LayerNorm) {
  check_op_cases("norms", "layer_norm", {"x", "weight", "bias"}, [](const Inputs& in, const json& p) {
    const LayerNormForm form = p.value("form", "rsqrt") == "std_plus_eps" ? LayerNormForm::std_plus_eps : LayerNormForm::rsqrt;
    return layer_norm(in.at("x"), maybe(in, "weight"), maybe(in, "bias"), p.at("eps").get<double>(), form);
  });
}

TEST(NormsGolden, RmsNorm) {
  check_op_cases("norms", "rms_norm", {"x", "weight"}, [](const Inputs& in, const json& p) {
    const RmsNormForm form = p.at("form") == "rsqrt" ? RmsNormForm::rsqrt : RmsNormForm::rms_plus_eps;
    return rms_norm(in.at("x"), maybe(in, "weight"), p.at("eps").get<double>(), form);
  });
}

TEST(NormsGolden, ReluSquared) {
  check_op_cases("mlp_activations", "relu_squared", {"x"},
                 [](const Inputs& in, const json&) { return relu_squared(in.at("x")); });
}

TEST(NormsGolden, Swiglu) {
  check_op_cases("mlp_activations", "swiglu", {"gate", "up"},
                 [](const Inputs& in, const json&) { return swiglu(in.at("gate"), in.at("up")); });
}

// Each module built by make_mlp from the case's config, loaded with PyTorch's parameters by name
// (so the names must match exactly), run in eval mode.
TEST(NormsGolden, MLPModules) {
  const Golden golden("mlp");
  int checked = 0;
  for (const auto& [name, p] : golden.cases().items()) {
    SCOPED_TRACE("mlp case " + name);
    const nn::MLPConfig config{.kind = nn::mlp_kind_from_name(p.at("kind").get<std::string>()),
                               .dim = p.at("dim").get<int64_t>(),
                               .hidden = p.at("hidden").get<int64_t>(),
                               .multiple_of = p.at("multiple_of").get<int64_t>(),
                               .bias = p.at("bias").get<bool>(),
                               .dropout = p.at("dropout").get<double>()};
    if (p.contains("derived_hidden")) {
      EXPECT_EQ(nn::mlp_hidden_dim(config), p.at("derived_hidden").get<int64_t>());
    }
    const auto mlp = nn::make_mlp(config);
    nn::StateDict state;
    for (const std::string& parameter : p.at("parameters").get<std::vector<std::string>>()) state[parameter] = golden.get(name, parameter);
    mlp->load_state_dict(state);  // strict: every name must match
    mlp->eval();
    const Tensor x = golden.input(name, "x");
    std::vector<std::pair<std::string, Tensor>> differentiable{{"x", x}};
    for (const auto& named : mlp->named_parameters()) differentiable.push_back(named);
    expect_matches(golden, name, mlp->forward(x), differentiable);
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace nf
