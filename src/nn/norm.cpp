// LayerNorm and RMSNorm modules over the fused ops of ops/norm.h, and the make_norm factory.
#include "nanoformer/nn/norm.h"

#include <array>
#include <cmath>
#include <utility>

#include "nanoformer/core/error.h"
#include "nanoformer/ops/factory.h"

namespace nf::nn {
namespace {

void check_dim_and_eps(const char* module, int64_t dim, double eps) {
  NF_CHECK(dim > 0, module, ": dim must be positive, got ", dim);
  NF_CHECK(eps > 0.0 && std::isfinite(eps), module, ": eps must be positive and finite, got ", eps);
}

void check_input(const char* module, const Tensor& x, int64_t dim) {
  NF_CHECK(x.dim() >= 1 && x.size(-1) == dim, module, ": input ", shape_str(x.shape()), " does not end in dim ", dim);
}

constexpr std::array<std::pair<NormKind, const char*>, 6> kKindNames{{
    {NormKind::layernorm, "layernorm"},
    {NormKind::layernorm_no_affine, "layernorm_no_affine"},
    {NormKind::layernorm_std_plus_eps, "layernorm_std_plus_eps"},
    {NormKind::rmsnorm, "rmsnorm"},
    {NormKind::rmsnorm_no_weight, "rmsnorm_no_weight"},
    {NormKind::rmsnorm_rms_plus_eps, "rmsnorm_rms_plus_eps"},
}};

}  // namespace

LayerNorm::LayerNorm(int64_t dim, double eps, bool affine, bool bias, LayerNormForm form)
    : UnaryModule("LayerNorm"), dim_(dim), eps_(eps), form_(form) {
  check_dim_and_eps("LayerNorm", dim, eps);
  if (!affine) return;
  weight = register_parameter("weight", ones({dim}));
  if (bias) this->bias = register_parameter("bias", zeros({dim}));
}

Tensor LayerNorm::forward(const Tensor& x) {
  check_input("LayerNorm", x, dim_);
  return layer_norm(x, weight, bias, eps_, form_);
}

RMSNorm::RMSNorm(int64_t dim, double eps, bool weight, RmsNormForm form)
    : UnaryModule("RMSNorm"), dim_(dim), eps_(eps), form_(form) {
  check_dim_and_eps("RMSNorm", dim, eps);
  if (weight) this->weight = register_parameter("weight", ones({dim}));
}

Tensor RMSNorm::forward(const Tensor& x) {
  check_input("RMSNorm", x, dim_);
  return rms_norm(x, weight, eps_, form_);
}

std::string norm_kind_name(NormKind kind) {
  for (const auto& [k, name] : kKindNames) {
    if (k == kind) return name;
  }
  NF_FAIL("norm kind: unknown kind ", static_cast<int>(kind));
}

NormKind norm_kind_from_name(const std::string& name) {
  std::string known;
  for (const auto& [k, n] : kKindNames) {
    if (name == n) return k;
    known += known.empty() ? n : std::string(", ") + n;
  }
  NF_FAIL("norm kind: unknown kind '", name, "' (known: ", known, ")");
}

int64_t norm_parameter_count(const NormConfig& c) {
  switch (c.kind) {
    case NormKind::layernorm:
    case NormKind::layernorm_std_plus_eps: return c.bias ? 2 * c.dim : c.dim;
    case NormKind::rmsnorm:
    case NormKind::rmsnorm_rms_plus_eps: return c.dim;
    case NormKind::layernorm_no_affine:
    case NormKind::rmsnorm_no_weight: return 0;
  }
  return 0;
}

std::shared_ptr<UnaryModule> make_norm(const NormConfig& c) {
  switch (c.kind) {
    case NormKind::layernorm: return std::make_shared<LayerNorm>(c.dim, c.eps, true, c.bias);
    case NormKind::layernorm_no_affine: return std::make_shared<LayerNorm>(c.dim, c.eps, false);
    case NormKind::layernorm_std_plus_eps:
      return std::make_shared<LayerNorm>(c.dim, c.eps, true, c.bias, LayerNormForm::std_plus_eps);
    case NormKind::rmsnorm: return std::make_shared<RMSNorm>(c.dim, c.eps, true);
    case NormKind::rmsnorm_no_weight: return std::make_shared<RMSNorm>(c.dim, c.eps, false);
    case NormKind::rmsnorm_rms_plus_eps:
      return std::make_shared<RMSNorm>(c.dim, c.eps, true, RmsNormForm::rms_plus_eps);
  }
  NF_FAIL("make_norm: unknown kind ", static_cast<int>(c.kind));
}

}  // namespace nf::nn
