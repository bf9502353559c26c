// The norm and MLP modules and their factories: PyTorch parameter names and shapes per kind,
// initial values, forward equal to the composition of ops each documents, the derived hidden sizes,
// where dropout sits, and construction errors naming the option and its value.
#include <algorithm>

#include "support/testing.h"

namespace nf {
namespace {

std::vector<std::string> names_of(const nn::Module& m) {
  std::vector<std::string> names;
  for (const auto& [name, t] : m.named_parameters()) names.push_back(name);
  return names;
}

Shape shape_of(const nn::Module& m, const std::string& name) { return m.state_dict().at(name).shape(); }

Tensor input(const Shape& shape, uint64_t seed) {
  Generator gen(seed);
  return randn(shape, gen);
}

// ---- norms ----

TEST(NormModules, LayerNormParameters) {
  nn::LayerNorm full(6);
  EXPECT_EQ(names_of(full), (std::vector<std::string>{"weight", "bias"}));
  EXPECT_TENSOR_CLOSE(full.weight, ones({6}));
  EXPECT_TENSOR_CLOSE(full.bias, zeros({6}));
  EXPECT_DOUBLE_EQ(full.eps(), 1e-5);
  EXPECT_EQ(names_of(nn::LayerNorm(6, 1e-5, true, false)), (std::vector<std::string>{"weight"}));
  EXPECT_TRUE(names_of(nn::LayerNorm(6, 1e-5, false)).empty());
}

TEST(NormModules, RMSNormParameters) {
  nn::RMSNorm with(6);
  EXPECT_EQ(names_of(with), (std::vector<std::string>{"weight"}));
  EXPECT_TENSOR_CLOSE(with.weight, ones({6}));
  EXPECT_DOUBLE_EQ(with.eps(), 1e-6);
  EXPECT_TRUE(names_of(nn::RMSNorm(6, 1e-6, false)).empty());
}

TEST(NormModules, ForwardIsTheOp) {
  const Tensor x = input({2, 3, 6}, 1);
  nn::LayerNorm ln(6, 1e-3);
  ln.weight.detach().set({2}, 3.0);
  EXPECT_TENSOR_CLOSE(ln(x), layer_norm(x, ln.weight, ln.bias, 1e-3), 0.0, 0.0);
  nn::RMSNorm rn(6, 1e-2, true, RmsNormForm::rms_plus_eps);
  EXPECT_TENSOR_CLOSE(rn(x), rms_norm(x, rn.weight, 1e-2, RmsNormForm::rms_plus_eps), 0.0, 0.0);
  EXPECT_THROW_WITH(ln(input({2, 5}, 2)), "LayerNorm", "(2, 5)", "dim 6");
  EXPECT_THROW_WITH(rn(input({2, 5}, 2)), "RMSNorm", "(2, 5)", "dim 6");
}

TEST(MakeNorm, EveryKind) {
  struct Expected {
    nn::NormKind kind;
    std::string type;
    std::vector<std::string> parameters;
  };
  const std::vector<Expected> kinds{
      {nn::NormKind::layernorm, "LayerNorm", {"weight", "bias"}},
      {nn::NormKind::layernorm_no_affine, "LayerNorm", {}},
      {nn::NormKind::layernorm_std_plus_eps, "LayerNorm", {"weight", "bias"}},
      {nn::NormKind::rmsnorm, "RMSNorm", {"weight"}},
      {nn::NormKind::rmsnorm_no_weight, "RMSNorm", {}},
      {nn::NormKind::rmsnorm_rms_plus_eps, "RMSNorm", {"weight"}},
  };
  const Tensor x = input({3, 8}, 3);
  for (const Expected& e : kinds) {
    SCOPED_TRACE(nn::norm_kind_name(e.kind));
    const auto norm = nn::make_norm({.kind = e.kind, .dim = 8, .eps = 1e-3});
    EXPECT_EQ(norm->type_name(), e.type);
    EXPECT_EQ(names_of(*norm), e.parameters);
    EXPECT_EQ(nn::norm_kind_from_name(nn::norm_kind_name(e.kind)), e.kind);
    EXPECT_EQ(norm->forward(x).shape(), x.shape());
  }
  // options reach the module
  const auto no_bias = nn::make_norm({.kind = nn::NormKind::layernorm, .dim = 8, .eps = 1e-3, .bias = false});
  EXPECT_EQ(names_of(*no_bias), (std::vector<std::string>{"weight"}));
  const auto rms = nn::make_norm({.kind = nn::NormKind::rmsnorm_rms_plus_eps, .dim = 8, .eps = 0.25});
  EXPECT_TENSOR_CLOSE(rms->forward(x), rms_norm(x, {}, 0.25, RmsNormForm::rms_plus_eps), 0.0, 0.0);
  const auto std_plus_eps = nn::make_norm({.kind = nn::NormKind::layernorm_std_plus_eps, .dim = 8, .eps = 0.25});
  EXPECT_TENSOR_CLOSE(std_plus_eps->forward(x), layer_norm(x, {}, {}, 0.25, LayerNormForm::std_plus_eps), 0.0, 0.0);
  EXPECT_FALSE(testing::tensors_close(std_plus_eps->forward(x), layer_norm(x, {}, {}, 0.25), 1e-3, 0));
  const auto plain = nn::make_norm({.kind = nn::NormKind::rmsnorm_no_weight, .dim = 8, .eps = 0.25});
  EXPECT_TENSOR_CLOSE(plain->forward(x), rms_norm(x, {}, 0.25, RmsNormForm::rsqrt), 0.0, 0.0);
}

TEST(MakeNorm, ConfigurationErrors) {
  EXPECT_THROW_WITH(nn::make_norm({.kind = nn::NormKind::layernorm, .dim = 0}), "LayerNorm", "dim", "0");
  EXPECT_THROW_WITH(nn::make_norm({.kind = nn::NormKind::rmsnorm, .dim = -3}), "RMSNorm", "dim", "-3");
  EXPECT_THROW_WITH(nn::make_norm({.kind = nn::NormKind::rmsnorm, .dim = 4, .eps = 0.0}), "RMSNorm", "eps", "0");
  EXPECT_THROW_WITH(nn::make_norm({.kind = nn::NormKind::layernorm, .dim = 4, .eps = -1.0}), "LayerNorm", "eps", "-1");
  EXPECT_THROW_WITH(nn::make_norm({.kind = static_cast<nn::NormKind>(42), .dim = 4}), "make_norm", "unknown kind", "42");
  EXPECT_THROW_WITH(nn::norm_kind_from_name("batchnorm"), "unknown kind", "batchnorm", "rmsnorm_no_weight");
}

// ---- MLPs ----

TEST(MakeMLP, NamesAndShapesPerKind) {
  struct Expected {
    nn::MLPKind kind;
    bool bias;
    std::string type;
    std::vector<std::pair<std::string, Shape>> parameters;
  };
  const int64_t d = 6, h = 24;  // derived hidden 4 d for every kind but swiglu
  const std::vector<Expected> kinds{
      {nn::MLPKind::relu, true, "FeedForward",
       {{"linear1.weight", {h, d}}, {"linear1.bias", {h}}, {"linear2.weight", {d, h}}, {"linear2.bias", {d}}}},
      {nn::MLPKind::gelu, true, "GeluMLP",
       {{"c_fc.weight", {h, d}}, {"c_fc.bias", {h}}, {"c_proj.weight", {d, h}}, {"c_proj.bias", {d}}}},
      {nn::MLPKind::gelu_tanh, false, "GeluMLP", {{"c_fc.weight", {h, d}}, {"c_proj.weight", {d, h}}}},
      {nn::MLPKind::relu2, false, "ReluSquaredMLP", {{"c_fc.weight", {h, d}}, {"c_proj.weight", {d, h}}}},
      // int(8 * 6 / 3) = 16, rounded up to a multiple of 64
      {nn::MLPKind::swiglu, false, "SwiGLU", {{"w1.weight", {64, d}}, {"w2.weight", {d, 64}}, {"w3.weight", {64, d}}}},
      {nn::MLPKind::swiglu, true, "SwiGLU",
       {{"w1.weight", {64, d}}, {"w1.bias", {64}}, {"w2.weight", {d, 64}}, {"w2.bias", {d}}, {"w3.weight", {64, d}},
        {"w3.bias", {64}}}},
  };
  const Tensor x = input({2, 3, d}, 4);
  for (const Expected& e : kinds) {
    SCOPED_TRACE(nn::mlp_kind_name(e.kind));
    Generator gen(5);
    const auto mlp = nn::make_mlp({.kind = e.kind, .dim = d, .bias = e.bias}, gen);
    EXPECT_EQ(mlp->type_name(), e.type);
    std::vector<std::pair<std::string, Shape>> got;
    for (const auto& [name, t] : mlp->named_parameters()) got.emplace_back(name, t.shape());
    EXPECT_EQ(got, e.parameters);
    EXPECT_EQ(mlp->forward(x).shape(), x.shape());
    EXPECT_EQ(nn::mlp_kind_from_name(nn::mlp_kind_name(e.kind)), e.kind);
  }
}

TEST(MakeMLP, HiddenSizes) {
  EXPECT_EQ(nn::swiglu_hidden_dim(512, 64), 1408);  // MiniMind's 26M preset
  EXPECT_EQ(nn::swiglu_hidden_dim(512, 1), 1365);   // document 002's int(8/3 * 512)
  EXPECT_EQ(nn::swiglu_hidden_dim(768, 256), 2048);
  EXPECT_EQ(nn::mlp_hidden_dim({.kind = nn::MLPKind::swiglu, .dim = 512}), 1408);
  EXPECT_EQ(nn::mlp_hidden_dim({.kind = nn::MLPKind::swiglu, .dim = 512, .hidden = 1000}), 1000);
  EXPECT_EQ(nn::mlp_hidden_dim({.kind = nn::MLPKind::relu2, .dim = 768}), 3072);
  Generator gen(6);
  const auto mlp = nn::make_mlp({.kind = nn::MLPKind::swiglu, .dim = 512, .bias = false}, gen);
  EXPECT_EQ(shape_of(*mlp, "w1.weight"), (Shape{1408, 512}));
}

TEST(MakeMLP, ConfigurationErrors) {
  Generator gen(7);
  EXPECT_THROW_WITH(nn::make_mlp({.kind = nn::MLPKind::relu, .dim = 0}, gen), "make_mlp", "dim", "0");
  EXPECT_THROW_WITH(nn::make_mlp({.kind = nn::MLPKind::gelu, .dim = 4, .hidden = -2}, gen), "make_mlp", "hidden", "-2");
  EXPECT_THROW_WITH(nn::make_mlp({.kind = nn::MLPKind::swiglu, .dim = 4, .multiple_of = 0}, gen), "make_mlp",
                    "multiple_of", "0");
  EXPECT_THROW_WITH(nn::make_mlp({.kind = nn::MLPKind::relu2, .dim = 4, .dropout = 1.0}, gen), "make_mlp", "dropout",
                    "1");
  EXPECT_THROW_WITH(nn::make_mlp({.kind = nn::MLPKind::relu, .dim = 4, .dropout = -0.1}, gen), "make_mlp", "dropout",
                    "-0.1");
  EXPECT_THROW_WITH(nn::make_mlp({.kind = static_cast<nn::MLPKind>(9), .dim = 4}, gen), "make_mlp", "unknown kind",
                    "9");
  EXPECT_THROW_WITH(nn::mlp_kind_from_name("geglu"), "unknown kind", "geglu", "swiglu");
  EXPECT_THROW_WITH(nn::SwiGLU(4, 0), "SwiGLU", "hidden", "0");
  EXPECT_THROW_WITH(nn::FeedForward(4, -1), "FeedForward", "hidden", "-1");
  EXPECT_THROW_WITH(nn::GeluMLP(0, 8), "GeluMLP", "dim", "0");
  EXPECT_THROW_WITH(nn::ReluSquaredMLP(4, 8, false, 2.0), "ReluSquaredMLP", "dropout", "2");
}

// Each module computes what its reference writes, with the ops it is made of.
TEST(MLPModules, ForwardIsTheDocumentedComposition) {
  const Tensor x = input({2, 5, 6}, 8);
  Generator gen(9);
  nn::SwiGLU sw(6, 10, true, 0.0, gen);
  EXPECT_TENSOR_CLOSE(sw(x), (*sw.w2)(silu((*sw.w1)(x)) * (*sw.w3)(x)), 1e-6, 1e-5);
  nn::ReluSquaredMLP r2(6, 10, false, 0.0, gen);
  EXPECT_TENSOR_CLOSE(r2(x), (*r2.proj)(square(relu((*r2.fc)(x)))), 1e-6, 1e-5);
  nn::GeluMLP gpt2(6, 10, true, true, 0.0, gen);
  EXPECT_TENSOR_CLOSE(gpt2(x), (*gpt2.proj)(gelu((*gpt2.fc)(x), GeluApprox::tanh)), 0.0, 0.0);
  nn::FeedForward ffn(6, 10, true, 0.0, gen);
  EXPECT_TENSOR_CLOSE(ffn(x), (*ffn.proj)(relu((*ffn.fc)(x))), 0.0, 0.0);
  EXPECT_THROW_WITH(sw(input({2, 7}, 10)), "SwiGLU", "(2, 7)", "dim 6");
  EXPECT_THROW_WITH(ffn(input({2, 7}, 10)), "FeedForward", "(2, 7)", "dim 6");
}

TEST(MLPModules, SameGeneratorSameWeights) {
  Generator a(11), b(11);
  const auto m1 = nn::make_mlp({.kind = nn::MLPKind::swiglu, .dim = 8, .hidden = 16}, a);
  const auto m2 = nn::make_mlp({.kind = nn::MLPKind::swiglu, .dim = 8, .hidden = 16}, b);
  for (const auto& [name, t] : m1->state_dict()) EXPECT_TENSOR_CLOSE(t, m2->state_dict().at(name), 0.0, 0.0);
}

int64_t zeros_in(const Tensor& t) {
  const std::vector<float> v = t.to_vector<float>();
  return std::count(v.begin(), v.end(), 0.0f);
}

// Dropout on the output (GPT-2, nanochat, MiniMind) zeroes output elements; on the hidden
// activation (the FFN of 004) it does not (each output mixes many hidden units); eval turns it off.
TEST(MLPModules, DropoutPlacement) {
  const Tensor x = input({16, 8}, 12);
  for (nn::MLPKind kind : {nn::MLPKind::gelu_tanh, nn::MLPKind::relu2, nn::MLPKind::swiglu}) {
    SCOPED_TRACE(nn::mlp_kind_name(kind));
    Generator gen(13);
    const auto mlp = nn::make_mlp({.kind = kind, .dim = 8, .hidden = 32, .dropout = 0.5}, gen);
    EXPECT_GT(zeros_in(mlp->forward(x)), 16 * 8 / 4);
    mlp->eval();
    EXPECT_EQ(zeros_in(mlp->forward(x)), 0);
  }
  Generator gen(14);
  nn::FeedForward ffn(8, 32, true, 0.5, gen);
  const Tensor train_out = ffn(x);
  EXPECT_EQ(zeros_in(train_out), 0);
  ffn.eval();
  const Tensor eval_out = ffn(x);
  EXPECT_TENSOR_CLOSE(eval_out, (*ffn.proj)(relu((*ffn.fc)(x))), 0.0, 0.0);
  EXPECT_FALSE(testing::tensors_close(train_out, eval_out, 1e-3, 1e-3));
}

}  // namespace
}  // namespace nf
