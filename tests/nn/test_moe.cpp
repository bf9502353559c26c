// MoE: MiniMind's parameter names, golden against a PyTorch MoE written from references 000 / 001 /
// 002 for every routing rule (output, auxiliary loss, gradients of x, router and every expert),
// grouped dispatch equal to a per-token loop, token counts, eval mode, errors.
#include "support/module_golden.h"
#include "support/testing.h"
#include "nanoformer/nn/moe.h"
#include "nanoformer/ops/topk.h"

namespace nf::nn {
namespace {

using testing::Golden;

// MiniMind's FeedForward: y = w2(silu(w1 x) * w3 x), no biases.
struct SwiGLUExpert : UnaryModule {
  std::shared_ptr<Linear> w1, w2, w3;
  SwiGLUExpert(int64_t dim, int64_t hidden, Generator& gen) : UnaryModule("SwiGLUExpert") {
    w1 = register_module("w1", std::make_shared<Linear>(dim, hidden, false, gen));
    w2 = register_module("w2", std::make_shared<Linear>(hidden, dim, false, gen));
    w3 = register_module("w3", std::make_shared<Linear>(dim, hidden, false, gen));
  }
  Tensor forward(const Tensor& x) override { return (*w2)(mul(silu((*w1)(x)), (*w3)(x))); }
};

ExpertFactory swiglu(int64_t dim, int64_t hidden) {
  return [dim, hidden](Generator& gen) { return std::make_shared<SwiGLUExpert>(dim, hidden, gen); };
}

MoERouting routing_of(const std::string& name) {
  if (name == "topk_then_softmax") return MoERouting::topk_then_softmax;
  if (name == "softmax_then_topk") return MoERouting::softmax_then_topk;
  return MoERouting::dense;
}

MoEConfig config_of(const nlohmann::json& p) {
  return {.dim = p.at("dim"),
          .n_experts = p.at("n_experts"),
          .top_k = p.at("top_k"),
          .routing = routing_of(p.at("routing")),
          .norm_topk_prob = p.at("norm_topk_prob"),
          .n_shared_experts = p.at("n_shared_experts"),
          .gate_bias = p.at("gate_bias"),
          .aux_loss_alpha = p.at("aux_loss_alpha"),
          .seq_aux = p.at("seq_aux")};
}

TEST(MoE, MiniMindParameterNames) {
  MoE moe({.dim = 4, .n_experts = 2, .top_k = 1, .n_shared_experts = 1}, swiglu(4, 6));
  std::vector<std::string> names;
  for (const auto& [n, t] : moe.named_parameters()) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"gate.weight", "experts.0.w1.weight", "experts.0.w2.weight",
                                             "experts.0.w3.weight", "experts.1.w1.weight", "experts.1.w2.weight",
                                             "experts.1.w3.weight", "shared_experts.0.w1.weight",
                                             "shared_experts.0.w2.weight", "shared_experts.0.w3.weight"}));
}

TEST(MoE, GoldenForEveryRoutingRule) {
  const Golden golden("moe");
  for (const auto& [name, p] : golden.cases().items()) {
    SCOPED_TRACE(name);
    MoE moe(config_of(p), swiglu(p.at("dim"), p.at("hidden")));
    testing::load_case_parameters(moe, golden, name);
    Tensor x = golden.input(name, "x");
    MoEOutput r = moe.route(x);
    EXPECT_TENSOR_CLOSE(r.output, golden.get(name, "out"), testing::kModuleAtol, testing::kModuleRtol);
    EXPECT_TENSOR_CLOSE(r.aux_loss, golden.get(name, "aux_loss"), testing::kModuleAtol, testing::kModuleRtol);
    // d(sum(out * grad_out) + aux) / d(x, every parameter)
    Tensor loss = add(sum(mul(r.output, golden.get(name, "grad_out"))), r.aux_loss);
    loss.backward();
    EXPECT_TENSOR_CLOSE(x.grad(), golden.get(name, "grad_x"), testing::kModuleAtol, testing::kModuleRtol);
    testing::expect_parameter_grads(moe, golden, name);
    int64_t routed = 0;
    for (int64_t c : r.tokens_per_expert) routed += c;
    const int64_t tokens = x.numel() / x.size(-1);
    EXPECT_EQ(routed, p.at("routing") == "dense" ? tokens * p.at("n_experts").get<int64_t>()
                                                 : tokens * p.at("top_k").get<int64_t>());
  }
}

// The same mixture computed token by token: y_t = sum_j w_tj E_{e_tj}(x_t) + sum_s S_s(x_t).
TEST(MoE, GroupedDispatchEqualsPerTokenLoop) {
  Generator gen(7);
  MoE moe({.dim = 6, .n_experts = 5, .top_k = 2, .norm_topk_prob = true, .n_shared_experts = 1}, swiglu(6, 10), gen);
  Tensor x = randn({3, 7, 6}, gen);
  MoEOutput r = moe.route(x);
  const Tensor xf = x.reshape({21, 6});
  const Tensor probs = softmax(moe.gate->forward(xf), -1);
  const TopK chosen = topk(probs, 2);
  std::vector<int64_t> counts(5, 0);
  for (int64_t t = 0; t < 21; ++t) {
    const Tensor row = narrow(xf, 0, t, 1);
    const double w0 = chosen.values.at({t, 0}), w1 = chosen.values.at({t, 1});
    Tensor y = (*moe.shared_experts)[0]->forward(row);
    for (int64_t j = 0; j < 2; ++j) {
      const int64_t e = static_cast<int64_t>(chosen.indices.at({t, j}));
      ++counts[static_cast<size_t>(e)];
      y = add(y, mul((*moe.experts)[static_cast<size_t>(e)]->forward(row), (j == 0 ? w0 : w1) / (w0 + w1)));
    }
    EXPECT_TENSOR_CLOSE(narrow(r.output.reshape({21, 6}), 0, t, 1), y, 1e-6, 1e-5);
  }
  EXPECT_EQ(r.tokens_per_expert, counts);
}

TEST(MoE, ForwardKeepsAuxLossAndEvalModeDropsIt) {
  Generator gen(8);
  MoE moe({.dim = 4, .n_experts = 3, .top_k = 2}, swiglu(4, 5), gen);
  Tensor x = randn({2, 3, 4}, gen);
  const Tensor y = moe(x);
  EXPECT_TENSOR_CLOSE(y, moe.route(x).output, 0, 0);
  EXPECT_GT(moe.aux_loss().item(), 0.0);
  EXPECT_EQ(moe.tokens_per_expert().size(), 3u);
  moe.eval();
  moe(x);
  EXPECT_EQ(moe.aux_loss().item(), 0.0);
}

TEST(MoE, ErrorsNameTheValues) {
  auto make = [](MoEConfig c) { return MoE(c, swiglu(4, 4)); };
  EXPECT_THROW_WITH(make({.dim = 4, .n_experts = 3, .top_k = 4}), "MoE", "top_k 4", "n_experts 3");
  EXPECT_THROW_WITH(make({.dim = 4, .n_experts = 3, .top_k = 0}), "MoE", "top_k 0");
  EXPECT_THROW_WITH(make({.dim = 4, .n_experts = 0, .top_k = 1}), "MoE", "n_experts 0");
  EXPECT_THROW_WITH(make({.dim = 0}), "MoE", "dim 0");
  EXPECT_THROW_WITH(make({.dim = 4, .n_shared_experts = -1}), "MoE", "n_shared_experts -1");
  EXPECT_THROW_WITH(make({.dim = 4, .routing = MoERouting::dense}), "MoE", "aux_loss_alpha 0.1", "dense");
  EXPECT_THROW_WITH(MoE({.dim = 4}, swiglu(4, 4)).route(zeros({2, 5})), "MoE", "(2, 5)", "dim 4");
}

}  // namespace
}  // namespace nf::nn
