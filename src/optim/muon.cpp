// Muon: the update rule of muon.h. The momentum lerps use fused multiply-adds in the order of
// torch's vectorised lerp; the Newton-Schulz products run on BLAS through nf::matmul.
#include "nanoformer/optim/muon.h"

#include <algorithm>
#include <cmath>

#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/matmul.h"
#include "nanoformer/optim/grad_clip.h"

namespace nf::optim {

namespace {
constexpr double kNsA = 3.4445, kNsB = -4.7750, kNsC = 2.0315;
constexpr double kNormEps = 1e-7;
}  // namespace

Tensor newton_schulz(const Tensor& g, int steps) {
  NF_CHECK(g.dim() == 2 && g.dtype() == DType::f32, "newton_schulz: expected a 2-D f32 matrix, got ",
           shape_str(g.shape()), " ", dtype_name(g.dtype()));
  const bool tall = g.size(0) > g.size(1);
  const auto norm = static_cast<float>(std::sqrt(sum_of_squares(g)));          // ||G||_F
  Tensor x = div(tall ? g.t() : g, static_cast<double>(norm + static_cast<float>(kNormEps)));
  for (int s = 0; s < steps; ++s) {
    const Tensor a = matmul(x, x.t());                                           // A = X X^T
    const Tensor b = a * kNsB + matmul(a * kNsC, a);                             // B = b A + (c A) A
    x = x * kNsA + matmul(b, x);                                                 // X = a X + B X
  }
  return (tall ? x.t() : x).contiguous();
}

Muon::Muon(std::vector<ParamGroup> groups, const MuonOptions& options)
    : Optimizer(std::move(groups)), options_(options) {
  NF_CHECK(options_.momentum >= 0 && options_.momentum < 1, "Muon: momentum ", options_.momentum,
           " must be in [0, 1)");
  NF_CHECK(options_.ns_steps >= 1, "Muon: ns_steps ", options_.ns_steps, " must be >= 1");
  for (size_t g = 0; g < this->groups().size(); ++g)
    for (size_t i = 0; i < this->groups()[g].params.size(); ++i) {
      const Tensor& p = this->groups()[g].params[i];
      NF_CHECK(p.dim() == 2, "Muon: group ", g, " (", group_label(g), ") parameter ", i, " has shape ",
               shape_str(p.shape()), ": Muon takes only 2-D parameters (give it to AdamW)");
    }
}

void Muon::update(size_t group, size_t index, float* p, const float* g, int64_t n) {
  const ParamGroup& pg = groups()[group];
  const Shape& shape = pg.params[index].shape();
  // lerp weights as torch receives them: Python doubles rounded to float
  const auto mu = static_cast<float>(options_.momentum), one_minus_mu = static_cast<float>(1.0 - options_.momentum);
  float* b = state(group, index, 0);
  Tensor u = Tensor::empty(shape);
  float* up = u.data<float>();
  for (int64_t i = 0; i < n; ++i) {
    b[i] = std::fma(one_minus_mu, g[i] - b[i], b[i]);                            // b = b + (1 - mu) (g - b)
    up[i] = options_.nesterov ? std::fma(mu - 1.0f, b[i] - g[i], b[i]) : b[i];  // u = b - (1 - mu) (b - g)
  }
  const Tensor o = newton_schulz(u, options_.ns_steps);
  const float* op = o.data<float>();
  const double scale = std::sqrt(std::max(1.0, static_cast<double>(shape[0]) / static_cast<double>(shape[1])));
  const auto alpha = static_cast<float>(-pg.lr * scale);                        // -lr max(1, rows / cols)^0.5
  const auto shrink = static_cast<float>(1.0 - pg.lr * pg.weight_decay);
  for (int64_t i = 0; i < n; ++i) {
    if (pg.weight_decay != 0) p[i] *= shrink;                                    // p (1 - lr wd)
    p[i] = std::fma(alpha, op[i], p[i]);                                         // p - lr scale O
  }
}

}  // namespace nf::optim
