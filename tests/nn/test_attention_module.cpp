// MultiHeadAttention: against torch.nn.MultiheadAttention and a nanochat-style GQA + QK-norm layer
// (golden "multihead_attention": outputs, weights, gradients of inputs and of every parameter,
// both kernels), its parameter names and shapes, configuration errors, the positional hook, and
// dropout in training only; the learned QK-norm (Qwen3's) before RoPE.
#include <limits>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/nn/attention.h"
#include "nanoformer/nn/positional.h"
#include "support/golden.h"
#include "support/module_golden.h"
#include "support/testing.h"

namespace nf::nn {
namespace {

using testing::Golden;

AttentionConfig config_of(const nlohmann::json& p) {
  AttentionConfig c{.dim = p["dim"].get<int64_t>(),
                    .n_heads = p["n_heads"].get<int64_t>(),
                    .n_kv_heads = p["n_kv_heads"].get<int64_t>(),
                    .head_dim = p["head_dim"].get<int64_t>(),
                    .bias = p["bias"].get<bool>(),
                    .qk_norm = p["qk_norm"].get<bool>(),
                    .causal = p["causal"].get<bool>()};
  if (!p["scale"].is_null()) c.scale = p["scale"].get<double>();
  return c;
}

void check_module_case(const Golden& golden, const std::string& name) {
  SCOPED_TRACE(name);
  MultiHeadAttention attn(config_of(golden.cases()[name]));
  testing::load_case_parameters(attn, golden, name);
  const Tensor x = golden.input(name, "x");
  const Tensor context = golden.has(name, "context") ? golden.input(name, "context") : Tensor();
  AttentionMasks masks;
  if (golden.has(name, "key_padding")) masks.key_padding = golden.get(name, "key_padding");

  const double tol = 1e-5;
  const Tensor out = attn.forward(x, {.context = context, .masks = masks});
  EXPECT_TENSOR_CLOSE(out, golden.get(name, "out"), tol, tol);
  if (golden.has(name, "weights")) {
    NoGradGuard no_grad;
    Tensor weights;
    attn.forward(x, {.context = context, .masks = masks}, &weights);
    EXPECT_TENSOR_CLOSE(weights, golden.get(name, "weights"), tol, tol);
  }
  out.backward(golden.get(name, "grad_out"));
  EXPECT_TENSOR_CLOSE(x.grad(), golden.get(name, "grad_x"), tol, tol);
  if (context.defined()) {
    EXPECT_TENSOR_CLOSE(context.grad(), golden.get(name, "grad_context"), tol, tol);
  }
  testing::expect_parameter_grads(attn, golden, name, tol, tol);
}

TEST(MultiHeadAttentionGolden, TorchMultiheadAttentionAndNanochatLayer) {
  const Golden golden("multihead_attention");
  ASSERT_GE(golden.cases().size(), 6u);
  for (const auto& [name, params] : golden.cases().items()) {
    check_module_case(golden, name);
  }
}

TEST(MultiHeadAttention, ParameterNamesAndGqaShapes) {
  MultiHeadAttention attn({.dim = 32, .n_heads = 8, .n_kv_heads = 2, .bias = true});
  std::vector<std::string> names;
  for (const auto& [n, t] : attn.named_parameters()) names.push_back(n + " " + shape_str(t.shape()));
  EXPECT_EQ(names, (std::vector<std::string>{"q_proj.weight (32, 32)", "q_proj.bias (32)", "k_proj.weight (8, 32)",
                                             "k_proj.bias (8)", "v_proj.weight (8, 32)", "v_proj.bias (8)",
                                             "o_proj.weight (32, 32)", "o_proj.bias (32)"}));
  MultiHeadAttention wide({.dim = 12, .n_heads = 2, .head_dim = 8, .context_dim = 5});
  EXPECT_EQ(wide.q_proj->weight.shape(), Shape({16, 12}));
  EXPECT_EQ(wide.k_proj->weight.shape(), Shape({16, 5}));
  EXPECT_EQ(wide.o_proj->weight.shape(), Shape({12, 16}));
  EXPECT_FALSE(wide.q_proj->bias.defined());
}

TEST(MultiHeadAttention, ConfigurationErrorsNameTheValues) {
  EXPECT_THROW_WITH(MultiHeadAttention({.dim = 32, .n_heads = 8, .n_kv_heads = 3}), "n_heads 8",
                    "not divisible by n_kv_heads 3");
  EXPECT_THROW_WITH(MultiHeadAttention({.dim = 10, .n_heads = 3}), "dim 10", "not divisible by n_heads 3");
  EXPECT_THROW_WITH(MultiHeadAttention({.dim = 8, .n_heads = 2, .dropout = 1.5}), "dropout 1.5");
  MultiHeadAttention attn({.dim = 8, .n_heads = 2});
  EXPECT_THROW_WITH(attn.forward(zeros({2, 3, 6})), "MultiHeadAttention", "(2, 3, 6)", "dim = 8");
  EXPECT_THROW_WITH(attn.forward(zeros({2, 3, 8}), {.context = zeros({1, 4, 8})}), "context", "(1, 4, 8)");
}

// A stand-in positional scheme: scales q by (1 + q_offset / 10), shifts k by k_offset / 10, and adds
// an ALiBi-like bias -|pos_i - pos_j| / 4; records the offsets it was given.
struct ToyPosition : AttentionPosition {
  int64_t seen_q_offset = -1, seen_k_offset = -1;
  ToyPosition() : AttentionPosition("ToyPosition") {}
  Tensor rotate_queries(const Tensor& q, int64_t q_offset) override {
    seen_q_offset = q_offset;
    return q * (1.0 + static_cast<double>(q_offset) / 10.0);
  }
  Tensor rotate_keys(const Tensor& k, int64_t k_offset) override {
    seen_k_offset = k_offset;
    return k + static_cast<double>(k_offset) / 10.0;
  }
  Tensor score_bias(const Tensor& q, const Tensor& k, int64_t q_offset, int64_t k_offset) override {
    return bias(q.size(2), k.size(2), q_offset, k_offset);
  }
  static Tensor bias(int64_t tq, int64_t tk, int64_t q_offset, int64_t k_offset) {
    Tensor b = zeros({1, 1, tq, tk});
    for (int64_t i = 0; i < tq; ++i) {
      for (int64_t j = 0; j < tk; ++j) b.set({0, 0, i, j}, -std::abs(static_cast<double>((q_offset + i) - (k_offset + j))) / 4.0);
    }
    return b;
  }
};

// The layer written out by hand with the toy scheme: the hook must act exactly there.
Tensor by_hand(MultiHeadAttention& attn, const Tensor& x, const Tensor& context, int64_t q_offset, const Tensor& keep) {
  const AttentionConfig& c = attn.config();
  const Tensor& src = context.defined() ? context : x;
  const int64_t k_offset = context.defined() ? 0 : q_offset;
  const auto heads = [](const Tensor& t, int64_t h, int64_t d) { return t.reshape({t.size(0), t.size(1), h, d}).transpose(1, 2); };
  const Tensor q = heads(attn.q_proj->forward(x), c.n_heads, c.head_dim) * (1.0 + q_offset / 10.0);
  const Tensor k = heads(attn.k_proj->forward(src), c.n_kv_heads, c.head_dim) + k_offset / 10.0;
  const Tensor v = heads(attn.v_proj->forward(src), c.n_kv_heads, c.head_dim);
  Tensor bias = ToyPosition::bias(x.size(1), src.size(1), q_offset, k_offset);
  bias = where(keep, bias, Tensor::scalar(-std::numeric_limits<double>::infinity()));
  const Tensor y = scaled_dot_product_attention(q, k, v, {.causal = c.causal, .mask = bias, .kernel = AttentionKernel::plain});
  return attn.o_proj->forward(y.transpose(1, 2).reshape({x.size(0), x.size(1), c.n_heads * c.head_dim}));
}

TEST(MultiHeadAttention, PositionHookRotatesAndBiases) {
  auto position = std::make_shared<ToyPosition>();
  Generator gen(3);
  MultiHeadAttention self_attn({.dim = 8, .n_heads = 4, .n_kv_heads = 2, .causal = true}, position, gen);
  const Tensor x = randn({2, 5, 8}, gen), keep = lt(rand({5, 5}, gen), 0.9);
  EXPECT_TENSOR_CLOSE(self_attn.forward(x, {.masks = {.mask = keep}, .q_offset = 3}), by_hand(self_attn, x, {}, 3, keep), 1e-6, 1e-5);
  EXPECT_EQ(position->seen_q_offset, 3);
  EXPECT_EQ(position->seen_k_offset, 3);

  MultiHeadAttention cross({.dim = 8, .n_heads = 2, .context_dim = 6}, position, gen);
  const Tensor context = randn({2, 7, 6}, gen), keep_all = ones({5, 7}, DType::boolean);
  EXPECT_TENSOR_CLOSE(cross.forward(x, {.context = context, .q_offset = 4}), by_hand(cross, x, context, 4, keep_all), 1e-6, 1e-5);
  EXPECT_EQ(position->seen_k_offset, 0);
  EXPECT_TRUE(cross.named_children().size() == 4u);  // the scheme is not a child
}

// Learned QK-norm (Qwen3Attention's q_norm / k_norm): rms(q) w_q and rms(k) w_k over head_dim, per
// head, BEFORE the rotation, written out by hand with the real RoPE; the weights get the gradient of
// that composition, and normalising after the rotation instead (where nanochat's parameter-free norm
// sits, which commutes with it) gives other outputs.
TEST(MultiHeadAttention, LearnedQkNormActsPerHeadBeforeRotation) {
  Generator gen(5);
  const auto rope = make_attention_position({.kind = PositionKind::rope, .max_len = 16, .head_dim = 8}, gen);
  MultiHeadAttention attn({.dim = 16, .n_heads = 4, .n_kv_heads = 2, .head_dim = 8, .qk_norm = true,
                           .qk_norm_weight = true, .qk_norm_eps = 1e-6, .causal = true},
                          rope, gen);
  ASSERT_TRUE(attn.q_norm && attn.k_norm);
  EXPECT_EQ(attn.q_norm->weight.shape(), Shape({8}));
  EXPECT_EQ(attention_parameter_count(attn.config()), attn.num_parameters());
  {
    NoGradGuard no_grad;  // weights away from 1, so that the order matters
    copy_into(attn.q_norm->weight, 1.0 + 0.5 * randn({8}, gen));
    copy_into(attn.k_norm->weight, 1.0 + 0.5 * randn({8}, gen));
  }
  const Tensor x = randn({2, 6, 16}, gen);
  const auto heads = [](const Tensor& t, int64_t h) { return t.reshape({t.size(0), t.size(1), h, 8}).transpose(1, 2); };
  const auto by_hand = [&](bool norm_first) {
    Tensor q = heads(attn.q_proj->forward(x), 4), k = heads(attn.k_proj->forward(x), 2);
    const Tensor v = heads(attn.v_proj->forward(x), 2);
    const auto norm = [&](Tensor& t, const Tensor& w) { t = rms_norm(t, w, 1e-6); };
    if (norm_first) norm(q, attn.q_norm->weight), norm(k, attn.k_norm->weight);
    q = rope->rotate_queries(q, 3), k = rope->rotate_keys(k, 3);
    if (!norm_first) norm(q, attn.q_norm->weight), norm(k, attn.k_norm->weight);
    const Tensor y = scaled_dot_product_attention(q, k, v, {.causal = true, .kernel = AttentionKernel::plain});
    return attn.o_proj->forward(y.transpose(1, 2).reshape({2, 6, 32}));
  };
  const Tensor expected = by_hand(true);
  sum(expected).backward();
  const Tensor q_grad = attn.q_norm->weight.grad(), k_grad = attn.k_norm->weight.grad();
  attn.zero_grad();
  const Tensor out = attn.forward(x, {.q_offset = 3});
  EXPECT_TENSOR_CLOSE(out, expected, 1e-5, 1e-5);
  sum(out).backward();
  EXPECT_TENSOR_CLOSE(attn.q_norm->weight.grad(), q_grad, 1e-5, 1e-5);
  EXPECT_TENSOR_CLOSE(attn.k_norm->weight.grad(), k_grad, 1e-5, 1e-5);
  NoGradGuard no_grad;
  EXPECT_GT(max(abs(by_hand(false) - out)).item(), 1e-3);
  EXPECT_THROW_WITH(MultiHeadAttention({.dim = 8, .n_heads = 2, .qk_norm_weight = true}), "qk_norm_weight needs qk_norm");
}

// The same dropout in both kernels: ops' FusedVsPlain.DropoutDrawsTheSameMask
TEST(MultiHeadAttention, DropoutOnlyInTraining) {
  const AttentionConfig config{.dim = 8, .n_heads = 2, .dropout = 0.5, .causal = true, .seed = 9};
  Generator init(1);
  MultiHeadAttention attn(config, nullptr, init);
  Generator gen(2);
  const Tensor x = randn({2, 6, 8}, gen);
  const Tensor trained = attn.forward(x);
  attn.eval();
  const Tensor a = attn.forward(x), b = attn.forward(x);
  EXPECT_TENSOR_CLOSE(a, b, 0.0, 0.0);
  EXPECT_FALSE(testing::tensors_close(trained, a, 1e-3, 1e-3));
}

}  // namespace
}  // namespace nf::nn
