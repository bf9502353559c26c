#include "nanoformer/autograd/gradcheck.h"

#include <cmath>
#include <sstream>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"
#include "nanoformer/core/generator.h"

namespace nf::autograd {
namespace {

// Multi-indices of all elements of `shape`, in row-major order.
std::vector<std::vector<int64_t>> all_indices(const Shape& shape) {
  std::vector<std::vector<int64_t>> out;
  const int64_t n = shape_numel(shape);
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    out.push_back(idx);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

// sum_i out_i * w_i
double weighted_sum(const Tensor& out, const std::vector<double>& w) {
  const std::vector<double> v = out.to_vector<double>();
  double s = 0.0;
  for (size_t i = 0; i < v.size(); ++i) s += v[i] * w[i];
  return s;
}

}  // namespace

GradcheckResult gradcheck(const TensorFn& f, const std::vector<Tensor>& inputs, const GradcheckOptions& opt) {
  GradcheckResult result;
  auto fail = [&](const std::string& message) {
    result.ok = false;
    result.message = message;
    return result;
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].defined() && inputs[i].requires_grad() && inputs[i].dtype() != DType::f64) {
      return fail("gradcheck: input " + std::to_string(i) + " is " + dtype_name(inputs[i].dtype()) +
                  "; finite differences need f64");
    }
    if (inputs[i].defined()) inputs[i].zero_grad();
  }

  // Analytic: backward of sum(out * w) is backward(out) with upstream gradient w.
  Tensor out = f(inputs);
  if (out.dtype() != DType::f64) return fail(std::string("gradcheck: output is ") + dtype_name(out.dtype()) + ", not f64");
  std::vector<double> w(static_cast<size_t>(out.numel()));
  for (size_t i = 0; i < w.size(); ++i) {
    const auto r = philox4x32(i, 0, opt.seed);
    w[i] = 2.0 * uniform01_f64(r[0], r[1]) - 1.0;
  }
  if (!out.requires_grad()) return fail("gradcheck: the output does not require grad");
  out.backward(Tensor::from_vector(w, out.shape()));

  NoGradGuard no_grad;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    if (!x.defined() || !x.requires_grad()) continue;
    const Tensor analytic = x.grad();
    for (const auto& idx : all_indices(x.shape())) {
      const double orig = x.at(idx);
      x.set(idx, orig + opt.eps);
      const double plus = weighted_sum(f(inputs), w);
      x.set(idx, orig - opt.eps);
      const double minus = weighted_sum(f(inputs), w);
      x.set(idx, orig);
      const double numeric = (plus - minus) / (2.0 * opt.eps);
      const double a = analytic.defined() ? analytic.at(idx) : 0.0;
      if (!(std::fabs(a - numeric) <= opt.atol + opt.rtol * std::fabs(numeric))) {
        std::ostringstream os;
        os << "gradcheck: input " << i << " element " << shape_str(idx) << ": analytic " << a << " vs numeric "
           << numeric << " (|diff| " << std::fabs(a - numeric) << ")";
        return fail(os.str());
      }
    }
    x.zero_grad();
  }
  return result;
}

}  // namespace nf::autograd
