#include "support/testing.h"

#include <cmath>
#include <fstream>
#include <sstream>

namespace nf::testing {

::testing::AssertionResult tensors_close(const Tensor& actual, const Tensor& expected, double atol, double rtol) {
  if (!actual.defined() || !expected.defined()) return ::testing::AssertionFailure() << "undefined tensor";
  if (actual.shape() != expected.shape()) {
    return ::testing::AssertionFailure() << "shapes differ: " << shape_str(actual.shape()) << " vs "
                                         << shape_str(expected.shape());
  }
  const std::vector<double> a = actual.to_vector<double>(), e = expected.to_vector<double>();
  size_t bad = 0, first = 0;
  double worst = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    const bool both_nan = std::isnan(a[i]) && std::isnan(e[i]);
    const double diff = std::fabs(a[i] - e[i]);
    if (both_nan || (a[i] == e[i])) continue;
    if (!(diff <= atol + rtol * std::fabs(e[i]))) {
      if (bad++ == 0) first = i;
      if (!(diff <= worst)) worst = diff;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << a.size() << " elements differ beyond atol " << atol
                                       << " rtol " << rtol << "; first at flat index " << first << ": " << a[first]
                                       << " vs " << e[first] << "; worst |diff| " << worst;
}

::testing::AssertionResult throws_with(const std::function<void()>& fn, const std::vector<std::string>& parts) {
  try {
    fn();
  } catch (const nf::Error& err) {
    const std::string msg = err.what();
    for (const auto& p : parts) {
      if (msg.find(p) == std::string::npos) {
        return ::testing::AssertionFailure() << "message \"" << msg << "\" lacks \"" << p << "\"";
      }
    }
    return ::testing::AssertionSuccess();
  } catch (const std::exception& other) {
    return ::testing::AssertionFailure() << "threw a non-nf::Error: " << other.what();
  }
  return ::testing::AssertionFailure() << "did not throw";
}

Tensor random_leaf(const Shape& shape, uint64_t seed, double low, double high) {
  Generator gen(seed);
  Tensor t = uniform(shape, low, high, gen, DType::f64);
  t.set_requires_grad(true);
  return t;
}

::testing::AssertionResult grad_ok(const autograd::TensorFn& f, const std::vector<Tensor>& inputs,
                                   const autograd::GradcheckOptions& options) {
  const autograd::GradcheckResult r = autograd::gradcheck(f, inputs, options);
  if (r.ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << r.message;
}

std::vector<std::string> decoder_lm_presets() {
  std::vector<std::string> names;
  for (const std::string& name : models::preset_names()) {
    std::ifstream in(models::preset_path(name));
    std::ostringstream text;
    text << in.rdbuf();
    if (models::config_architecture(text.str(), name) == models::DecoderLMConfig::kArchitecture) names.push_back(name);
  }
  return names;
}

}  // namespace nf::testing
