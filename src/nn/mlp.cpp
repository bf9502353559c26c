// The feed-forward modules and the make_mlp factory.
#include "nanoformer/nn/mlp.h"

#include <array>
#include <cmath>
#include <utility>

#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/mlp_activation.h"

namespace nf::nn {
namespace {

void check_sizes(const char* module, int64_t dim, int64_t hidden) {
  NF_CHECK(dim > 0, module, ": dim must be positive, got ", dim);
  NF_CHECK(hidden > 0, module, ": hidden must be positive, got ", hidden);
}

void check_dropout(const char* module, double p) {
  NF_CHECK(p >= 0.0 && p < 1.0, module, ": dropout must be in [0, 1), got ", p);
}

void check_input(const std::string& module, const Tensor& x, int64_t dim) {
  NF_CHECK(x.dim() >= 1 && x.size(-1) == dim, module, ": input ", shape_str(x.shape()), " does not end in dim ", dim);
}

Tensor activate(MLPActivation activation, const Tensor& h) {
  switch (activation) {
    case MLPActivation::relu: return relu(h);
    case MLPActivation::gelu: return gelu(h, GeluApprox::none);
    case MLPActivation::gelu_tanh: return gelu(h, GeluApprox::tanh);
    case MLPActivation::relu_squared: return relu_squared(h);
  }
  NF_FAIL("MLP: unknown activation ", static_cast<int>(activation));
}

constexpr std::array<std::pair<MLPKind, const char*>, 5> kKindNames{{
    {MLPKind::relu, "relu"},
    {MLPKind::gelu, "gelu"},
    {MLPKind::gelu_tanh, "gelu_tanh"},
    {MLPKind::swiglu, "swiglu"},
    {MLPKind::relu2, "relu2"},
}};

}  // namespace

TwoLayerMLP::TwoLayerMLP(std::string type_name, Names names, int64_t dim, int64_t hidden, MLPActivation activation,
                         bool bias, double dropout_p, DropoutAt dropout_at, Generator& gen)
    : UnaryModule(std::move(type_name)), activation_(activation), dropout_at_(dropout_at) {
  check_sizes(this->type_name().c_str(), dim, hidden);
  check_dropout(this->type_name().c_str(), dropout_p);
  fc = register_module(names.fc, std::make_shared<Linear>(dim, hidden, bias, gen));
  proj = register_module(names.proj, std::make_shared<Linear>(hidden, dim, bias, gen));
  if (auto d = make_dropout(dropout_p, gen)) dropout = register_module("dropout", d);
}

// y = proj(drop_hidden(act(fc(x)))), then drop_output(y): one of the two dropouts is the identity
Tensor TwoLayerMLP::forward(const Tensor& x) {
  check_input(type_name(), x, dim());
  Tensor h = activate(activation_, fc->forward(x));
  if (dropout && dropout_at_ == DropoutAt::hidden) h = dropout->forward(h);
  Tensor y = proj->forward(h);
  if (dropout && dropout_at_ == DropoutAt::output) y = dropout->forward(y);
  return y;
}

FeedForward::FeedForward(int64_t dim, int64_t hidden, bool bias, double dropout, Generator& gen)
    : TwoLayerMLP("FeedForward", two_layer_mlp_names(MLPKind::relu), dim, hidden, MLPActivation::relu, bias, dropout,
                  DropoutAt::hidden, gen) {}

GeluMLP::GeluMLP(int64_t dim, int64_t hidden, bool tanh_approximation, bool bias, double dropout, Generator& gen)
    : TwoLayerMLP("GeluMLP", two_layer_mlp_names(MLPKind::gelu), dim, hidden,
                  tanh_approximation ? MLPActivation::gelu_tanh : MLPActivation::gelu, bias, dropout, DropoutAt::output,
                  gen) {}

ReluSquaredMLP::ReluSquaredMLP(int64_t dim, int64_t hidden, bool bias, double dropout, Generator& gen)
    : TwoLayerMLP("ReluSquaredMLP", two_layer_mlp_names(MLPKind::relu2), dim, hidden, MLPActivation::relu_squared, bias, dropout,
                  DropoutAt::output, gen) {}

SwiGLU::SwiGLU(int64_t dim, int64_t hidden, bool bias, double dropout_p, Generator& gen) : UnaryModule("SwiGLU") {
  check_sizes("SwiGLU", dim, hidden);
  check_dropout("SwiGLU", dropout_p);
  w1 = register_module("w1", std::make_shared<Linear>(dim, hidden, bias, gen));
  w2 = register_module("w2", std::make_shared<Linear>(hidden, dim, bias, gen));
  w3 = register_module("w3", std::make_shared<Linear>(dim, hidden, bias, gen));
  if (auto d = make_dropout(dropout_p, gen)) dropout = register_module("dropout", d);
}

// y = w2(silu(w1 x) * w3 x), then dropout
Tensor SwiGLU::forward(const Tensor& x) {
  check_input("SwiGLU", x, dim());
  const std::vector<Tensor> gate_up = forward_together(std::array<Linear*, 2>{w1.get(), w3.get()}, x);
  Tensor y = w2->forward(swiglu(gate_up[0], gate_up[1]));
  return dropout ? dropout->forward(y) : y;
}

int64_t swiglu_hidden_dim(int64_t dim, int64_t multiple_of) {
  NF_CHECK(dim > 0, "swiglu_hidden_dim: dim must be positive, got ", dim);
  NF_CHECK(multiple_of > 0, "swiglu_hidden_dim: multiple_of must be positive, got ", multiple_of);
  const int64_t base = 8 * dim / 3;  // int(2 * 4 * dim / 3)
  return multiple_of * ((base + multiple_of - 1) / multiple_of);
}

TwoLayerMLP::Names two_layer_mlp_names(MLPKind kind) {
  NF_CHECK(kind != MLPKind::swiglu, "two_layer_mlp_names: a swiglu MLP has three Linears (w1, w2, w3)");
  return kind == MLPKind::relu ? TwoLayerMLP::Names{"linear1", "linear2"} : TwoLayerMLP::Names{"c_fc", "c_proj"};
}

std::string mlp_kind_name(MLPKind kind) {
  for (const auto& [k, name] : kKindNames) {
    if (k == kind) return name;
  }
  NF_FAIL("MLP kind: unknown kind ", static_cast<int>(kind));
}

MLPKind mlp_kind_from_name(const std::string& name) {
  std::string known;
  for (const auto& [k, n] : kKindNames) {
    if (name == n) return k;
    known += known.empty() ? n : std::string(", ") + n;
  }
  NF_FAIL("MLP kind: unknown kind '", name, "' (known: ", known, ")");
}

MLPConfig resolved(const MLPConfig& config) {
  MLPConfig c = config;
  NF_CHECK(c.dim > 0, "make_mlp: dim must be positive, got ", c.dim);
  NF_CHECK(c.hidden >= 0, "make_mlp: hidden must be positive (or 0 to derive it), got ", c.hidden);
  NF_CHECK(c.multiple_of > 0, "make_mlp: multiple_of must be positive, got ", c.multiple_of);
  check_dropout("make_mlp", c.dropout);
  if (c.hidden == 0) c.hidden = c.kind == MLPKind::swiglu ? swiglu_hidden_dim(c.dim, c.multiple_of) : 4 * c.dim;
  return c;
}

int64_t mlp_hidden_dim(const MLPConfig& config) { return resolved(config).hidden; }

template <class N>
N mlp_parameter_count(const MLPConfig& config) {
  const MLPConfig c = resolved(config);
  const N up_projections = N(c.kind == MLPKind::swiglu ? 2 : 1);  // SwiGLU's w1 and w3
  // up (dim -> hidden) and down (hidden -> dim) Linears
  return up_projections * linear_parameter_count(N(c.dim), N(c.hidden), c.bias) +
         linear_parameter_count(N(c.hidden), N(c.dim), c.bias);
}
template int64_t mlp_parameter_count<int64_t>(const MLPConfig&);
template long double mlp_parameter_count<long double>(const MLPConfig&);

std::shared_ptr<UnaryModule> make_mlp(const MLPConfig& config, Generator& gen) {
  const MLPConfig c = resolved(config);
  switch (c.kind) {
    case MLPKind::relu: return std::make_shared<FeedForward>(c.dim, c.hidden, c.bias, c.dropout, gen);
    case MLPKind::gelu: return std::make_shared<GeluMLP>(c.dim, c.hidden, false, c.bias, c.dropout, gen);
    case MLPKind::gelu_tanh: return std::make_shared<GeluMLP>(c.dim, c.hidden, true, c.bias, c.dropout, gen);
    case MLPKind::swiglu: return std::make_shared<SwiGLU>(c.dim, c.hidden, c.bias, c.dropout, gen);
    case MLPKind::relu2: return std::make_shared<ReluSquaredMLP>(c.dim, c.hidden, c.bias, c.dropout, gen);
  }
  NF_FAIL("make_mlp: unknown kind ", static_cast<int>(c.kind));
}

}  // namespace nf::nn
