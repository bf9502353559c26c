// nanochat's current GPT's modules: value embeddings with their gate, residual scalars, smear and
// backout, each against a naive loop of its formula, with f64 gradient checks of every input and
// parameter. (Their parity with nanochat's own gpt.py as a whole: tests/formats/test_nanochat_current.cpp.)
#include <cmath>

#include "nanoformer/nanoformer.h"
#include "nanoformer/nn/backout.h"
#include "nanoformer/nn/residual_scalars.h"
#include "nanoformer/nn/smear.h"
#include "nanoformer/nn/value_embedding.h"
#include "support/testing.h"

namespace nf::nn {
namespace {

using testing::random_leaf;

double sigmoid_of(double z) { return 1.0 / (1.0 + std::exp(-z)); }

TEST(ValueEmbeddingGate, MixesTheEmbeddingIntoEachKVHeadThroughItsGate) {
  const int64_t B = 2, T = 3, Hkv = 2, D = 4, C = kValueGateChannels, dim = 16;
  ValueEmbeddingGate gate(C, Hkv);
  gate.weight = random_leaf({Hkv, C}, 1);
  const Tensor v = random_leaf({B, T, Hkv * D}, 2), x = random_leaf({B, T, dim}, 3), ve = random_leaf({B, T, Hkv * D}, 4);
  const auto out = gate.forward(v, x, ve).to_vector<double>();
  const auto vv = v.to_vector<double>(), xv = x.to_vector<double>(), ev = ve.to_vector<double>(),
             w = gate.weight.to_vector<double>();
  for (int64_t r = 0; r < B * T; ++r)
    for (int64_t h = 0; h < Hkv; ++h) {
      double z = 0;  // x[..., :12] . W[h]
      for (int64_t c = 0; c < C; ++c) z += xv[static_cast<size_t>(r * dim + c)] * w[static_cast<size_t>(h * C + c)];
      for (int64_t d = 0; d < D; ++d) {
        const auto i = static_cast<size_t>(r * Hkv * D + h * D + d);
        EXPECT_NEAR(out[i], vv[i] + 3.0 * sigmoid_of(z) * ev[i], 1e-12);
      }
    }
  EXPECT_GRAD_OK([&](const std::vector<Tensor>& in) {
    gate.weight = in[3];
    return gate.forward(in[0], in[1], in[2]);
  }, {v, x, ve, gate.weight});
  EXPECT_THROW_WITH(gate.forward(v, narrow(x, 2, 0, 8), ve), "ValueEmbeddingGate", "(2, 3, 8)", "12 channels");
}

TEST(ValueEmbeddings, AlternateLayersEndingWithTheLast) {
  EXPECT_TRUE(value_embedding_layer(3, 4) && value_embedding_layer(1, 4) && !value_embedding_layer(0, 4));
  EXPECT_TRUE(value_embedding_layer(4, 5) && value_embedding_layer(0, 5) && !value_embedding_layer(3, 5));
  ValueEmbeddings tables(10, 6, 4);
  const Tensor ids = Tensor::from_vector(std::vector<int64_t>{1, 9}, {1, 2});
  EXPECT_FALSE(tables.forward(ids, 0).defined());
  EXPECT_EQ(tables.forward(ids, 3).shape(), (Shape{1, 2, 6}));
  EXPECT_EQ(tables.named_parameters().size(), 2u);
}

TEST(ResidualScalars, RescaleTheStreamAndMixInX0) {
  ResidualScalars scalars(3);
  EXPECT_NEAR(scalars.resid_lambdas.to_vector<double>()[2], 1.05, 1e-6);  // nanochat's init
  EXPECT_NEAR(scalars.x0_lambdas.to_vector<double>()[0], 0.20, 1e-6);
  scalars.resid_lambdas = random_leaf({3}, 5);
  scalars.x0_lambdas = random_leaf({3}, 6);
  const Tensor x = random_leaf({2, 3, 4}, 7), x0 = random_leaf({2, 3, 4}, 8);
  const auto out = scalars.forward(x, x0, 1).to_vector<double>();
  const double a = scalars.resid_lambdas.to_vector<double>()[1], b = scalars.x0_lambdas.to_vector<double>()[1];
  for (size_t i = 0; i < out.size(); ++i)
    EXPECT_NEAR(out[i], a * x.to_vector<double>()[i] + b * x0.to_vector<double>()[i], 1e-12);
  EXPECT_GRAD_OK([&](const std::vector<Tensor>& in) {
    scalars.resid_lambdas = in[2], scalars.x0_lambdas = in[3];
    return scalars.forward(in[0], in[1], 2);
  }, {x, x0, scalars.resid_lambdas, scalars.x0_lambdas});
  EXPECT_THROW_WITH(scalars.forward(x, x0, 3), "ResidualScalars", "layer 3");
}

TEST(Smear, TakesInThePreviousTokenThroughItsGate) {
  const int64_t B = 2, T = 4, dim = 26, C = Smear::kChannels;
  Smear smear(dim);
  smear.gate_weight = random_leaf({1, C}, 9);
  smear.lambda = random_leaf({1}, 10);
  const Tensor x = random_leaf({B, T, dim}, 11), previous = random_leaf({B, 1, dim}, 12);
  const auto xv = x.to_vector<double>(), pv = previous.to_vector<double>(), w = smear.gate_weight.to_vector<double>();
  const double lambda = smear.lambda.to_vector<double>()[0];
  for (const bool continued : {false, true}) {
    const auto out = smear.forward(x, continued ? previous : Tensor()).to_vector<double>();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < T; ++t) {
        const auto row = static_cast<size_t>((b * T + t) * dim);
        double z = 0;
        for (int64_t c = 0; c < C; ++c) z += xv[row + static_cast<size_t>(c)] * w[static_cast<size_t>(c)];
        const bool has_previous = t > 0 || continued;
        for (int64_t d = 0; d < dim; ++d) {
          const double before = t > 0 ? xv[row - static_cast<size_t>(dim) + static_cast<size_t>(d)]
                                      : pv[static_cast<size_t>(b * dim + d)];
          const double expected = xv[row + static_cast<size_t>(d)] + (has_previous ? lambda * sigmoid_of(z) * before : 0.0);
          EXPECT_NEAR(out[row + static_cast<size_t>(d)], expected, 1e-12) << b << " " << t << " " << d;
        }
      }
  }
  EXPECT_GRAD_OK([&](const std::vector<Tensor>& in) {
    smear.gate_weight = in[2], smear.lambda = in[3];
    return smear.forward(in[0], in[1]);
  }, {x, previous, smear.gate_weight, smear.lambda});
  EXPECT_GRAD_OK([&](const std::vector<Tensor>& in) {
    smear.gate_weight = in[1], smear.lambda = in[2];
    return smear.forward(in[0]);
  }, {x, smear.gate_weight, smear.lambda});
  EXPECT_THROW_WITH(Smear(16), "Smear", "dim 16", "24");
}

TEST(Backout, SubtractsAMultipleOfTheMiddleLayer) {
  Backout backout;
  EXPECT_NEAR(backout.lambda.to_vector<double>()[0], 0.2, 1e-7);  // nanochat's init
  backout.lambda = random_leaf({1}, 13);
  const Tensor x = random_leaf({2, 3, 4}, 14), mid = random_leaf({2, 3, 4}, 15);
  const auto out = backout.forward(x, mid).to_vector<double>();
  for (size_t i = 0; i < out.size(); ++i)
    EXPECT_NEAR(out[i], x.to_vector<double>()[i] - backout.lambda.to_vector<double>()[0] * mid.to_vector<double>()[i], 1e-12);
  EXPECT_GRAD_OK([&](const std::vector<Tensor>& in) {
    backout.lambda = in[2];
    return backout.forward(in[0], in[1]);
  }, {x, mid, backout.lambda});
}

}  // namespace
}  // namespace nf::nn
