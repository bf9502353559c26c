// A whole tiny DecoderLM, forward and backward, under AutocastGuard(bf16) and (f16): the loss
// within 1e-2 relative of f32 and every parameter's gradient close to f32's, on the default bf16
// GEMM and on the fallback. Only the linear layers' products are rounded (norms, attention,
// softmax and the loss stay f32), so the differences come from u = 2^-8 (bf16) or 2^-11 (f16)
// relative rounding of the products' operands: expected ~u relative, bounded here at ~3x the
// measured worst (see the printed numbers).
#include <cmath>
#include <cstdio>

#include "nanoformer/models/decoder_lm.h"
#include "nanoformer/ops/autocast.h"
#include "nanoformer/ops/factory.h"
#include "support/testing.h"

namespace nf::models {
namespace {

struct Pass {
  double loss = 0;
  std::vector<Tensor> grads;  // in named_parameters() order
};

Pass forward_backward(DecoderLM& model, const Tensor& ids, const Tensor& targets) {
  model.zero_grad();
  Tensor loss = model.forward(ids, targets).loss;
  loss.backward();
  Pass pass{loss.item(), {}};
  for (const auto& [name, p] : model.named_parameters()) pass.grads.push_back(p.grad().clone());
  return pass;
}

double norm_of(const Tensor& a) {
  double n = 0;
  for (double v : a.to_vector<double>()) n += v * v;
  return std::sqrt(n);
}

// ||a - b|| / ||b|| in f64
double relative_error(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  double diff = 0, norm = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    diff += (x[i] - y[i]) * (x[i] - y[i]);
    norm += y[i] * y[i];
  }
  return std::sqrt(diff / norm);
}

void check_config(const std::string& name, const std::string& config) {
  SCOPED_TRACE(name);
  DecoderLM model(parse_model_config(config));
  model.train();
  Generator gen(3);
  const Tensor ids = randint(0, 64, {2, 16}, gen), targets = randint(0, 64, {2, 16}, gen);
  const Pass f32 = forward_backward(model, ids, targets);
  const auto params = model.named_parameters();
  for (DType dtype : {DType::bf16, DType::f16}) {
    for (bool fallback : {false, true}) {
      force_bf16_gemm_fallback(fallback);
      Pass mixed;
      {
        AutocastGuard guard(dtype);
        mixed = forward_backward(model, ids, targets);
      }
      force_bf16_gemm_fallback(false);
      const double loss_error = std::fabs(mixed.loss - f32.loss) / f32.loss;
      EXPECT_LT(loss_error, 1e-2) << dtype_name(dtype);
      double worst = 0;
      std::string worst_name;
      for (size_t i = 0; i < params.size(); ++i) {
        if (norm_of(f32.grads[i]) < 1e-6) {
          // a gradient that is zero in exact arithmetic (without RoPE, the key projection's bias:
          // softmax over keys ignores q.b_k, the same for every key): both are rounding noise
          EXPECT_LT(norm_of(mixed.grads[i]), 1e-6) << params[i].first;
          continue;
        }
        const double e = relative_error(mixed.grads[i], f32.grads[i]);
        if (e > worst) worst = e, worst_name = params[i].first;
      }
      // bf16: ~1e-2 measured, f16: ~1e-3
      EXPECT_LT(worst, dtype == DType::bf16 ? 4e-2 : 5e-3) << dtype_name(dtype) << " " << worst_name;
      std::printf("%s %s%s: loss %.6f vs f32 %.6f (relative %.1e); worst gradient relative error %.1e (%s)\n",
                  name.c_str(), dtype_name(dtype), fallback ? " fallback" : "", mixed.loss, f32.loss, loss_error, worst,
                  worst_name.c_str());
    }
  }
  // outside the guard the model computes exactly what it did before
  const Pass again = forward_backward(model, ids, targets);
  EXPECT_EQ(again.loss, f32.loss);
  for (size_t i = 0; i < params.size(); ++i) EXPECT_EQ(again.grads[i].to_vector<float>(), f32.grads[i].to_vector<float>());
}

TEST(DecoderLMAutocast, MiniMindStyleLossAndGradientsCloseToF32) {
  check_config("minimind-style", R"({"vocab_size": 64, "dim": 32, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2,
      "max_seq_len": 16, "position": "rope", "norm": "rmsnorm", "mlp": "swiglu", "init_std": 0.1})");
}

TEST(DecoderLMAutocast, Gpt2StyleLossAndGradientsCloseToF32) {
  check_config("gpt2-style", R"({"vocab_size": 64, "dim": 32, "n_layers": 2, "n_heads": 4, "max_seq_len": 16,
      "init_std": 0.1})");
}

}  // namespace
}  // namespace nf::models
