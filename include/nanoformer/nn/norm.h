#pragma once
// Normalisation modules over the last dim, named as torch.nn's (parameters "weight", "bias"), and
// make_norm: the one place a block asks for "the model's norm" without knowing which it is.
#include <cstdint>
#include <memory>
#include <string>

#include "nanoformer/nn/module.h"
#include "nanoformer/ops/norm.h"

namespace nf::nn {

// y = (x - mean) / sqrt(var + eps) * weight + bias over the last dim (torch.nn.LayerNorm(dim, eps,
// elementwise_affine, bias)). weight = 1 and bias = 0 at construction; without `affine` neither
// exists; with affine but without `bias` only weight does.
class LayerNorm : public UnaryModule {
 public:
  explicit LayerNorm(int64_t dim, double eps = 1e-5, bool affine = true, bool bias = true,
                     LayerNormForm form = LayerNormForm::rsqrt);
  Tensor forward(const Tensor& x) override;

  int64_t dim() const { return dim_; }
  double eps() const { return eps_; }
  LayerNormForm form() const { return form_; }
  Tensor weight;  // (dim), undefined without affine
  Tensor bias;    // (dim), undefined without affine or bias

 private:
  int64_t dim_;
  double eps_;
  LayerNormForm form_;
};

// rsqrt form:        y = x * rsqrt(mean(x^2) + eps) * weight  (torch.nn.RMSNorm, F.rms_norm, MiniMind)
// rms_plus_eps form: y = x / (sqrt(mean(x^2)) + eps) * weight (reference document 001)
// weight = 1 at construction; without `weight` the norm has no parameter (nanochat's norm()).
class RMSNorm : public UnaryModule {
 public:
  explicit RMSNorm(int64_t dim, double eps = 1e-6, bool weight = true, RmsNormForm form = RmsNormForm::rsqrt);
  Tensor forward(const Tensor& x) override;

  int64_t dim() const { return dim_; }
  double eps() const { return eps_; }
  RmsNormForm form() const { return form_; }
  Tensor weight;  // (dim), undefined without weight

 private:
  int64_t dim_;
  double eps_;
  RmsNormForm form_;
};

// The norms a model config can name:
//   layernorm               LayerNorm with weight, and bias when NormConfig::bias (GPT-2, 004)
//   layernorm_no_affine     LayerNorm without parameters
//   layernorm_std_plus_eps  LayerNorm, (x - mean) / (std + eps) form, weight and bias (reference document 001)
//   rmsnorm                 RMSNorm, rsqrt form, with weight (LLaMA, MiniMind)
//   rmsnorm_no_weight       RMSNorm, rsqrt form, no parameter (nanochat)
//   rmsnorm_rms_plus_eps    RMSNorm, x / (rms + eps) form, with weight (reference document 001)
enum class NormKind {
  layernorm,
  layernorm_no_affine,
  layernorm_std_plus_eps,
  rmsnorm,
  rmsnorm_no_weight,
  rmsnorm_rms_plus_eps,
};

struct NormConfig {
  NormKind kind = NormKind::layernorm;
  int64_t dim = 0;     // the normalized (last) dim, > 0
  double eps = 1e-5;   // > 0; torch.nn.LayerNorm's default (MiniMind's RMSNorm and document 003 use 1e-6)
  bool bias = true;    // layernorm only: whether it has a bias
};

// "layernorm", ... as listed above; norm_kind_from_name throws naming the unknown name and the known ones.
std::string norm_kind_name(NormKind kind);
NormKind norm_kind_from_name(const std::string& name);

// Builds the configured norm; throws nf::Error naming the option and value when dim <= 0 or eps <= 0.
std::shared_ptr<UnaryModule> make_norm(const NormConfig& config);
// make_norm(config)->num_parameters() without building it: 2 dim, dim or 0.
int64_t norm_parameter_count(const NormConfig& config);

}  // namespace nf::nn
