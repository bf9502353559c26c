// Our ops against PyTorch: every case of every golden fixture (tools/golden/generate_all.py) runs
// the op on PyTorch's inputs, compares the result, then back-propagates PyTorch's upstream gradient
// and compares the gradient of every differentiable input. The cases and their arguments are read
// from the fixture's metadata, so a case added to the generator is tested without touching this file.
#include <functional>

#include "support/golden.h"
#include "support/testing.h"

namespace nf {
namespace {

using testing::Golden;
using json = nlohmann::json;

// Tolerances, |ours - torch| <= atol + rtol |torch|:
//  f32: the two libraries round differently (vectorised vs. scalar exp/erf/tanh, other summation
//       orders, fused multiply-adds), each result carrying a few ulps (2^-24 ~ 6e-8) of error per
//       step. With O(1..100) values and at most 30-term reductions the results differ by well under
//       100 ulps: rtol 1e-5 (~ 80 ulps); atol 1e-6 covers results that cancel to near zero
//       (gradients of softmax or of a mean), where a relative bound means nothing.
//  f64: the same argument at 2^-53 ~ 1e-16 gives rtol 1e-10 and atol 1e-12, still far below any
//       formula error (the gelu tanh approximation alone differs from erf gelu by ~1e-4).
// Measured with torch 2.15: the worst f32 difference is 2.5e-7 (a gelu gradient in the tail) and
// every f64 case passes at 100x tighter bounds. An error in a formula, a reduction over the wrong
// dim or a missing broadcast-sum is orders of magnitude larger (ComparisonCatchesASmallPerturbation
// shows the bound bites).
struct Tolerance {
  double atol, rtol;
};
Tolerance tolerance_for(DType dtype) { return dtype == DType::f64 ? Tolerance{1e-12, 1e-10} : Tolerance{1e-6, 1e-5}; }

using CaseOp = std::function<Tensor(const std::vector<Tensor>& inputs, const json& params)>;

// Runs one case: op forward on the stored inputs (leaves requiring grad where the fixture holds
// their gradient), compare "out", backward with "grad_out", compare each "grad_<input>".
void check_case(const Golden& golden, const std::string& name, const std::vector<std::string>& roles, const CaseOp& op) {
  SCOPED_TRACE(golden.name() + " case " + name);
  try {
    std::vector<Tensor> inputs;
    for (const std::string& role : roles) {
      inputs.push_back(golden.has(name, "grad_" + role) ? golden.input(name, role) : golden.get(name, role));
    }
    const Tensor expected = golden.get(name, "out");
    const Tolerance tol = tolerance_for(expected.dtype());
    const Tensor out = op(inputs, golden.cases()[name]);
    EXPECT_EQ(out.dtype(), expected.dtype());
    EXPECT_TENSOR_CLOSE(out, expected, tol.atol, tol.rtol);
    out.backward(golden.get(name, "grad_out"));
    for (size_t i = 0; i < roles.size(); ++i) {
      if (!golden.has(name, "grad_" + roles[i])) continue;
      SCOPED_TRACE("gradient of " + roles[i]);
      EXPECT_TENSOR_CLOSE(inputs[i].grad(), golden.get(name, "grad_" + roles[i]), tol.atol, tol.rtol);
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw: " << e.what();
  }
}

// Checks every case of `fixture` accepted by `select` (all by default); fails if none matched.
void check_fixture(const std::string& fixture, const std::vector<std::string>& roles, const CaseOp& op,
                   const std::function<bool(const json&)>& select = {}) {
  const Golden golden(fixture);
  int checked = 0;
  for (const auto& [name, params] : golden.cases().items()) {
    if (select && !select(params)) continue;
    check_case(golden, name, roles, op);
    ++checked;
  }
  EXPECT_GT(checked, 0) << fixture << ": no case selected";
}

std::function<bool(const json&)> op_is(const std::string& op) {
  return [op](const json& params) { return params.at("op") == op; };
}

std::vector<int64_t> dims_of(const json& params) { return params.at("dims").get<std::vector<int64_t>>(); }

Reduction reduction_of(const std::string& name) {
  if (name == "mean") return Reduction::mean;
  if (name == "sum") return Reduction::sum;
  NF_CHECK(name == "none", "golden: unknown reduction '", name, "'");
  return Reduction::none;
}

// ---- the comparison itself ----

TEST(Golden, MissingFixtureIsAClearError) {
  EXPECT_THROW_WITH(Golden("no_such_fixture"), "golden fixture 'no_such_fixture' is missing", "make golden");
  const Golden golden("matmul");
  EXPECT_THROW_WITH(golden.get("2d", "no_such_role"), "has no tensor '2d.no_such_role'", "make golden");
}

TEST(Golden, FixturesComeFromPyTorch) {
  for (const char* fixture : {"softmax", "log_softmax", "cross_entropy", "activations", "broadcast", "matmul",
                              "linear", "reduce"}) {
    const Golden golden(fixture);
    EXPECT_FALSE(golden.torch_version().empty()) << fixture;
  }
}

TEST(Golden, ComparisonCatchesASmallPerturbation) {
  const Golden golden("matmul");
  const Tensor out = matmul(golden.get("2d", "a"), golden.get("2d", "b"));
  const Tensor expected = golden.get("2d", "out");
  const Tolerance tol = tolerance_for(DType::f32);
  EXPECT_TRUE(testing::tensors_close(out, expected, tol.atol, tol.rtol));
  const Tensor off = expected.clone();
  off.set({1, 2}, off.at({1, 2}) * (1 + 1e-4));  // a 0.01% error in one element
  EXPECT_FALSE(testing::tensors_close(out, off, tol.atol, tol.rtol));
}

// ---- matmul and linear ----

TEST(Golden, Matmul) {
  check_fixture("matmul", {"a", "b"}, [](const std::vector<Tensor>& in, const json&) { return matmul(in[0], in[1]); });
}

TEST(Golden, Linear) {
  const Golden golden("linear");
  for (const auto& [name, params] : golden.cases().items()) {
    const bool has_bias = golden.has(name, "bias");
    check_case(golden, name, has_bias ? std::vector<std::string>{"x", "weight", "bias"} : std::vector<std::string>{"x", "weight"},
               [has_bias](const std::vector<Tensor>& in, const json&) {
                 return has_bias ? linear(in[0], in[1], in[2]) : linear(in[0], in[1]);
               });
  }
}

// ---- elementwise ----

TEST(Golden, BroadcastingArithmetic) {
  const std::map<std::string, std::function<Tensor(const Tensor&, const Tensor&)>> ops = {
      {"add", [](const Tensor& a, const Tensor& b) { return a + b; }},
      {"sub", [](const Tensor& a, const Tensor& b) { return a - b; }},
      {"mul", [](const Tensor& a, const Tensor& b) { return a * b; }},
      {"div", [](const Tensor& a, const Tensor& b) { return a / b; }}};
  for (const auto& [op_name, op] : ops) {
    check_fixture("broadcast", {"a", "b"}, [&op](const std::vector<Tensor>& in, const json&) { return op(in[0], in[1]); },
                  op_is(op_name));
  }
  check_fixture("broadcast", {"a", "b", "c"},
                [](const std::vector<Tensor>& in, const json&) {
                  const Tensor &a = in[0], &b = in[1], &c = in[2];
                  return (a * b + c) / (b * b + 1.0);
                },
                op_is("(a * b + c) / (b * b + 1)"));
}

TEST(Golden, GeluExact) {
  check_fixture("activations", {"x"}, [](const std::vector<Tensor>& in, const json&) { return gelu(in[0], GeluApprox::none); },
                op_is("gelu_none"));
}

TEST(Golden, GeluTanh) {
  check_fixture("activations", {"x"}, [](const std::vector<Tensor>& in, const json&) { return gelu(in[0], GeluApprox::tanh); },
                op_is("gelu_tanh"));
}

TEST(Golden, Silu) {
  check_fixture("activations", {"x"}, [](const std::vector<Tensor>& in, const json&) { return silu(in[0]); }, op_is("silu"));
}

TEST(Golden, Sigmoid) {
  check_fixture("activations", {"x"}, [](const std::vector<Tensor>& in, const json&) { return sigmoid(in[0]); },
                op_is("sigmoid"));
}

TEST(Golden, Softplus) {
  check_fixture("activations", {"x"}, [](const std::vector<Tensor>& in, const json&) { return softplus(in[0]); },
                op_is("softplus"));
}

TEST(Golden, Tanh) {
  check_fixture("activations", {"x"}, [](const std::vector<Tensor>& in, const json&) { return tanh(in[0]); }, op_is("tanh"));
}

// ---- softmax and losses ----

TEST(Golden, Softmax) {
  check_fixture("softmax", {"x"},
                [](const std::vector<Tensor>& in, const json& p) { return softmax(in[0], p.at("dim").get<int64_t>()); });
}

TEST(Golden, LogSoftmax) {
  check_fixture("log_softmax", {"x"},
                [](const std::vector<Tensor>& in, const json& p) { return log_softmax(in[0], p.at("dim").get<int64_t>()); });
}

TEST(Golden, CrossEntropy) {
  check_fixture("cross_entropy", {"logits", "target"}, [](const std::vector<Tensor>& in, const json& p) {
    return cross_entropy(in[0], in[1], p.at("ignore_index").get<int64_t>(), reduction_of(p.at("reduction")));
  });
}

// ---- reductions ----

TEST(Golden, Sum) {
  check_fixture("reduce", {"x"},
                [](const std::vector<Tensor>& in, const json& p) { return sum(in[0], dims_of(p), p.at("keepdim").get<bool>()); },
                op_is("sum"));
}

TEST(Golden, Mean) {
  check_fixture("reduce", {"x"},
                [](const std::vector<Tensor>& in, const json& p) { return mean(in[0], dims_of(p), p.at("keepdim").get<bool>()); },
                op_is("mean"));
}

TEST(Golden, Var) {
  check_fixture("reduce", {"x"},
                [](const std::vector<Tensor>& in, const json& p) {
                  return var(in[0], dims_of(p), p.at("correction").get<int64_t>(), p.at("keepdim").get<bool>());
                },
                op_is("var"));
}

}  // namespace
}  // namespace nf
