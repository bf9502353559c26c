// PPO's clipped value loss, forward and backward side by side.
#include "nanoformer/ops/value_loss.h"

#include <algorithm>
#include <vector>

#include "nanoformer/autograd/node.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"
#include "ops/reduce_internal.h"

namespace nf {

ValueLoss value_loss(const Tensor& values, const Tensor& old_values, const Tensor& returns, const Tensor& mask,
                     double cliprange) {
  NF_CHECK(values.defined() && values.dim() == 2, "value_loss: values must be (B, T), got ",
           values.defined() ? shape_str(values.shape()) : "undefined");
  require_floating_input(values, "value_loss");
  const std::pair<const Tensor*, const char*> others[] = {{&old_values, "old_values"}, {&returns, "returns"}, {&mask, "mask"}};
  for (const auto& [t, name] : others)
    NF_CHECK(t->defined() && t->shape() == values.shape() && t->dtype() == values.dtype(), "value_loss: ", name, " ",
             t->defined() ? shape_str(t->shape()) + " " + dtype_name(t->dtype()) : std::string("undefined"),
             " differs from values ", shape_str(values.shape()), " ", dtype_name(values.dtype()));
  NF_CHECK(cliprange >= 0, "value_loss: cliprange must be >= 0, got ", cliprange);
  const std::vector<double> v = values.to_vector<double>(), old = old_values.to_vector<double>();
  const std::vector<double> R = returns.to_vector<double>(), m = mask.to_vector<double>();
  double total = 0;
  for (double x : m) total += x;
  const double n = std::max(total, 1.0);
  double loss = 0, clipped = 0;
  std::vector<double> grad(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const double lo = old[i] - cliprange, hi = old[i] + cliprange;
    const double vc = std::clamp(v[i], lo, hi);
    const double l1 = (v[i] - R[i]) * (v[i] - R[i]), l2 = (vc - R[i]) * (vc - R[i]);
    loss += 0.5 * m[i] * std::max(l1, l2) / n;
    clipped += m[i] * (l2 > l1 ? 1.0 : 0.0);
    // d/dv of 0.5 max(l1, l2): l1' = 2 (v - R); l2' = 2 (vc - R) inside the band, 0 outside
    const double g1 = v[i] - R[i], g2 = (v[i] >= lo && v[i] <= hi) ? vc - R[i] : 0.0;
    const double g = l1 > l2 ? g1 : l2 > l1 ? g2 : 0.5 * (g1 + g2);
    grad[i] = m[i] * g / n;
  }
  ValueLoss out;
  out.clip_fraction = clipped / n;
  const DType dtype = values.dtype();
  out.loss = Tensor::from_vector(std::vector<double>{loss}, {}).to(dtype);
  const Tensor grad_values = Tensor::from_vector(grad, values.shape()).to(dtype);
  autograd::record("value_loss", out.loss, {values}, [grad_values](const Tensor& g, const autograd::Node&) {
    return std::vector<Tensor>{mul(grad_values, g)};
  });
  return out;
}

}  // namespace nf
