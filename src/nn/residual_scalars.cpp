// Residual scalars: x = resid_lambdas[i] x + x0_lambdas[i] x0 (see residual_scalars.h).
#include "nanoformer/nn/residual_scalars.h"

#include <algorithm>
#include <vector>

#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/view.h"

namespace nf::nn {

ResidualScalars::ResidualScalars(int64_t n_layers) : Module("ResidualScalars") {
  NF_CHECK(n_layers > 0, "ResidualScalars: n_layers must be positive, got ", n_layers);
  std::vector<float> resid, x0;
  const double last = static_cast<double>(std::max<int64_t>(n_layers - 1, 1));
  for (int64_t i = 0; i < n_layers; ++i) {
    resid.push_back(static_cast<float>(1.15 - 0.10 * static_cast<double>(i) / last));
    x0.push_back(static_cast<float>(0.20 - 0.15 * static_cast<double>(i) / last));
  }
  resid_lambdas = register_parameter("resid_lambdas", Tensor::from_vector(resid, {n_layers}));
  x0_lambdas = register_parameter("x0_lambdas", Tensor::from_vector(x0, {n_layers}));
}

Tensor ResidualScalars::forward(const Tensor& x, const Tensor& x0, int64_t layer) {
  NF_CHECK(layer >= 0 && layer < resid_lambdas.size(0), "ResidualScalars: layer ", layer, " outside [0, ",
           resid_lambdas.size(0), ")");
  NF_CHECK(x.shape() == x0.shape(), "ResidualScalars: x ", shape_str(x.shape()), " and x0 ", shape_str(x0.shape()),
           " differ");
  return select(resid_lambdas, 0, layer) * x + select(x0_lambdas, 0, layer) * x0;
}

}  // namespace nf::nn
