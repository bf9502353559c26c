#pragma once
// Feed-forward layers of the reference architectures, with the parameter names their PyTorch code
// gives (so state dicts load by name), and make_mlp: the one place a block asks for "the model's
// MLP" without knowing which it is. x (..., dim) -> (..., dim).
#include <cstdint>
#include <memory>
#include <string>

#include "nanoformer/core/generator.h"
#include "nanoformer/nn/linear.h"
#include "nanoformer/nn/module.h"

namespace nf::nn {

enum class MLPActivation { relu, gelu, gelu_tanh, relu_squared };
// Where a two-layer MLP applies its dropout: on the hidden activation (the FFN of 004) or on the
// output (GPT-2's MLP).
enum class DropoutAt { hidden, output };

// fc: Linear(dim, hidden) -> activation -> proj: Linear(hidden, dim), with dropout (probability
// `dropout`, none when 0) at `dropout_at`. The named MLPs below are this with their names and
// activation fixed.
class TwoLayerMLP : public UnaryModule {
 public:
  struct Names {
    const char* fc;    // the Linear(dim, hidden)
    const char* proj;  // the Linear(hidden, dim)
  };
  TwoLayerMLP(std::string type_name, Names names, int64_t dim, int64_t hidden, MLPActivation activation, bool bias,
              double dropout, DropoutAt dropout_at, Generator& gen);
  Tensor forward(const Tensor& x) override;

  int64_t dim() const { return fc->in_features(); }
  int64_t hidden() const { return fc->out_features(); }
  std::shared_ptr<Linear> fc, proj;
  std::shared_ptr<Dropout> dropout;  // null when the dropout probability is 0

 private:
  MLPActivation activation_;
  DropoutAt dropout_at_;
};

// The FFN of documents 001 and 004: linear2(dropout(relu(linear1(x)))) (004's FeedForwardNetwork).
class FeedForward : public TwoLayerMLP {
 public:
  FeedForward(int64_t dim, int64_t hidden, bool bias = true, double dropout = 0.0, Generator& gen = default_generator());
};

// GPT-2's MLP: dropout(c_proj(gelu(c_fc(x)))), gelu exact (erf, nn.GELU()) or tanh-approximated
// (GPT-2's gelu_new, nn.GELU(approximate="tanh")).
class GeluMLP : public TwoLayerMLP {
 public:
  GeluMLP(int64_t dim, int64_t hidden, bool tanh_approximation = true, bool bias = true, double dropout = 0.0,
          Generator& gen = default_generator());
};

// nanochat's MLP: c_proj(relu(c_fc(x))^2) (no bias there; `bias` adds them), dropout on the output.
class ReluSquaredMLP : public TwoLayerMLP {
 public:
  ReluSquaredMLP(int64_t dim, int64_t hidden, bool bias = false, double dropout = 0.0,
                 Generator& gen = default_generator());
};

// MiniMind's FeedForward: dropout(w2(silu(w1(x)) * w3(x))), through the fused swiglu op.
// w1 is the gate projection, w3 the up projection, w2 the down projection (gate_proj, up_proj and
// down_proj in document 000 and LLaMA).
class SwiGLU : public UnaryModule {
 public:
  SwiGLU(int64_t dim, int64_t hidden, bool bias = false, double dropout = 0.0, Generator& gen = default_generator());
  Tensor forward(const Tensor& x) override;

  int64_t dim() const { return w1->in_features(); }
  int64_t hidden() const { return w1->out_features(); }
  std::shared_ptr<Linear> w1, w2, w3;
  std::shared_ptr<Dropout> dropout;  // null when the dropout probability is 0
};

// MiniMind's SwiGLU hidden size: multiple_of * ceil(int(8 dim / 3) / multiple_of) (1408 for dim 512,
// multiple_of 64; multiple_of 1 gives document 002's int(8/3 dim)).
int64_t swiglu_hidden_dim(int64_t dim, int64_t multiple_of);

// The MLPs a model config can name, and the module each builds:
//   relu       FeedForward      linear1, linear2; dropout after the relu   (001, 004)
//   gelu       GeluMLP (erf)    c_fc, c_proj; dropout on the output        (000's nn.GELU())
//   gelu_tanh  GeluMLP (tanh)   c_fc, c_proj; dropout on the output        (GPT-2)
//   swiglu     SwiGLU           w1, w2, w3; dropout on the output          (MiniMind)
//   relu2      ReluSquaredMLP   c_fc, c_proj; dropout on the output        (nanochat)
enum class MLPKind { relu, gelu, gelu_tanh, swiglu, relu2 };

struct MLPConfig {
  MLPKind kind = MLPKind::gelu_tanh;
  int64_t dim = 0;          // model width, > 0
  int64_t hidden = 0;       // > 0, or 0 = derived: 4 dim, or swiglu_hidden_dim(dim, multiple_of) for swiglu
  int64_t multiple_of = 64; // > 0; rounds the derived swiglu hidden size (MiniMind's default)
  bool bias = true;         // biases on every Linear (GPT-2, 004: true; MiniMind, nanochat: false)
  double dropout = 0.0;     // in [0, 1)
};

// The names make_mlp gives the two Linears of a two-layer MLP of `kind` (relu: linear1, linear2;
// the others: c_fc, c_proj); throws for swiglu, which has three (w1, w2, w3).
TwoLayerMLP::Names two_layer_mlp_names(MLPKind kind);

// "relu", "gelu", "gelu_tanh", "swiglu", "relu2"; mlp_kind_from_name throws naming the unknown name.
std::string mlp_kind_name(MLPKind kind);
MLPKind mlp_kind_from_name(const std::string& name);

// `config` validated (an error naming the option and value when dim <= 0, hidden < 0, multiple_of
// <= 0 or dropout is outside [0, 1)) with hidden derived when 0: the one place it is resolved
// (make_mlp, the count below and the models' block configs call it).
MLPConfig resolved(const MLPConfig& config);
// resolved(config).hidden: the hidden size make_mlp uses.
int64_t mlp_hidden_dim(const MLPConfig& config);

// make_mlp(config)->num_parameters() without building it; in arithmetic N (int64_t, or long double
// to bound a config whose count might not fit).
template <class N = int64_t>
N mlp_parameter_count(const MLPConfig& config);

// Builds the resolved MLP, initialising its Linears from `gen` (as torch.nn.Linear) and seeding its
// dropout from it.
std::shared_ptr<UnaryModule> make_mlp(const MLPConfig& config, Generator& gen = default_generator());

}  // namespace nf::nn
