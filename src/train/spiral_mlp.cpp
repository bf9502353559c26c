#include "nanoformer/train/spiral_mlp.h"

#include <cmath>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/loss.h"
#include "nanoformer/ops/matmul.h"
#include "nanoformer/ops/reduce.h"

namespace nf::train {

std::pair<Tensor, Tensor> make_spirals(int64_t points_per_class, int64_t classes, Generator& gen) {
  NF_CHECK(points_per_class >= 2 && classes >= 2, "make_spirals: need at least 2 classes of 2 points, got ", classes,
           " x ", points_per_class);
  const int64_t n = points_per_class * classes;
  const Tensor noise = randn({n}, gen, DType::f64);
  Tensor points = Tensor::empty({n, 2});
  Tensor labels = Tensor::empty({n}, DType::i64);
  float* p = points.data<float>();
  int64_t* y = labels.data<int64_t>();
  for (int64_t c = 0; c < classes; ++c) {
    for (int64_t i = 0; i < points_per_class; ++i) {
      const int64_t k = c * points_per_class + i;
      const double r = static_cast<double>(i) / static_cast<double>(points_per_class - 1);
      const double t = 4.0 * (static_cast<double>(c) + r) + 0.2 * noise.data<double>()[k];
      p[2 * k] = static_cast<float>(r * std::sin(t));
      p[2 * k + 1] = static_cast<float>(r * std::cos(t));
      y[k] = c;
    }
  }
  return {points, labels};
}

namespace {

// A weight (out, in) drawn from N(0, 2 / in) (He initialisation, suited to ReLU), requiring grad.
Tensor he_weight(int64_t out, int64_t in, Generator& gen) {
  Tensor w = normal({out, in}, 0.0, std::sqrt(2.0 / static_cast<double>(in)), gen);
  w.set_requires_grad(true);
  return w;
}

Tensor zero_bias(int64_t n) {
  Tensor b = zeros({n});
  b.set_requires_grad(true);
  return b;
}

}  // namespace

SpiralMlpResult train_spiral_mlp(const SpiralMlpConfig& cfg, const std::function<void(int64_t, double)>& on_step) {
  Generator data_gen(cfg.seed), init_gen(cfg.seed + 1);
  // Not a structured binding: lambdas may capture those only from C++20 on, which clang accepts
  // from version 16 only (Debian's clang 14 is the one that brings libFuzzer).
  const std::pair<Tensor, Tensor> data = make_spirals(cfg.points_per_class, cfg.classes, data_gen);
  const Tensor& x = data.first;
  const Tensor& y = data.second;
  std::vector<Tensor> params = {he_weight(cfg.hidden, 2, init_gen),           zero_bias(cfg.hidden),
                                he_weight(cfg.hidden, cfg.hidden, init_gen),  zero_bias(cfg.hidden),
                                he_weight(cfg.classes, cfg.hidden, init_gen), zero_bias(cfg.classes)};
  // logits = W3 relu(W2 relu(W1 x + b1) + b2) + b3
  auto forward = [&] {
    Tensor h = relu(linear(x, params[0], params[1]));
    h = relu(linear(h, params[2], params[3]));
    return linear(h, params[4], params[5]);
  };

  SpiralMlpResult result;
  for (int64_t step = 0; step < cfg.steps; ++step) {
    Tensor loss = cross_entropy(forward(), y);
    loss.backward();
    {
      NoGradGuard no_grad;  // SGD: p <- p - lr * dL/dp
      for (Tensor& p : params) {
        add_(p, p.grad(), -cfg.learning_rate);
        p.zero_grad();
      }
    }
    result.losses.push_back(loss.item());
    if (on_step) on_step(step, result.losses.back());
  }

  NoGradGuard no_grad;
  const Tensor predicted = argmax(forward(), 1);
  const std::vector<int64_t> pred = predicted.to_vector<int64_t>(), truth = y.to_vector<int64_t>();
  int64_t correct = 0;
  for (size_t i = 0; i < pred.size(); ++i) correct += pred[i] == truth[i];
  result.accuracy = static_cast<double>(correct) / static_cast<double>(pred.size());
  return result;
}

}  // namespace nf::train
